"""confluent-kafka 2.16 (librdkafka) consumers and producers against ``groupcoord serve``.

librdkafka does not tell its application the group generation, so the scenarios judge
"no rebalance" by the absence of rebalance callbacks alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import scenarios
from confluent_kafka import KafkaError, Message, Producer
from helpers import FAST_GROUP_FLAGS, Server

CLIENT = "confluent"


def produce(bootstrap: str, topic: str, records: Sequence[tuple[str, str]]) -> None:
    # librdkafka's idempotent producer: InitProducerId, sequence numbers, acks=all
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "linger.ms": 5})  # fmt: skip
    failures: list[KafkaError] = []

    def delivered(err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            failures.append(err)

    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0, "records still unacknowledged after 60 s"
    assert failures == []


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS))


@pytest.mark.parametrize(
    ("assignor", "cooperative"), [("range", False), ("cooperative-sticky", True)]
)
def test_group_lifecycle(server: Server, tmp_path: Path, assignor: str, cooperative: bool) -> None:
    scenarios.group_lifecycle(server.bootstrap, CLIENT, assignor, tmp_path,
                              cooperative=cooperative)  # fmt: skip


def test_static_member_restart_causes_no_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.static_member_restart(server.bootstrap, CLIENT, "range", tmp_path)


def test_10k_records_across_a_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.records_across_rebalance(
        server.bootstrap, CLIENT, "cooperative-sticky", produce, tmp_path
    )


def test_committed_offsets_survive_a_server_restart(
    serve_factory: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve_factory(
        *scenarios.topic_flags(*FAST_GROUP_FLAGS, "--data-dir", str(tmp_path / "data"))
    )
    scenarios.offsets_survive_restart(server, CLIENT, "range", produce, tmp_path)
