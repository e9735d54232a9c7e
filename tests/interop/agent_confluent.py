"""Consumer agent running confluent-kafka's (librdkafka's) Consumer (see agent_common).

``range``, ``roundrobin`` (eager) and ``cooperative-sticky`` are librdkafka's own
assignors; with ``group_protocol="consumer"`` (KIP-848) ``assignor`` names the
coordinator's (``uniform``, ``range``). Set ``AGENT_DEBUG=protocol,cgrp,broker`` to get
librdkafka's debug log on the agent's stderr.
Usage: ``python agent_confluent.py '<AgentSettings as JSON>'``.
"""

from __future__ import annotations

import os
import queue
from typing import Any

from agent_common import AgentSettings, Reporter, decode_key, start_command_reader
from confluent_kafka import Consumer, KafkaException


def main() -> None:
    settings = AgentSettings.from_argv()
    reporter = Reporter()
    inbox = start_command_reader()
    kip848 = settings.group_protocol == "consumer"
    config: dict[str, Any] = {
        "bootstrap.servers": settings.bootstrap,
        "group.id": settings.group,
        "max.poll.interval.ms": settings.max_poll_interval_ms,
        "enable.auto.commit": settings.auto_commit,
        "auto.commit.interval.ms": 500,
        "auto.offset.reset": "earliest",
        "fetch.wait.max.ms": 100,
    }
    if kip848:
        # librdkafka refuses the classic group settings with group.protocol=consumer
        config["group.protocol"] = "consumer"
        config["group.remote.assignor"] = settings.assignor
    else:
        config["partition.assignment.strategy"] = settings.assignor
        config["session.timeout.ms"] = settings.session_timeout_ms
        config["heartbeat.interval.ms"] = settings.heartbeat_interval_ms
    if settings.instance_id is not None:
        config["group.instance.id"] = settings.instance_id
    if os.environ.get("AGENT_DEBUG"):
        config["debug"] = os.environ["AGENT_DEBUG"]
    consumer = Consumer(config)
    # KIP-848 assignments are incremental, as cooperative ones
    eager = not kip848 and "cooperative" not in settings.assignor

    def on_assign(_consumer: Consumer, partitions: list[Any]) -> None:
        reporter.assigned(((tp.topic, tp.partition) for tp in partitions), eager=eager, gen=None)

    def on_revoke(_consumer: Consumer, partitions: list[Any]) -> None:
        reporter.revoked((tp.topic, tp.partition) for tp in partitions)

    def on_lost(_consumer: Consumer, partitions: list[Any]) -> None:
        reporter.revoked(((tp.topic, tp.partition) for tp in partitions), kind="lost")

    consumer.subscribe(
        list(settings.topics), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost
    )
    reporter.emit("started")
    while True:
        try:
            command = inbox.get_nowait()
        except queue.Empty:
            command = ""
        if command == "close":
            consumer.close()
            reporter.emit("closed")
            return
        if command == "commit":
            try:
                results = consumer.commit(asynchronous=False) or []
                failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in results if tp.error]
                if failed:  # a per-partition refusal does not raise
                    reporter.emit("error", msg=f"commit refused for {failed}")
                else:
                    reporter.emit("committed")
            except KafkaException as exc:  # e.g. _NO_OFFSET: nothing consumed yet
                reporter.emit("error", msg=str(exc))
        messages = consumer.consume(num_messages=1000, timeout=0.1)
        recs = []
        for m in messages:
            if m.error() is not None:
                reporter.emit("error", msg=str(m.error()))
                continue
            recs.append((m.topic(), m.partition(), m.offset(), decode_key(m.key())))
        if settings.report_records:
            reporter.records(recs)


if __name__ == "__main__":
    main()
