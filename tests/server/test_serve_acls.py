"""``groupcoord serve --authorizer acl`` with kafka-python: ACLs managed through
KafkaAdminClient, kept across a restart, and enforced on the group APIs."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    InvalidRequestError,
    NoError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)

from kafka_python_consumer import subscribed_consumer
from serve_process import ServerProcess

ANONYMOUS = "User:ANONYMOUS"


def grant(resource: ResourceType, name: str, operation: ACLOperation) -> ACL:
    return ACL(
        principal=ANONYMOUS,
        host="*",
        operation=operation,
        permission_type=ACLPermissionType.ALLOW,
        resource_pattern=ResourcePattern(resource, name, ACLResourcePatternType.LITERAL),
    )


def everything() -> ACLFilter:
    return ACLFilter(
        principal=None,
        host=None,
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )


def admin(server: ServerProcess) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10_000)


def consume(server: ServerProcess, group: str) -> KafkaConsumer:
    return subscribed_consumer(
        ["orders"],
        bootstrap_servers=server.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=6_000,
        heartbeat_interval_ms=1_000,
    )


def assigned(consumer: KafkaConsumer, timeout_s: float = 20.0) -> set[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        consumer.poll(timeout_ms=200)
        if consumer.assignment():
            return {tp.partition for tp in consumer.assignment()}
    raise AssertionError("no assignment")


def test_acls_are_managed_kept_and_enforced(
    serve_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    data = str(tmp_path / "data")
    common = ("--data-dir", data, "--topic", "orders:2", "--topic", "secret:1")
    common += ("--group-initial-rebalance-delay-ms", "0", "--authorizer", "acl")
    first = serve_factory(*common, "--super-user", ANONYMOUS)
    client = admin(first)
    try:
        result = client.create_acls(
            [
                grant(ResourceType.GROUP, "allowed", ACLOperation.READ),
                grant(ResourceType.TOPIC, "orders", ACLOperation.READ),
                # Kafka refuses any other name for the cluster resource
                grant(ResourceType.CLUSTER, "not-the-cluster", ACLOperation.ALTER),
            ]
        )
        assert len(result["succeeded"]) == 2
        # kafka-python reports a failure by its error class only
        assert result["failed"] == [InvalidRequestError]
        found, error = client.describe_acls(everything())
        assert error is NoError
        assert {
            (a.resource_pattern.resource_type, a.resource_pattern.resource_name) for a in found
        } == {
            (ResourceType.GROUP, "allowed"),
            (ResourceType.TOPIC, "orders"),
        }
    finally:
        client.close()
    assert first.stop() == 0

    # no super user now: the ACLs on disk are all there is
    second = serve_factory(*common)
    client = admin(second)
    try:
        with pytest.raises(ClusterAuthorizationFailedError):  # no DESCRIBE on the cluster
            client.describe_acls(everything())
        consumer = consume(second, "allowed")
        try:
            assert assigned(consumer) == {0, 1}
            consumer.commit()  # READ on the group and on the topic
            # Metadata lists only the topics the caller may describe
            assert consumer.topics() == {"orders"}
        finally:
            consumer.close()
        # READ does not give WRITE
        producer = KafkaProducer(
            bootstrap_servers=second.bootstrap, acks=1, enable_idempotence=False, retries=0
        )
        try:
            with pytest.raises(TopicAuthorizationFailedError):
                producer.send("orders", b"x", partition=0).get(timeout=20)
        finally:
            producer.close()
        denied = consume(second, "someone-elses")
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                for _ in range(100):
                    denied.poll(timeout_ms=200)
        finally:
            denied.close()
    finally:
        client.close()


def test_without_an_authorizer_the_acl_apis_say_security_is_disabled(
    serve_factory: Callable[..., ServerProcess],
) -> None:
    server = serve_factory()
    client = admin(server)
    try:
        with pytest.raises(SecurityDisabledError):
            client.describe_acls(everything())
    finally:
        client.close()


def test_super_user_needs_the_authorizer() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--memory", "--super-user", "User:x"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "--super-user and --allow-everyone-if-no-acl-found need --authorizer acl" in done.stderr
