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
