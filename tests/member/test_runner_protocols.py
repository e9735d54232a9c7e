"""GroupMember with eager assignors, and with topics that appear while the group runs
(metadata refresh), against a real ``groupcoord serve`` subprocess."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
from runner_helpers import ALL, TOPIC, Ledger, Poller, balanced

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor
from groupcoord.member import GroupMember
from groupcoord.types import TopicPartition
from waiting import wait_until


def test_eager_members_revoke_everything_before_anyone_is_assigned(
    make_member: Callable[..., GroupMember],
) -> None:
    ledger = Ledger()
    a = Poller(make_member(assignors=[RangeAssignor()], listener=ledger.listener("a")))
    wait_until(lambda: a.assignment == ALL, 10, "a alone owns everything")
    b = Poller(make_member(assignors=[RangeAssignor()], listener=ledger.listener("b")))
    wait_until(
        lambda: (
            balanced(a, b)
            and all(ledger.owned_by(n) == p.member.assignment() for n, p in (("a", a), ("b", b)))
        ),
        15,
        "a and b share the partitions, and have heard so",
    )
    assert ledger.violations == []
    a_calls = [(kind, parts) for who, kind, parts in ledger.calls if who == "a"]
    # eager: a gave up all six, then got its share back as one whole assignment
    assert a_calls[0] == ("assigned", ALL)
    assert ("revoked", ALL) in a_calls
    assert a_calls[-1] == ("assigned", a.member.assignment())
    a.close()
    b.close()


def test_kafkas_default_assignors_are_eager_until_range_is_dropped(
    make_member: Callable[..., GroupMember],
) -> None:
    """[range, cooperative-sticky] (Kafka's default) announces cooperative-sticky but follows
    the eager protocol; a member listing only cooperative-sticky joins the same group (the
    two-bounce upgrade of KIP-429) and nobody ever owns a partition twice."""
    ledger = Ledger()
    old = Poller(make_member(assignors=None, listener=ledger.listener("old")))
    wait_until(lambda: old.assignment == ALL, 10, "the first member owns everything")
    new = Poller(
        make_member(assignors=[CooperativeStickyAssignor()], listener=ledger.listener("new"))
    )
    wait_until(lambda: balanced(old, new), 15, "both members share the partitions")
    assert ledger.violations == []
    assert ("revoked", ALL) in [(k, p) for who, k, p in ledger.calls if who == "old"]
    old.close()
    new.close()


def test_a_subscribed_topic_created_later_is_assigned_after_a_metadata_refresh(
    server: Any, make_member: Callable[..., GroupMember]
) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    ledger = Ledger()
    refresh = {"topics": [TOPIC, "later"], "metadata_max_age_ms": 300}
    a = Poller(make_member(assignors=None, listener=ledger.listener("a"), **refresh))
    b = Poller(make_member(assignors=None, listener=ledger.listener("b"), **refresh))
    wait_until(lambda: balanced(a, b), 15, "a and b share the partitions of t")

    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap)
    try:
        admin.create_topics([NewTopic("later", num_partitions=4, replication_factor=1)])
    finally:
        admin.close()
    later = frozenset(TopicPartition("later", p) for p in range(4))

    def both_topics_spread() -> bool:
        owned = [p.member.assignment() for p in (a, b)]
        return (
            frozenset().union(*owned) == ALL | later
            and sum(len(o) for o in owned) == 10
            and all(len(o) == 5 for o in owned)
        )

    wait_until(both_topics_spread, 15, "the new topic's partitions to be assigned")
    assert ledger.violations == []
    assert a.error is None and b.error is None
    a.close()
    b.close()


def test_a_subscribed_topic_that_does_not_exist_is_warned_about_once(
    make_member: Callable[..., GroupMember], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="groupcoord.member"):
        a = Poller(make_member(topics=[TOPIC, "ghost"], metadata_max_age_ms=200))
        wait_until(lambda: a.assignment == ALL, 10, "a owns the partitions of t")
        time.sleep(1.0)  # several metadata refreshes, all without "ghost"
        a.close()
    warnings = [r.getMessage() for r in caplog.records if "ghost" in r.getMessage()]
    assert warnings == [
        "group g: topic ghost is not available (UNKNOWN_TOPIC_OR_PARTITION in Metadata):"
        " none of its partitions can be assigned until it exists"
    ]
