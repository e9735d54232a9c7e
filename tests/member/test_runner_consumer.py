"""``GroupMember(group_protocol="consumer")``: KIP-848 members driven over real sockets
against a ``groupcoord serve`` subprocess, beside confluent-kafka's own KIP-848 consumer,
and (marked ``kafka``) against Apache Kafka itself."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from runner_helpers import ALL, TOPIC, Ledger, Poller, balanced

from groupcoord.assignors import RangeAssignor
from groupcoord.config import ConfigError
from groupcoord.member import GroupMember
from groupcoord.types import TopicPartition
from waiting import wait_until

KIP848_FLAGS = (
    "--group-initial-rebalance-delay-ms", "0",
    "--group-consumer-session-timeout-ms", "2000",
    "--group-consumer-heartbeat-interval-ms", "200",
    "--topic", f"{TOPIC}:6",
)  # fmt: skip


@pytest.fixture
def server(serve_factory: Callable[..., Any]) -> Any:
    return serve_factory(*KIP848_FLAGS)


@pytest.fixture
def member_settings() -> dict[str, Any]:
    """KIP-848 members: the coordinator decides assignor, session and heartbeat."""
    return {
        "group_id": "g848",
        "topics": [TOPIC],
        "group_protocol": "consumer",
        "max_poll_interval_ms": 6000,
        "request_timeout_ms": 5000,
    }


def test_members_share_hand_over_on_leave_and_revoke_before_anyone_is_assigned(
    make_member: Callable[..., GroupMember],
) -> None:
    ledger = Ledger()
    a = Poller(make_member(listener=ledger.listener("a")))
    wait_until(lambda: a.assignment == ALL, 10, "a alone owns everything")
    b = Poller(make_member(listener=ledger.listener("b")))
    wait_until(lambda: balanced(a, b), 10, "a and b share the partitions")
    assert a.member.generation() > 1 and b.member.generation() > 1
    # incremental: a revoked only what b got, and kept the rest throughout
    assert ledger.kinds("a").count("revoked") == 1 and "lost" not in ledger.kinds("a")
    b.close()
    wait_until(lambda: a.assignment == ALL, 10, "a owns everything again")
    assert ledger.violations == []
    a.close()


def test_commit_with_the_member_epoch_and_read_it_back(
    make_member: Callable[..., GroupMember],
) -> None:
    a = Poller(make_member())
    wait_until(lambda: a.assignment == ALL, 10, "a owns everything")
    tp = TopicPartition(TOPIC, 3)
    a.member.commit({tp: 17})
    assert a.member.committed([tp, TopicPartition(TOPIC, 4)]) == {tp: 17}
    a.close()


def test_a_member_that_stops_polling_leaves_and_hears_of_its_loss_when_it_polls_again(
    make_member: Callable[..., GroupMember],
) -> None:
    ledger = Ledger(strict=False)
    a = Poller(make_member(listener=ledger.listener("a")))
    b = Poller(make_member(listener=ledger.listener("b"), max_poll_interval_ms=1500))
    wait_until(lambda: balanced(a, b), 10, "a and b share the partitions")
    had = b.member.assignment()
    b.pause(4)  # longer than max.poll.interval.ms: b's heartbeat thread leaves the group
    wait_until(lambda: a.assignment == ALL, 10, "a takes b's partitions after b left")
    wait_until(lambda: balanced(a, b), 15, "b polls again and rejoins")
    assert ("b", "lost", had) in ledger.calls
    a.close()
    b.close()


def test_static_member_restart_within_the_session_gets_its_partitions_back(
    make_member: Callable[..., GroupMember],
) -> None:
    a = Poller(make_member(group_instance_id="static-a"))
    b = Poller(make_member(group_instance_id="static-b"))
    wait_until(lambda: balanced(a, b), 10, "a and b share the partitions")
    mine = b.member.assignment()
    b.close()  # epoch -2: the coordinator keeps b's partitions for its session
    time.sleep(0.5)
    assert a.member.assignment() == ALL - mine
    again = Poller(make_member(group_instance_id="static-b"))
    wait_until(lambda: again.assignment == mine, 10, "the restarted b gets its partitions")
    assert a.member.assignment() == ALL - mine
    a.close()
    again.close()


def test_classic_only_settings_are_refused_with_the_consumer_protocol(server: Any) -> None:
    common = {"bootstrap_servers": server.bootstrap, "group_id": "g", "topics": [TOPIC]}
    for bad, setting in (
        ({"assignors": [RangeAssignor()]}, "partition.assignment.strategy"),
        ({"session_timeout_ms": 10_000}, "session.timeout.ms"),
        ({"heartbeat_interval_ms": 1_000}, "heartbeat.interval.ms"),
    ):
        with pytest.raises(ConfigError, match=re.escape(setting)):
            GroupMember(**common, group_protocol="consumer", **bad)
    with pytest.raises(ConfigError, match="server_assignor needs group_protocol='consumer'"):
        GroupMember(**common, server_assignor="uniform")
    with pytest.raises(ConfigError, match="group_protocol must be"):
        GroupMember(**common, group_protocol="kip848")
    with pytest.raises(ConfigError, match=r"group\.remote\.assignor"):
        GroupMember(**common, group_protocol="consumer", server_assignor="sticky")


class _ConfluentMember:
    """confluent-kafka's KIP-848 consumer in this process, polled on its own thread; its
    rebalance callbacks go to the same ledger as ours."""

    def __init__(self, bootstrap: str, group: str, ledger: Ledger, name: str) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.protocol": "consumer",
                "enable.auto.commit": False,
            }
        )
        self.owned: set[TopicPartition] = set()
        self._ledger, self._name = ledger, name

        def assigned(_c: Any, parts: list[Any]) -> None:
            got = frozenset(TopicPartition(p.topic, p.partition) for p in parts)
            self.owned |= got
            ledger.record(name, "assigned", got)

        def revoked(_c: Any, parts: list[Any]) -> None:
            gone = frozenset(TopicPartition(p.topic, p.partition) for p in parts)
            self.owned -= gone
            if gone:
                ledger.record(name, "revoked", gone)

        self.consumer.subscribe([TOPIC], on_assign=assigned, on_revoke=revoked)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def test_a_mixed_group_with_confluent_kafkas_kip848_consumer(
    server: Any, make_member: Callable[..., GroupMember]
) -> None:
    pytest.importorskip("confluent_kafka")
    ledger = Ledger()
    ours = Poller(make_member(listener=ledger.listener("ours")))
    wait_until(lambda: ours.assignment == ALL, 10, "ours owns everything")
    theirs = _ConfluentMember(server.bootstrap, "g848", ledger, "confluent")
    try:
        wait_until(
            lambda: len(ours.assignment) == 3 and len(theirs.owned) == 3,
            20,
            "ours and confluent-kafka share the partitions",
        )
        assert ours.assignment | theirs.owned == ALL
    finally:
        theirs.close()
    wait_until(lambda: ours.assignment == ALL, 15, "ours owns everything after confluent left")
    assert ledger.violations == []
    ours.close()


@pytest.mark.kafka
def test_against_apache_kafka(kafka_broker_factory: Callable[..., Any]) -> None:
    """The same member against Kafka 4.x's own coordinator: join, share, commit, hand over."""
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = kafka_broker_factory()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = "gm848"
    for future in admin.create_topics([NewTopic(topic, 6, 1)]).values():
        try:
            future.result(30)
        except Exception as e:  # created by an earlier run against the same broker
            if "TOPIC_ALREADY_EXISTS" not in str(e):
                raise
    everything = frozenset(TopicPartition(topic, p) for p in range(6))
    ledger = Ledger()
    settings: dict[str, Any] = {
        "bootstrap_servers": broker.bootstrap,
        "group_id": f"gm848-{time.monotonic_ns()}",
        "topics": [topic],
        "group_protocol": "consumer",
    }
    a = Poller(GroupMember(**settings, listener=ledger.listener("a")))
    b: Poller | None = None
    try:
        wait_until(lambda: a.assignment == everything, 60, "a owns everything (Kafka)")
        b = Poller(GroupMember(**settings, listener=ledger.listener("b")))
        wait_until(
            lambda: b is not None and len(a.assignment) == 3 and len(b.assignment) == 3,
            60,
            "a and b share the partitions (Kafka)",
        )
        tp = sorted(a.member.assignment())[0]
        a.member.commit({tp: 5})
        assert a.member.committed([tp]) == {tp: 5}
        b.close()
        wait_until(lambda: a.assignment == everything, 60, "a owns everything again (Kafka)")
        assert ledger.violations == []
    finally:
        if b is not None:
            b.stop()
        a.close()


