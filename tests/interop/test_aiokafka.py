"""aiokafka 0.14 consumers and producers against ``groupcoord serve``.

aiokafka implements only the eager rebalance protocol, so there is no cooperative run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import scenarios
from aiokafka import AIOKafkaProducer
from helpers import FAST_GROUP_FLAGS, Server

CLIENT = "aiokafka"


def produce(bootstrap: str, topic: str, records: Sequence[tuple[str, str]]) -> None:
    async def send_all() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all",
                                    enable_idempotence=True)  # fmt: skip
        await producer.start()
        try:
            sent = [
                await producer.send(topic, key=k.encode(), value=v.encode()) for k, v in records
            ]
            await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(send_all())


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS))


@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_group_lifecycle(server: Server, tmp_path: Path, assignor: str) -> None:
    scenarios.group_lifecycle(server.bootstrap, CLIENT, assignor, tmp_path, cooperative=False)


def test_static_member_restart_causes_no_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.static_member_restart(server.bootstrap, CLIENT, "range", tmp_path)


def test_group_lifecycle_over_the_native_shell(
    serve_factory: Callable[..., Server], tmp_path: Path
) -> None:
    # --native-io answers a static or dynamic member's heartbeats on its own thread
    server = serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS, "--native-io"))
    scenarios.group_lifecycle(server.bootstrap, CLIENT, "range", tmp_path, cooperative=False)
    static = tmp_path / "static"
    static.mkdir()
    scenarios.static_member_restart(server.bootstrap, CLIENT, "range", static)


def test_10k_records_across_a_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.records_across_rebalance(server.bootstrap, CLIENT, "range", produce, tmp_path)


def test_committed_offsets_survive_a_server_restart(
    serve_factory: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve_factory(
        *scenarios.topic_flags(*FAST_GROUP_FLAGS, "--data-dir", str(tmp_path / "data"))
    )
    scenarios.offsets_survive_restart(server, CLIENT, "range", produce, tmp_path)


@pytest.mark.parametrize("assignor", ["gc-range", "gc-sticky"])
def test_groupcoord_assignor_through_the_adapter(
    server: Server, tmp_path: Path, assignor: str
) -> None:
    scenarios.adapter_in_live_group(server.bootstrap, CLIENT, assignor, tmp_path)
