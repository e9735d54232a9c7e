"""Real clients over TLS against ``groupcoord serve``: aiokafka, kcat, confluent-kafka and
kafka-python on SASL_SSL with SCRAM-SHA-512 and PLAIN, aiokafka on SSL. Each joins a group
and commits with the right credentials; a wrong password (or a server certificate the
client does not trust) fails with what the client shows against Kafka. Certificates:
:mod:`tls_certs`."""

from __future__ import annotations

import asyncio
import logging
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaConnectionError
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as CkTopicPartition

from serve_process import ServerProcess
from tls_certs import make_certs, tls_flags

TOPIC = "orders"
#: (mechanism, user, password): users made with that mechanism
LOGINS = [("SCRAM-SHA-512", "alice", "alice-secret"), ("PLAIN", "bob", "bob-secret")]
KCAT_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"), clients=())


@pytest.fixture(scope="module")
def users_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("users")
    for mechanism, user, password in LOGINS:
        done = subprocess.run(
            [sys.executable, "-m", "groupcoord", "users", "add", user, "--password", password,
             "--mechanism", mechanism, "--data-dir", str(data)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return data


@pytest.fixture
def sasl_ssl_server(
    serve_factory: Callable[..., ServerProcess], certs: Path, users_dir: Path, tmp_path: Path
) -> ServerProcess:
    data = shutil.copytree(users_dir, tmp_path / "data")
    return serve_factory(
        "--data-dir", str(data), "--listener", "SASL_SSL://127.0.0.1:0", *tls_flags(certs),
        "--sasl-mechanisms", "SCRAM-SHA-512,PLAIN", "--topic", f"{TOPIC}:2",
        "--group-initial-rebalance-delay-ms", "0",
    )  # fmt: skip


# ---------------------------------------------------------------------------- aiokafka


async def aiokafka_round_trip(settings: dict[str, Any], group: str) -> dict[int, int]:
    """Produce 3 records, join ``group``, read them, commit; the committed offsets."""
    producer = AIOKafkaProducer(**settings)
    await producer.start()
    try:
        for i in range(3):
            await producer.send_and_wait(TOPIC, b"v%d" % i, key=b"k%d" % i)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        TOPIC, group_id=group, enable_auto_commit=False, auto_offset_reset="earliest",
        **settings,
    )  # fmt: skip
    await consumer.start()
    try:
        seen = 0
        deadline = time.monotonic() + 30
        while seen < 3:
            assert time.monotonic() < deadline, f"read {seen} of 3 records"
            batches = await consumer.getmany(timeout_ms=1000)
            seen += sum(len(records) for records in batches.values())
        assert len(consumer.assignment()) == 2
        await consumer.commit()
        return {p: await consumer.committed(TopicPartition(TOPIC, p)) or 0 for p in range(2)}
    finally:
        await consumer.stop()


def aiokafka_sasl(
    server: ServerProcess, certs: Path, mechanism: str, user: str, password: str
) -> dict[str, Any]:
    return {
        "bootstrap_servers": server.bootstrap,
        "security_protocol": "SASL_SSL",
        "ssl_context": create_ssl_context(cafile=str(certs / "ca.pem")),
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "request_timeout_ms": 10_000,
    }


@pytest.mark.parametrize(("mechanism", "user", "password"), LOGINS)
def test_aiokafka_over_sasl_ssl(
    sasl_ssl_server: ServerProcess,
    certs: Path,
    caplog: pytest.LogCaptureFixture,
    mechanism: str,
    user: str,
    password: str,
) -> None:
    settings = aiokafka_sasl(sasl_ssl_server, certs, mechanism, user, password)
    committed = asyncio.run(aiokafka_round_trip(settings, "aio-group"))
    assert sum(committed.values()) == 3
    # a wrong password: aiokafka logs Kafka's error and fails to bootstrap
    wrong = aiokafka_sasl(sasl_ssl_server, certs, mechanism, user, "not-" + password)

    async def start() -> None:
        consumer = AIOKafkaConsumer(TOPIC, group_id="aio-group", **wrong)
        try:
            await consumer.start()
        finally:
            await consumer.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"), pytest.raises(KafkaConnectionError):
        asyncio.run(start())
    assert (
        "SaslAuthenticationFailed: [SASL_AUTHENTICATION_FAILED] Authentication failed during"
        f" authentication due to invalid credentials with SASL mechanism {mechanism}"
    ) in caplog.text


def test_aiokafka_over_ssl(
    serve_factory: Callable[..., ServerProcess], certs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = serve_factory(
        "--listener", "SSL://127.0.0.1:0", *tls_flags(certs), "--topic", f"{TOPIC}:2",
        "--group-initial-rebalance-delay-ms", "0",
    )  # fmt: skip
    settings = {
        "bootstrap_servers": server.bootstrap,
        "security_protocol": "SSL",
        "ssl_context": create_ssl_context(cafile=str(certs / "ca.pem")),
        "request_timeout_ms": 10_000,
    }
    committed = asyncio.run(aiokafka_round_trip(settings, "aio-ssl"))
    assert sum(committed.values()) == 3
    # a client that does not trust the server's CA refuses the handshake
    untrusting = {**settings, "ssl_context": ssl.create_default_context()}

    async def start() -> None:
        consumer = AIOKafkaConsumer(TOPIC, group_id="aio-ssl", **untrusting)
        try:
            await consumer.start()
        finally:
            await consumer.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"), pytest.raises(KafkaConnectionError):
        asyncio.run(start())
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text


# ------------------------------------------------------------------------------- kcat


def kcat_flags(
    server: ServerProcess, certs: Path, mechanism: str, user: str, password: str
) -> list[str]:
    return [
        "-b", server.bootstrap, "-X", "security.protocol=SASL_SSL",
        "-X", f"ssl.ca.location={certs / 'ca.pem'}", "-X", f"sasl.mechanisms={mechanism}",
        "-X", f"sasl.username={user}", "-X", f"sasl.password={password}",
    ]  # fmt: skip


def kcat(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=KCAT_TIMEOUT_S
    )


def confluent_committed(settings: dict[str, Any], group: str) -> dict[int, int]:
    consumer = Consumer({**settings, "group.id": group})
    try:
        asked = [CkTopicPartition(TOPIC, p) for p in range(2)]
        return {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=20)}
    finally:
        consumer.close()


def confluent_sasl(
    server: ServerProcess, certs: Path, mechanism: str, user: str, password: str
) -> dict[str, Any]:
    return {
        "bootstrap.servers": server.bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(certs / "ca.pem"),
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize(("mechanism", "user", "password"), LOGINS)
def test_kcat_over_sasl_ssl(
    sasl_ssl_server: ServerProcess, certs: Path, mechanism: str, user: str, password: str
) -> None:
    flags = kcat_flags(sasl_ssl_server, certs, mechanism, user, password)
    listing = kcat(*flags, "-L", "-t", TOPIC)
    assert listing.returncode == 0, listing.stderr
    assert f'topic "{TOPIC}" with 2 partitions' in listing.stdout
    produced = kcat(*flags, "-P", "-t", TOPIC, "-K", ":", stdin="a:1\nb:2\nc:3\n")
    assert produced.returncode == 0, produced.stderr
    # a balanced consumer (-G) joins the group, reads to the end (-e), commits and leaves
    consumed = kcat(
        *flags, "-G", "kcat-group", "-X", "auto.offset.reset=earliest", "-e", "-f", "%k\\n",
        TOPIC,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.split()) == ["a", "b", "c"]
    assert "Group kcat-group rebalanced" in consumed.stderr
    settings = confluent_sasl(sasl_ssl_server, certs, mechanism, user, password)
    committed = confluent_committed(settings, "kcat-group")
    # a partition that got no record has no commit (librdkafka's -1001, OFFSET_INVALID)
    assert sum(o for o in committed.values() if o >= 0) == 3, committed
    # a wrong password: kcat prints librdkafka's authentication error and exits 1
    refused = kcat(*kcat_flags(sasl_ssl_server, certs, mechanism, user, "wrong"), "-L")
    assert refused.returncode == 1
    assert (
        "[SASL_AUTHENTICATION_FAILED] Authentication failed during authentication due to"
        f" invalid credentials with SASL mechanism {mechanism}"
    ) in refused.stderr


# -------------------------------------------------------------- confluent-kafka, kafka-python


@pytest.mark.parametrize(("mechanism", "user", "password"), LOGINS)
def test_confluent_kafka_group_over_sasl_ssl(
    sasl_ssl_server: ServerProcess, certs: Path, mechanism: str, user: str, password: str
) -> None:
    settings = confluent_sasl(sasl_ssl_server, certs, mechanism, user, password)
    consumer = Consumer({**settings, "group.id": "ck-group", "enable.auto.commit": False})
    try:
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.2)
        consumer.commit(
            offsets=[CkTopicPartition(TOPIC, p, 7) for p in range(2)], asynchronous=False
        )
    finally:
        consumer.close()
    assert confluent_committed(settings, "ck-group") == {0: 7, 1: 7}
    errors: list[KafkaError] = []
    wrong = {**settings, "sasl.password": "wrong", "group.id": "ck-group"}
    refused = Consumer({**wrong, "error_cb": errors.append})
    try:
        refused.subscribe([TOPIC])
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            refused.poll(0.2)
    finally:
        refused.close()
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert f"invalid credentials with SASL mechanism {mechanism}" in errors[0].str()


def test_kafka_python_group_over_sasl_ssl(sasl_ssl_server: ServerProcess, certs: Path) -> None:
    from kafka import TopicPartition as KpTopicPartition
    from kafka.structs import OffsetAndMetadata

    from kafka_python_consumer import subscribed_consumer

    consumer = subscribed_consumer(
        [TOPIC], bootstrap_servers=sasl_ssl_server.bootstrap, group_id="kp-group",
        security_protocol="SASL_SSL", ssl_cafile=str(certs / "ca.pem"),
        sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
        sasl_plain_password="alice-secret", enable_auto_commit=False,
        request_timeout_ms=10_000,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline, "no assignment"
            # (long polls too: see tests/kafka_python_consumer.py for the kafka-python
            # bug a short poll can meet while the leader rejoins)
            consumer.poll(5_000)
        tp = KpTopicPartition(TOPIC, 1)
        consumer.commit({tp: OffsetAndMetadata(5, "", -1)})
        assert consumer.committed(tp) == 5
    finally:
        consumer.close()
