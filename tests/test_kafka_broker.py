"""The ``kafka_broker`` fixture: a real Apache Kafka from tools/kafka_broker.py, warm."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest

from groupcoord.protocol.client import ClientCodec
from kafka_oracle import KAFKA_3, KAFKA_LATEST

pytestmark = pytest.mark.kafka


def call(port: int, request: Any) -> Any:
    codec = ClientCodec(client_id="fixture-test")
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(codec.encode(request)[1])
        while True:
            data = sock.recv(65536)
            assert data, "the broker closed the connection"
            received = codec.feed(data)
            if received:
                return received[0].response


@pytest.mark.parametrize("version", [KAFKA_LATEST, KAFKA_3])
def test_broker_is_up_alone_on_loopback_and_its_coordinator_answers(
    kafka_broker_factory: Callable[..., Any], version: str
) -> None:
    broker = kafka_broker_factory(version)
    metadata = call(
        broker.port,
        MetadataRequest(
            topics=None, include_topic_authorized_operations=False, allow_auto_topic_creation=False
        ),
    )
    assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", broker.port)]
    found = call(broker.port, FindCoordinatorRequest(key="g", key_type=0))
    assert found.error_code == 0
    assert (found.host, found.port) == ("127.0.0.1", broker.port)
    assert f"Kafka version: {version}" in broker.server_log.read_text(errors="replace")


def test_cluster_ids_never_start_with_a_dash_so_storage_format_reads_them_as_values() -> None:
    """One random id in 64 starts with "-"; ``kafka-storage format -t -xyz`` took it for a
    flag and a CI run failed on it. Such draws are thrown away, as Kafka's own do."""
    import uuid

    from kafka_oracle import kafka_broker_module

    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x00" * 15 + b"\x01")])
    made = kafka_broker_module().cluster_id(lambda: next(draws))
    assert made == "AAAAAAAAAAAAAAAAAAAAAQ"
    for _ in range(2000):
        made = kafka_broker_module().cluster_id()
        assert not made.startswith("-") and len(made) == 22
