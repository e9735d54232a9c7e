"""GroupMember's offsets (commit / committed), leaving, coordinator loss and bad input,
against a real ``groupcoord serve`` subprocess."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from runner_helpers import ALL, SERVER_ARGS, TOPIC, Ledger, Poller, balanced

from groupcoord.errors import GroupcoordError, KafkaError
from groupcoord.member import CommitFailedError, GroupMember, RebalanceListener
from groupcoord.types import TopicPartition
from waiting import wait_until


@pytest.fixture
def server(serve_factory: Callable[..., Any], tmp_path: Any) -> Any:
    # durable, so that a restart keeps the committed offsets
    return serve_factory(*SERVER_ARGS, "--data-dir", str(tmp_path))


def tp(partition: int) -> TopicPartition:
    return TopicPartition(TOPIC, partition)


def test_commit_then_committed_round_trips(make_member: Callable[..., GroupMember]) -> None:
    member = make_member()
    assert member.poll(10_000) == ALL
    member.commit({tp(0): 10, tp(3): 7})
    member.commit({tp(0): 11})  # a later commit replaces the earlier one
    assert member.committed([tp(0), tp(1), tp(3)]) == {tp(0): 11, tp(3): 7}
    assert member.committed([]) == {}


def test_listener_commits_what_it_revokes_before_the_new_owner_starts(
    make_member: Callable[..., GroupMember],
) -> None:
    """The revoked callback runs inside poll() on the member's own thread and may commit;
    the commit is acknowledged before the partitions are handed to anyone else."""
    seen_by_b: dict[TopicPartition, int] = {}

    class CommitOnRevoke(RebalanceListener):
        def __init__(self, member: Callable[[], GroupMember]) -> None:
            self.member = member

        def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            self.member().commit({p: 100 + p.partition for p in partitions})

    class ReadCommittedOnAssign(RebalanceListener):
        def __init__(self, member: Callable[[], GroupMember]) -> None:
            self.member = member

        def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            seen_by_b.update(self.member().committed(partitions))

    members: dict[str, GroupMember] = {}
    members["a"] = make_member(listener=CommitOnRevoke(lambda: members["a"]))
    a = Poller(members["a"])
    wait_until(lambda: a.assignment == ALL, 10, "a alone owns everything")
    members["b"] = make_member(listener=ReadCommittedOnAssign(lambda: members["b"]))
    b = Poller(members["b"])
    wait_until(lambda: balanced(a, b), 15, "a and b share the partitions")
    moved = b.member.assignment()
    assert len(moved) == 3
    # assignment() changes before the listener hears of it (as in Kafka): wait for it
    wait_until(lambda: bool(seen_by_b), 5, "b's assigned callback")
    assert a.error is None and b.error is None
    assert seen_by_b == {p: 100 + p.partition for p in moved}
    a.close()
    b.close()


def test_commit_after_the_poll_interval_expired_is_refused(
    make_member: Callable[..., GroupMember],
) -> None:
    lost: list[frozenset[TopicPartition]] = []

    class Lost(RebalanceListener):
        def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
            lost.append(partitions)

    member = make_member(max_poll_interval_ms=1500, listener=Lost())
    assert member.poll(10_000) == ALL
    time.sleep(2.0)  # no poll for longer than max.poll.interval.ms
    # code written for Kafka's clients catches KafkaError around commit(): Java's
    # CommitFailedException is a KafkaException, kafka-python's CommitFailedError a KafkaError
    try:
        member.commit({tp(0): 5})
    except KafkaError as e:
        refused: KafkaError | None = e
    else:
        refused = None
    assert isinstance(refused, CommitFailedError)
    assert lost == []  # listeners run only inside poll()
    assert member.poll(10_000) == ALL  # the next poll rejoins
    assert lost == [ALL]
    member.commit({tp(0): 5})
    assert member.committed([tp(0)]) == {tp(0): 5}


def test_closing_a_dynamic_member_hands_its_partitions_over_at_once(
    make_member: Callable[..., GroupMember],
) -> None:
    # A session long enough that only a LeaveGroup can explain a quick hand-over.
    ledger = Ledger()
    slow_expiry = {"session_timeout_ms": 20_000, "heartbeat_interval_ms": 300}
    a = Poller(make_member(listener=ledger.listener("a"), **slow_expiry))
    b = Poller(make_member(listener=ledger.listener("b"), **slow_expiry))
    wait_until(lambda: balanced(a, b), 15, "a and b share the partitions")
    a.close()
    wait_until(lambda: b.member.assignment() == ALL, 8, "b to take over a's partitions")
    assert ledger.violations == []
    assert ledger.owned_by("a") == frozenset()  # a revoked everything while closing
    b.close()


def test_member_finds_the_coordinator_again_after_a_server_restart(
    server: Any, make_member: Callable[..., GroupMember]
) -> None:
    member = make_member()
    poller = Poller(member)
    wait_until(lambda: poller.assignment == ALL, 10, "the member to own everything")
    member.commit({tp(2): 42})
    server.restart()  # same port, same data directory
    time.sleep(1.0)
    wait_until(
        lambda: member.generation() >= 0 and poller.assignment == ALL,
        15,
        "the member to rejoin the restarted coordinator",
    )
    assert poller.error is None
    assert member.committed([tp(2)]) == {tp(2): 42}
    poller.close()


# --------------------------------------------------------------------------------------
# bad input and unreachable brokers: typed errors, never a hang
# --------------------------------------------------------------------------------------


def test_bad_arguments_are_refused_at_the_api(server: Any) -> None:
    with pytest.raises(ValueError):
        GroupMember("no-port-here", "g", [TOPIC])
    with pytest.raises(ValueError):  # ConfigError: heartbeat must be below the session
        GroupMember(server.bootstrap, "g", [TOPIC], session_timeout_ms=100)
    with pytest.raises(TypeError):
        GroupMember(server.bootstrap, "g", [TOPIC], listener=object())  # type: ignore[arg-type]
    with GroupMember(
        server.bootstrap, "g", [TOPIC], session_timeout_ms=1500, heartbeat_interval_ms=300
    ) as member:
        with pytest.raises(ValueError):
            member.poll(-1)
        with pytest.raises(TypeError):
            member.commit({tp(0): "12"})  # type: ignore[dict-item]
    with pytest.raises(GroupcoordError):
        member.poll(0)


def test_poll_from_a_listener_is_refused(make_member: Callable[..., GroupMember]) -> None:
    errors: list[BaseException] = []

    class Reentrant(RebalanceListener):
        def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            try:
                holder[0].poll(0)
            except GroupcoordError as e:
                errors.append(e)

    holder: list[GroupMember] = []
    holder.append(make_member(listener=Reentrant()))
    assert holder[0].poll(10_000) == ALL
    assert len(errors) == 1


def test_unreachable_bootstrap_polls_empty_and_closes_promptly() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    member = GroupMember(
        f"127.0.0.1:{port}", "g", [TOPIC], session_timeout_ms=1500, heartbeat_interval_ms=300
    )
    try:
        assert member.poll(600) == frozenset()
        assert member.generation() == -1
    finally:
        started = time.monotonic()
        member.close(timeout_ms=2000)
        assert time.monotonic() - started < 5, "close() hung"


_CHILD = """
import sys, time
from groupcoord.assignors import CooperativeStickyAssignor
from groupcoord.member import GroupMember
m = GroupMember(sys.argv[1], "g", ["t"], [CooperativeStickyAssignor()],
                session_timeout_ms=1500, heartbeat_interval_ms=300, max_poll_interval_ms=60000)
while len(m.poll(1000)) != 3:
    pass
print("stable", flush=True)
while True:
    m.poll(1000)
    time.sleep(0.05)
"""


def test_a_killed_member_is_expired_after_its_session_timeout(
    server: Any, make_member: Callable[..., GroupMember]
) -> None:
    """The other side of KIP-62: heartbeats stop only when the process does."""
    mine = Poller(make_member())
    wait_until(lambda: mine.assignment == ALL, 10, "the member to own everything")
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, server.bootstrap], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "stable"
        wait_until(lambda: len(mine.member.assignment()) == 3, 10, "the partitions to be shared")
        child.kill()  # no LeaveGroup, no more heartbeats
        child.wait()
        wait_until(lambda: mine.member.assignment() == ALL, 10, "the dead member to expire")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    assert mine.error is None
    mine.close()
