"""kafka-python 3.0.12 consumers and producers against ``groupcoord serve``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import scenarios
from helpers import FAST_GROUP_FLAGS, Server
from kafka import KafkaProducer

CLIENT = "kafka-python"


def produce(bootstrap: str, topic: str, records: Sequence[tuple[str, str]]) -> None:
    # idempotent (kafka-python 3's default): exercises InitProducerId and sequence numbers
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    try:
        futures = [producer.send(topic, key=k.encode(), value=v.encode()) for k, v in records]
        producer.flush(timeout=60)
        for future in futures:
            future.get(timeout=60)
    finally:
        producer.close(timeout=10)


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS))


@pytest.mark.parametrize(
    ("assignor", "cooperative", "sticky_on_leave"),
    [
        ("range", False, True),
        # kafka-python's own cooperative-sticky may need a second round on a leave
        # (see scenarios.group_lifecycle); groupcoord's, through the adapter, never does
        ("cooperative-sticky", True, False),
        ("gc-cooperative-sticky", True, True),
    ],
)
def test_group_lifecycle(
    server: Server, tmp_path: Path, assignor: str, cooperative: bool, sticky_on_leave: bool
) -> None:
    scenarios.group_lifecycle(
        server.bootstrap, CLIENT, assignor, tmp_path,
        cooperative=cooperative, sticky_on_leave=sticky_on_leave,
    )  # fmt: skip


def test_static_member_restart_causes_no_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.static_member_restart(server.bootstrap, CLIENT, "range", tmp_path)


def test_10k_records_across_a_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.records_across_rebalance(server.bootstrap, CLIENT, "range", produce, tmp_path)


def test_committed_offsets_survive_a_server_restart(
    serve_factory: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve_factory(
        *scenarios.topic_flags(*FAST_GROUP_FLAGS, "--data-dir", str(tmp_path / "data"))
    )
    scenarios.offsets_survive_restart(server, CLIENT, "range", produce, tmp_path)


@pytest.mark.parametrize("assignor", ["gc-range", "gc-cooperative-sticky"])
def test_groupcoord_assignor_through_the_adapter(
    server: Server, tmp_path: Path, assignor: str
) -> None:
    scenarios.adapter_in_live_group(server.bootstrap, CLIENT, assignor, tmp_path)
