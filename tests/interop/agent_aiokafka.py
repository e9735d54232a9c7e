"""Consumer agent running aiokafka's AIOKafkaConsumer (see agent_common for the protocol).

aiokafka speaks only the eager protocol (range, round-robin, sticky, and groupcoord's
assignors through the aiokafka adapter). Usage:
``python agent_aiokafka.py '<AgentSettings as JSON>'``.
"""

from __future__ import annotations

import asyncio
import logging
import queue
from typing import Any

from agent_common import AgentSettings, Reporter, decode_key, start_command_reader
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.coordinator.assignors.range import RangePartitionAssignor
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from groupcoord import RangeAssignor, RoundRobinAssignor, StickyAssignor
from groupcoord.assignors import aiokafka as adapter

# "gc-*": groupcoord's assignors through the aiokafka adapter
ASSIGNORS: dict[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "gc-range": adapter.adapt(RangeAssignor()),
    "gc-roundrobin": adapter.adapt(RoundRobinAssignor()),
    "gc-sticky": adapter.adapt(StickyAssignor()),
}


class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.consumer: AIOKafkaConsumer | None = None

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.reporter.revoked((tp.topic, tp.partition) for tp in revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        assert self.consumer is not None
        # aiokafka keeps the generation only on its coordinator object
        gen = self.consumer._coordinator.generation
        self.reporter.assigned(((tp.topic, tp.partition) for tp in assigned), eager=True, gen=gen)


async def run(settings: AgentSettings) -> None:
    # the client's own account of joins, fetches and errors, for a failing test to show
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    reporter = Reporter()
    inbox = start_command_reader()
    listener = Listener(reporter)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap,
        group_id=settings.group,
        group_instance_id=settings.instance_id,
        partition_assignment_strategy=(ASSIGNORS[settings.assignor],),
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        max_poll_interval_ms=settings.max_poll_interval_ms,
        enable_auto_commit=settings.auto_commit,
        auto_commit_interval_ms=500,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=100,
    )
    listener.consumer = consumer
    consumer.subscribe(list(settings.topics), listener=listener)
    await consumer.start()
    reporter.emit("started")
    generation = -1
    while True:
        # see agent_kafka_python: every generation seen is reported
        if consumer._coordinator.generation != generation:
            generation = consumer._coordinator.generation
            reporter.emit("generation", gen=generation)
        try:
            command = inbox.get_nowait()
        except queue.Empty:
            command = ""
        if command == "close":
            await consumer.stop()
            reporter.emit("closed")
            return
        if command == "commit":
            await consumer.commit()
            reporter.emit("committed")
        batches = await consumer.getmany(timeout_ms=100)
        recs = [
            (r.topic, r.partition, r.offset, decode_key(r.key))
            for records in batches.values()
            for r in records
        ]
        if settings.report_records:
            reporter.records(recs)


if __name__ == "__main__":
    asyncio.run(run(AgentSettings.from_argv()))
