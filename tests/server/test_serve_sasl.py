"""``groupcoord serve`` with a SASL_PLAINTEXT listener: the issue's contract with
confluent-kafka (SCRAM-SHA-512, ACLs granted by a super user through AdminClient),
kafka-python over PLAIN and SCRAM-SHA-256, and the failures a client sees for Kafka."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from serve_process import ServerProcess


def groupcoord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture(scope="module")
def users_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory holding the users, made once (each CLI call is a process)."""
    data = str(tmp_path_factory.mktemp("users"))
    for user, password, mechanism in [
        ("admin", "admin-secret", "SCRAM-SHA-512"),
        ("alice", "alice-secret", "SCRAM-SHA-512"),
        ("bob", "bob-secret", "PLAIN"),
        ("carol", "carol-secret", "SCRAM-SHA-256"),
    ]:
        done = groupcoord(
            "users", "add", user, "--password", password, "--mechanism", mechanism,
            "--data-dir", data,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    return Path(data)


@pytest.fixture
def data_dir(users_dir: Path, tmp_path: Path) -> str:
    """A copy of the users' data directory for one test (its ACLs are its own)."""
    return str(shutil.copytree(users_dir, tmp_path / "data"))


def sasl_server(serve_factory: Callable[..., ServerProcess], data: str) -> ServerProcess:
    return serve_factory(
        "--data-dir", data, "--listener", "SASL_PLAINTEXT://127.0.0.1:0",
        "--sasl-mechanisms", "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN", "--authorizer", "acl",
        "--super-user", "User:admin", "--topic", "orders:2",
        "--group-initial-rebalance-delay-ms", "0",
    )  # fmt: skip


def sasl(server: ServerProcess, user: str, password: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": server.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": password,
        **extra,
    }


def poll_until(consumer: Consumer, done: Callable[[Any], bool], timeout_s: float = 30) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if done(msg):
            return msg
    raise AssertionError("timed out")


def test_the_contract_with_confluent_kafka(
    serve_factory: Callable[..., ServerProcess], data_dir: str
) -> None:
    server = sasl_server(serve_factory, data_dir)
    # an authenticated user without ACLs cannot join: GROUP_AUTHORIZATION_FAILED
    alice = Consumer(
        sasl(server, "alice", "alice-secret", **{"group.id": "g", "auto.offset.reset": "earliest"})
    )
    try:
        alice.subscribe(["orders"])
        msg = poll_until(alice, lambda m: m is not None and m.error() is not None)
        assert msg.error().code() == KafkaError.GROUP_AUTHORIZATION_FAILED, msg.error()
    finally:
        alice.close()
    # the super user grants READ on the group and the topic
    admin = AdminClient(sasl(server, "admin", "admin-secret"))
    grants = [
        AclBinding(rtype, name, ResourcePatternType.LITERAL, "User:alice", "*",
                   AclOperation.READ, AclPermissionType.ALLOW)
        for rtype, name in ((ResourceType.GROUP, "g"), (ResourceType.TOPIC, "orders"))
    ]  # fmt: skip
    for future in admin.create_acls(grants).values():
        assert future.result(timeout=20) is None
    # now alice can
    alice = Consumer(
        sasl(server, "alice", "alice-secret", **{"group.id": "g", "auto.offset.reset": "earliest"})
    )
    try:
        alice.subscribe(["orders"])
        poll_until(alice, lambda _: len(alice.assignment()) == 2)
        assert {tp.partition for tp in alice.assignment()} == {0, 1}
    finally:
        alice.close()


@pytest.mark.parametrize(
    ("user", "password"),
    [("alice", "not-her-password"), ("mallory", "any-password")],
    ids=["wrong-password", "unknown-user"],
)
def test_a_wrong_password_or_an_unknown_user_fails_authentication(
    serve_factory: Callable[..., ServerProcess], data_dir: str, user: str, password: str
) -> None:
    # Kafka's answer is the same for both: it does not tell which users exist
    server = sasl_server(serve_factory, data_dir)
    errors: list[KafkaError] = []
    consumer = Consumer(
        sasl(server, user, password, **{"group.id": "g", "error_cb": errors.append})
    )
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 20
        while not errors and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()
    assert errors and errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in errors[0].str()


@pytest.mark.parametrize(("user", "password", "mechanism"), [
    ("bob", "bob-secret", "PLAIN"),
    ("carol", "carol-secret", "SCRAM-SHA-256"),
])  # fmt: skip
def test_kafka_python_plain_and_scram_256(
    serve_factory: Callable[..., ServerProcess],
    data_dir: str,
    user: str,
    password: str,
    mechanism: str,
) -> None:
    # (a failed login is not shown here: kafka-python retries the bootstrap for 30 s and
    # reports "Unable to bootstrap", as it does against Kafka)
    from kafka import KafkaConsumer

    server = sasl_server(serve_factory, data_dir)
    settings: dict[str, Any] = {
        "bootstrap_servers": server.bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
        "request_timeout_ms": 10_000,
        # fail fast: the first failed login ends the bootstrap
        "reconnect_backoff_max_ms": 200,
    }
    consumer = KafkaConsumer(**settings)
    try:
        # authenticated, with no ACL: Metadata lists no topic
        assert consumer.topics() == set()
    finally:
        consumer.close()


def test_users_cli_and_bad_listener_settings(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    assert (
        groupcoord("users", "add", "a", "--password", "pw", "--data-dir", str(data)).returncode == 0
    )
    listed = groupcoord("users", "list", "--data-dir", str(data))
    assert listed.stdout.split("\t")[:2] == ["a", "sha512"] and "pw" not in listed.stdout
    assert groupcoord("users", "remove", "a", "--data-dir", str(data)).returncode == 0
    gone = groupcoord("users", "remove", "a", "--data-dir", str(data))
    assert gone.returncode == 2 and "no such user" in gone.stderr
    bad = groupcoord(
        "users", "add", "a", "--password", "pw", "--mechanism", "MD5", "--data-dir", str(data)
    )
    assert bad.returncode == 2 and "--mechanism MD5" in bad.stderr
    # the flags reach the validation (one process); the rules themselves in-process below
    done = groupcoord("serve", "--listener", "SASL_PLAINTEXT://127.0.0.1:0", "--memory")
    assert done.returncode == 2 and "a SASL listener needs --data-dir" in done.stderr


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"listeners": ("SSL://127.0.0.1:0",)}, "need --ssl-certfile and --ssl-keyfile"),
        ({"listeners": ("TLS://127.0.0.1:0",)}, "unknown security protocol 'TLS'"),
        ({"listeners": ("PLAINTEXT://127.0.0.1",)}, "the port must be a number"),
        (
            {
                "listeners": ("SASL_PLAINTEXT://:0",),
                "data_dir": "d",
                "sasl_mechanisms": ("GSSAPI",),
            },
            "--sasl-mechanisms: GSSAPI",
        ),
    ],
)
def test_bad_listener_settings(settings: dict[str, Any], message: str) -> None:
    from groupcoord.server import ServerConfig

    with pytest.raises(ValueError, match=re.escape(message)):
        ServerConfig(**{"data_dir": None, **settings})
