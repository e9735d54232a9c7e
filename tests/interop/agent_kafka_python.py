"""Consumer agent running kafka-python's KafkaConsumer (see agent_common for the protocol).

``AGENT_DEBUG=1`` puts kafka-python's DEBUG log (every request and response) on stderr.

Usage: ``python agent_kafka_python.py '<AgentSettings as JSON>'``.
"""

from __future__ import annotations

import logging
import os
import queue
from typing import Any

from agent_common import AgentSettings, Reporter, decode_key, start_command_reader
from kafka import KafkaConsumer
from kafka.consumer.subscription_state import ConsumerRebalanceListener
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

from groupcoord import CooperativeStickyAssignor as GcCooperativeSticky
from groupcoord import RangeAssignor, RoundRobinAssignor, StickyAssignor
from groupcoord.assignors import kafka_python as adapter

# "gc-*": groupcoord's assignors through the kafka-python adapter
ASSIGNORS: dict[str, Any] = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
    "gc-range": adapter.adapt(RangeAssignor()),
    "gc-roundrobin": adapter.adapt(RoundRobinAssignor()),
    "gc-sticky": adapter.adapt(StickyAssignor()),
    "gc-cooperative-sticky": adapter.adapt(GcCooperativeSticky()),
}


class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, reporter: Reporter, consumer: KafkaConsumer, eager: bool) -> None:
        self.reporter = reporter
        self.consumer = consumer
        self.eager = eager

    def on_partitions_revoked(self, revoked: Any) -> None:
        self.reporter.revoked((tp.topic, tp.partition) for tp in revoked)

    def on_partitions_assigned(self, assigned: Any) -> None:
        gen = self.consumer.group_metadata().generation_id
        self.reporter.assigned(
            ((tp.topic, tp.partition) for tp in assigned), eager=self.eager, gen=gen
        )

    def on_partitions_lost(self, lost: Any) -> None:
        self.reporter.revoked(((tp.topic, tp.partition) for tp in lost), kind="lost")


def main() -> None:
    settings = AgentSettings.from_argv()
    # the client's own account of joins, fetches and errors, for a failing test to show
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if os.environ.get("AGENT_DEBUG"):  # kafka-python's DEBUG log: every request and answer
        logging.getLogger("kafka").setLevel(logging.DEBUG)
    reporter = Reporter()
    inbox = start_command_reader()
    consumer = KafkaConsumer(
        bootstrap_servers=settings.bootstrap,
        group_id=settings.group,
        group_instance_id=settings.instance_id,
        partition_assignment_strategy=[ASSIGNORS[settings.assignor]],
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        max_poll_interval_ms=settings.max_poll_interval_ms,
        enable_auto_commit=settings.auto_commit,
        auto_commit_interval_ms=500,
        auto_offset_reset="earliest",
        client_id=f"agent-{settings.instance_id or 'dynamic'}",
    )
    eager = "cooperative" not in settings.assignor
    # Know the topics before joining. Otherwise, with no initial rebalance delay, the first
    # member leads a group before its first metadata arrives, assigns nothing, and rejoins
    # as soon as metadata comes; kafka-python 3.0.12 loses the assignment of that rejoin
    # when a poll gives up waiting for it (need_rejoin turns False inside the join task,
    # so the finished task is never applied and heartbeats stay off): the mechanism and
    # its reproduction, against groupcoord serve and Apache Kafka alike, are in
    # tests/kafka_python_consumer.py and tools/kafka_python_lost_assignment.py.
    for topic in settings.topics:
        consumer.partitions_for_topic(topic)
    consumer.subscribe(list(settings.topics), listener=Listener(reporter, consumer, eager))
    reporter.emit("started")
    generation = -1
    while True:
        # a rebalance that changes nothing for this member calls no listener: report
        # every generation it sees, so tests can tell "no rebalance" from "no change"
        if consumer.group_metadata().generation_id != generation:
            generation = consumer.group_metadata().generation_id
            reporter.emit("generation", gen=generation)
        try:
            command = inbox.get_nowait()
        except queue.Empty:
            command = ""
        if command == "close":
            consumer.close(autocommit=settings.auto_commit)
            reporter.emit("closed")
            return
        if command == "commit":
            consumer.commit()
            reporter.emit("committed")
        batches = consumer.poll(timeout_ms=100)
        recs = [
            (r.topic, r.partition, r.offset, decode_key(r.key))
            for records in batches.values()
            for r in records
        ]
        if settings.report_records:
            reporter.records(recs)


if __name__ == "__main__":
    main()
