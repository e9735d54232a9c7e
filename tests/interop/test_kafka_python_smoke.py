"""A first real client: kafka-python joins a group on groupcoord serve, commits, and a
second consumer reads the committed offset back."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from kafka_python_consumer import subscribed_consumer
from serve_process import ServerProcess

TOPIC = "smoke"
GROUP = "smoke-group"


def wait_for_assignment(
    consumer: KafkaConsumer, expected: int, timeout_s: float
) -> set[TopicPartition]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
        assigned = consumer.assignment()
        if len(assigned) == expected:
            return set(assigned)
    return set(consumer.assignment())


def test_one_consumer_gets_every_partition_and_commits(
    serve_factory: Callable[..., ServerProcess],
) -> None:
    server = serve_factory("--topic", f"{TOPIC}:3", "--group-initial-rebalance-delay-ms", "0")
    consumer = subscribed_consumer(
        [TOPIC],
        bootstrap_servers=server.bootstrap,
        group_id=GROUP,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=10_000,
        heartbeat_interval_ms=1_000,
        request_timeout_ms=15_000,
    )
    try:
        assigned = wait_for_assignment(consumer, 3, timeout_s=30)
        assert assigned == {TopicPartition(TOPIC, p) for p in range(3)}
        consumer.commit({TopicPartition(TOPIC, 1): OffsetAndMetadata(42, "smoke", -1)})
    finally:
        consumer.close()

    reader = KafkaConsumer(
        bootstrap_servers=server.bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    try:
        assert reader.committed(TopicPartition(TOPIC, 1)) == 42
        assert reader.committed(TopicPartition(TOPIC, 0)) is None
    finally:
        reader.close()
