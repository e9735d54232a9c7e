"""Fixtures shared by every test directory: ``serve_factory``, a real ``groupcoord serve``
subprocess for tests that drive it with real clients (interop, member runner, fuzz, server).

``serve_factory(*extra_args)`` starts ``python -m groupcoord serve --port 0 ...`` (plus
``--memory`` unless the arguments name ``--data-dir`` or ``--memory``), waits for its
``groupcoord listening on HOST:PORT`` line and returns a
:class:`~serve_process.ServerProcess` (``.host .port .bootstrap .stop() .kill()
.restart()``). Every server a test started is stopped when the test ends.

``kafka_broker_factory(version="4.4.0", properties={"group.max.size": "3"})``: a real
Apache Kafka broker (``tools/kafka_broker.py``: single-node KRaft on 127.0.0.1, jars from
Maven Central cached in ``~/.m2``), started once per test session for each (version,
properties) and stopped at its end, warm (its group coordinator answers).
``kafka_broker`` is the 4.4.0 one with the defaults. Tests that use them are marked
``kafka``; every such test is skipped, with the reason, when Java or Maven is missing
(see ``kafka_oracle``).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from kafka_oracle import KAFKA_LATEST, kafka_broker_module, missing_java_or_maven
from serve_process import ServerProcess, serve_args

__all__ = ["ServerProcess", "kafka_broker", "kafka_broker_factory", "serve_factory"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # one place decides whether Kafka's own software can run here, for every `kafka` test
    reason = missing_java_or_maven()
    if reason is None:
        return
    for item in items:
        if item.get_closest_marker("kafka") is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture
def serve_factory() -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(*extra_args: str, log_file: Path | None = None) -> ServerProcess:
        server = ServerProcess(serve_args(extra_args), log_file)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.running:
            # a stop that times out has already killed the process
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.stop()


@pytest.fixture(scope="session")
def kafka_broker_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Any]]:
    reason = missing_java_or_maven()
    if reason is not None:
        pytest.skip(reason)
    module = kafka_broker_module()
    brokers: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}

    def get(version: str = KAFKA_LATEST, properties: Mapping[str, str] | None = None) -> Any:
        props = dict(properties or {})
        key = (version, tuple(sorted(props.items())))
        broker = brokers.get(key)
        if broker is None:
            directory = tmp_path_factory.mktemp(f"kafka-{version}")
            broker = module.Broker(version, directory, properties=props)
            brokers[key] = broker
            broker.start()
            broker.wait_for_group_coordinator()
        return broker

    yield get
    for broker in brokers.values():
        broker.stop()


@pytest.fixture(scope="session")
def kafka_broker(kafka_broker_factory: Callable[..., Any]) -> Any:
    """Apache Kafka 4.4.0 with ``tools/kafka_broker.py``'s defaults (``.bootstrap``)."""
    return kafka_broker_factory(KAFKA_LATEST)