def test_members_keep_their_partitions_across_a_server_restart(
    serve_factory: Callable[..., Any], tmp_path: Any
) -> None:
    """The consumer group is persisted: after ``serve --data-dir`` restarts, the members'
    heartbeats with their epochs are accepted (no fencing, no lost partitions, no
    rebalance)."""
    # a session long enough for the members to find the new process (their reconnect
    # backoff); the argument given last wins
    server = serve_factory(
        *KIP848_FLAGS,
        "--group-consumer-session-timeout-ms",
        "10000",
        "--data-dir",
        str(tmp_path / "data"),
    )
    ledger = Ledger()
    made = []
    for name in ("a", "b"):
        made.append(
            GroupMember(
                bootstrap_servers=server.bootstrap,
                group_id="g848",
                topics=[TOPIC],
                group_protocol="consumer",
                max_poll_interval_ms=30_000,
                request_timeout_ms=5000,
                listener=ledger.listener(name),
            )
        )
    a, b = Poller(made[0]), Poller(made[1])
    try:
        wait_until(lambda: balanced(a, b), 10, "a and b share the partitions")
        time.sleep(0.5)  # a few quiet heartbeats
        before = (a.member.generation(), b.member.generation())
        owned = (a.member.assignment(), b.member.assignment())
        calls = len(ledger.calls)
        server.restart()
        time.sleep(2.5)  # heartbeats resume against the new process
        wait_until(lambda: balanced(a, b), 10, "a and b still share the partitions")
        assert (a.member.generation(), b.member.generation()) == before
        assert (a.member.assignment(), b.member.assignment()) == owned
        assert ledger.calls[calls:] == []  # nothing revoked, lost or assigned again
        assert ledger.violations == []
        assert (a.error, b.error) == (None, None)  # not failed (GROUP_ID_NOT_FOUND is fatal)
        polls = a.polls
        wait_until(lambda: a.polls > polls + 3, 5, "a goes on polling")
        tp = next(iter(owned[0]))
        a.member.commit({tp: 42})  # with its member epoch, accepted by the new process
        assert a.member.committed([tp]) == {tp: 42}
    finally:
        a.close()
        b.close()
