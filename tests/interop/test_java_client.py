"""Kafka's own Java clients (kafka-clients 4.4.0, the reference implementation) against
``groupcoord serve``: ``KafkaConsumer`` groups (``JavaAgent.java``, through the same
scenarios as the Python clients), the ``Admin`` consumer-group calls (``JavaAdmin.java``)
and the ``kafka-consumer-groups`` tool (kafka-tools' ``ConsumerGroupCommand``).

Marked ``kafka``: skipped only where Java or Maven is missing; the programs are compiled
in the test by tools/kafka_java.py (classes cached in ~/.cache/groupcoord/java).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import scenarios
from helpers import FAST_GROUP_FLAGS, ConsumerGroup, Server, committed_offsets, wait_until
from kafka import KafkaProducer

from kafka_oracle import KAFKA_LATEST, tools_module

pytestmark = pytest.mark.kafka

CLIENT = "java"
HERE = Path(__file__).resolve().parent
#: kafka-tools is published up to 4.3.1 (no 4.4.0 on Maven Central); its own kafka-clients
KAFKA_TOOLS = "4.3.1"


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS))


def produce(bootstrap: str, topic: str, records: Sequence[tuple[str, str]]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    try:
        for future in [producer.send(topic, key=k.encode(), value=v.encode()) for k, v in records]:
            future.get(timeout=60)
    finally:
        producer.close(timeout=10)


# ---------------------------------------------------------------------------------------
# KafkaConsumer


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_group_lifecycle(server: Server, tmp_path: Path, assignor: str) -> None:
    """Join, leave (close: LeaveGroup), crash (SIGKILL of the JVM), join again."""
    scenarios.group_lifecycle(
        server.bootstrap, CLIENT, assignor, tmp_path, cooperative=assignor != "range"
    )


def test_static_member_restart_causes_no_rebalance(server: Server, tmp_path: Path) -> None:
    scenarios.static_member_restart(server.bootstrap, CLIENT, "range", tmp_path)


def test_commit_sync_and_committed(server: Server, tmp_path: Path) -> None:
    """commitSync() of what was consumed; committed() reads it back, as does OffsetFetch
    from another client."""
    produce(server.bootstrap, scenarios.TOPIC, scenarios.keyed_records(0, 120))
    with ConsumerGroup(
        CLIENT, server.bootstrap, "commits", [scenarios.TOPIC], tmp_path, report_records=True
    ) as group:
        member = group.spawn()
        wait_until(lambda: len(member.records()) >= 120, scenarios.JOIN_TIMEOUT_S, "120", group)
        ends: dict[tuple[str, int], int] = {}
        for topic, p, offset, _key in member.records():
            ends[(topic, p)] = max(ends.get((topic, p), 0), offset + 1)
        member.commit()
        mark = member.mark()
        member.command("committed")
        wait_until(lambda: member.events("offsets", "error", since=mark), 30, "committed()")
        assert not member.errors(), member.errors()
        (answer,) = member.events("offsets", since=mark)
        read_back = {(t, p): o for t, p, o in answer.fields["offsets"]}
        assert read_back == ends
        assert {tp: o for tp, o in committed_offsets(server.bootstrap, "commits").items()} == ends
        member.close()


# ---------------------------------------------------------------------------------------
# Admin


class JavaAdmin:
    def __init__(self, bootstrap: str) -> None:
        command = tools_module("kafka_java").command(
            HERE / "JavaAdmin.java", KAFKA_LATEST, bootstrap
        )
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def __call__(self, *args: object) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(" ".join(str(a) for a in args) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"JavaAdmin exited ({self.process.wait()}) on {args}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ok(self, *args: object) -> Any:
        answer = self(*args)
        assert "ok" in answer, f"Admin {args}: {answer}"
        return answer["ok"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


@pytest.fixture
def admin(server: Server) -> Iterator[JavaAdmin]:
    client = JavaAdmin(server.bootstrap)
    yield client
    client.close()


def test_admin_lists_describes_and_reads_offsets_of_a_live_group(
    server: Server, admin: JavaAdmin, tmp_path: Path
) -> None:
    with ConsumerGroup(
        CLIENT, server.bootstrap, "watched", [scenarios.TOPIC], tmp_path, report_records=True
    ) as group:
        a, b = group.spawn(instance_id="static-a"), group.spawn()
        owned = scenarios.wait_owned_exactly_once(
            [a, b], scenarios.ALL, [6, 6], scenarios.JOIN_TIMEOUT_S, "a, b own 12"
        )
        # produced once the group is formed, so each member consumes (and commits) its own
        # half: a Java consumer commits only positions it reached in its current assignment
        produce(server.bootstrap, scenarios.TOPIC, scenarios.keyed_records(0, 60))
        wait_until(lambda: len(a.records()) + len(b.records()) >= 60, 30, "60 records", group)
        a.commit()
        b.commit()

        listed = admin.ok("list")
        assert {"group_id": "watched", "state": "Stable", "type": "Classic", "simple": False} in (
            listed
        )
        described = admin.ok("describe", "watched")
        assert (described["state"], described["type"], described["assignor"]) == (
            "Stable",
            "Classic",
            "range",
        )
        assert described["coordinator"] == server.bootstrap
        members = {
            m["instance_id"]: frozenset(tuple(tp) for tp in m["assignment"])
            for m in described["members"]
        }
        assert members == {"static-a": owned[a.name], None: owned[b.name]}
        offsets = {(t, p): o for t, p, o in admin.ok("offsets", "watched")}
        assert offsets == committed_offsets(server.bootstrap, "watched")
        assert sum(offsets.values()) == 60

        # a live group refuses offset changes and deletion, as Kafka does
        refused = admin("alter", "watched", scenarios.TOPIC, 0, 0)
        assert refused.get("error") == "org.apache.kafka.common.errors.UnknownMemberIdException"
        refused = admin("delete", "watched")
        assert refused.get("error") == "org.apache.kafka.common.errors.GroupNotEmptyException"
        refused = admin("delete-offsets", "watched", scenarios.TOPIC, 0)
        assert refused.get("error") == (
            "org.apache.kafka.common.errors.GroupSubscribedToTopicException"
        ), refused
        assert {(t, p): o for t, p, o in admin.ok("offsets", "watched")} == offsets
        a.close()
        b.close()


def test_admin_alters_offsets_and_deletes_an_empty_group(
    server: Server, admin: JavaAdmin, tmp_path: Path
) -> None:
    produce(server.bootstrap, scenarios.TOPIC, scenarios.keyed_records(0, 24))
    with ConsumerGroup(
        CLIENT, server.bootstrap, "emptied", [scenarios.TOPIC], tmp_path, report_records=True
    ) as group:
        member = group.spawn()
        wait_until(lambda: len(member.records()) >= 24, scenarios.JOIN_TIMEOUT_S, "24", group)
        member.commit()
        member.close()
    before = {(t, p): o for t, p, o in admin.ok("offsets", "emptied")}
    assert sum(before.values()) == 24
    assert {"group_id": "emptied", "state": "Empty", "type": "Classic", "simple": False} in (
        admin.ok("list")
    )

    assert admin.ok("alter", "emptied", scenarios.TOPIC, 3, 1) == "altered"
    after = {(t, p): o for t, p, o in admin.ok("offsets", "emptied")}
    assert after == {**before, (scenarios.TOPIC, 3): 1}

    # OffsetDelete (API 47): an Empty group loses the offset named, durably, and keeps
    # the others
    assert admin.ok("delete-offsets", "emptied", scenarios.TOPIC, 3) == "deleted"
    left = {(t, p): o for t, p, o in admin.ok("offsets", "emptied")}
    assert left == {k: v for k, v in after.items() if k != (scenarios.TOPIC, 3)}
    assert committed_offsets(server.bootstrap, "emptied") == left

    assert admin.ok("delete", "emptied") == "deleted"
    assert "emptied" not in {g["group_id"] for g in admin.ok("list")}
    missing = admin("delete", "emptied")
    assert missing.get("error") == "org.apache.kafka.common.errors.GroupIdNotFoundException"


# ---------------------------------------------------------------------------------------
# kafka-consumer-groups


def consumer_groups(bootstrap: str, *args: str) -> str:
    """``kafka-consumer-groups.sh --bootstrap-server BOOTSTRAP args``; its stdout."""
    command = tools_module("kafka_java").tool_command(
        KAFKA_TOOLS,
        "kafka-tools",
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server",
        bootstrap,
        *args,
    )
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"kafka-consumer-groups {args}: {done.stdout}{done.stderr}"
    return done.stdout


def table(output: str, group: str) -> list[dict[str, str]]:
    """The rows of a --describe / --reset-offsets table, as header -> value."""
    lines = [line.split() for line in output.splitlines() if line.strip()]
    header = next(i for i, cols in enumerate(lines) if cols[:2] == ["GROUP", "TOPIC"])
    return [
        dict(zip(lines[header], cols, strict=False))
        for cols in lines[header + 1 :]
        if cols[0] == group
    ]


def test_kafka_consumer_groups_lists_describes_and_resets(server: Server, tmp_path: Path) -> None:
    bootstrap = server.bootstrap
    with ConsumerGroup(
        CLIENT, bootstrap, "tooled", [scenarios.TOPIC], tmp_path, report_records=True
    ) as group:
        member = group.spawn()
        scenarios.wait_owned_exactly_once(
            [member], scenarios.ALL, [12], scenarios.JOIN_TIMEOUT_S, "one member owns 12"
        )
        produce(bootstrap, scenarios.TOPIC, scenarios.keyed_records(0, 36))
        wait_until(lambda: len(member.records()) >= 36, 30, "36 records", group)
        member.commit()
        ends: dict[int, int] = {}
        for _t, p, offset, _k in member.records():
            ends[p] = max(ends.get(p, 0), offset + 1)

        assert "tooled" in consumer_groups(bootstrap, "--list").split()
        rows = table(consumer_groups(bootstrap, "--describe", "--group", "tooled"), "tooled")
        assert len(rows) == scenarios.PARTITIONS, rows
        (consumer_id,) = {r["CONSUMER-ID"] for r in rows}
        assert consumer_id.startswith("consumer-tooled-"), rows
        for r in rows:
            end = ends.get(int(r["PARTITION"]), 0)
            assert (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) == (
                str(end),
                str(end),
                "0",
            ), r
        member.close()

    reset = consumer_groups(
        bootstrap, "--reset-offsets", "--to-earliest", "--execute", "--group", "tooled",
        "--topic", scenarios.TOPIC,
    )  # fmt: skip
    rows = table(reset, "tooled")
    assert sorted(int(r["PARTITION"]) for r in rows) == list(range(scenarios.PARTITIONS))
    assert {r["NEW-OFFSET"] for r in rows} == {"0"}, reset
    assert committed_offsets(bootstrap, "tooled") == {
        (scenarios.TOPIC, p): 0 for p in range(scenarios.PARTITIONS)
    }
    described = table(consumer_groups(bootstrap, "--describe", "--group", "tooled"), "tooled")
    assert len(described) == scenarios.PARTITIONS, described
    for r in described:
        # no member any more; offsets back at the start, the whole log as lag
        end = str(ends.get(int(r["PARTITION"]), 0))
        assert (r["CONSUMER-ID"], r["CURRENT-OFFSET"], r["LAG"]) == ("-", "0", end), r

    # --delete-offsets (OffsetDelete): the Empty group forgets partitions 0 and 1
    deleted = consumer_groups(
        bootstrap, "--delete-offsets", "--group", "tooled", "--topic", f"{scenarios.TOPIC}:0,1"
    )
    assert "Request succeeded for deleting offsets from group tooled." in deleted, deleted
    statuses = {tuple(line.split()) for line in deleted.splitlines()[1:] if line.strip()}
    assert {(scenarios.TOPIC, str(p), "Successful") for p in (0, 1)} <= statuses, deleted
    assert committed_offsets(bootstrap, "tooled") == {
        (scenarios.TOPIC, p): 0 for p in range(2, scenarios.PARTITIONS)
    }
