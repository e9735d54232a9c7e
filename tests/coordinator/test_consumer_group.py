"""KIP-848 consumer groups through GroupCoordinator: scenarios and error codes, as Kafka
4.x's GroupMetadataManager answers them."""

from __future__ import annotations

import pytest
from consumer_harness import REBALANCE_MS, SESSION_MS, ConsumerHarness, topic_id

from groupcoord.config import ConfigError, CoordinatorConfig
from groupcoord.coordinator import (
    DeleteGroupsRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    RemovalCause,
)
from groupcoord.coordinator.consumer_group import ConsumerGroupState, MemberState
from groupcoord.coordinator.topic_regex import compile_topic_regex
from groupcoord.errors import (
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InconsistentGroupProtocolError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    NonEmptyGroupError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
    UnsupportedVersionError,
)


def _stable_pair(h: ConsumerHarness) -> None:
    """Members a and b, reconciled to orders 0-1 / 2-3."""
    h.join("a")
    h.join("b")
    h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1}})  # revoked 2, 3
    h.heartbeat(member_id="b", member_epoch=2)
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.state is ConsumerGroupState.STABLE


def test_first_member_gets_everything_at_epoch_one() -> None:
    h = ConsumerHarness({"orders": 4})
    r = h.join("a")
    assert r.error is None and r.member_id == "a" and r.member_epoch == 1
    assert r.heartbeat_interval_ms == 500
    assert h.names(r) == {"orders": {0, 1, 2, 3}}
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None
    assert (snap.group_epoch, snap.assignment_epoch, snap.state) == (
        1,
        1,
        ConsumerGroupState.STABLE,
    )
    # a plain heartbeat: no assignment when nothing changed
    r = h.heartbeat(member_id="a", member_epoch=1)
    assert r.error is None and r.assignment is None and r.member_epoch == 1


def test_scale_out_revokes_before_reassigning() -> None:
    h = ConsumerHarness({"orders": 4})
    h.join("a")
    r = h.join("b")
    # b moves to epoch 2 but gets nothing yet: a still owns what b's target holds
    assert (r.member_epoch, h.names(r)) == (2, {})
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None
    b = snap.member("b")
    assert b is not None and b.state is MemberState.UNRELEASED_PARTITIONS
    assert b.target == {"orders": (2, 3)}
    # a is asked to revoke 2, 3 and stays in epoch 1 until it acknowledges
    r = h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1, 2, 3}})
    assert (r.member_epoch, h.names(r)) == (1, {"orders": {0, 1}})
    r = h.heartbeat(member_id="b", member_epoch=2)
    assert r.assignment is None  # still unreleased
    # a still lists 2 -> nothing moves
    r = h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1, 2}})
    assert r.member_epoch == 1
    # acknowledged: a reaches epoch 2, then b gets 2, 3
    r = h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1}})
    assert r.member_epoch == 2 and r.assignment is None
    r = h.heartbeat(member_id="b", member_epoch=2)
    assert h.names(r) == {"orders": {2, 3}}
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.state is ConsumerGroupState.STABLE


def test_leave_frees_partitions_and_bumps_the_epoch() -> None:
    h = ConsumerHarness({"orders": 4})
    _stable_pair(h)
    r = h.heartbeat(member_id="b", member_epoch=-1)
    assert (r.error, r.member_id, r.member_epoch) == (None, "b", -1)
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.group_epoch == 3 and snap.member("b") is None
    r = h.heartbeat(member_id="a", member_epoch=2)
    assert (r.member_epoch, h.names(r)) == (3, {"orders": {0, 1, 2, 3}})
    # leaving again: the member is gone
    assert h.heartbeat(member_id="b", member_epoch=-1).error is UnknownMemberIdError


def test_crash_is_a_session_expiry() -> None:
    h = ConsumerHarness({"orders": 4})
    _stable_pair(h)
    events = []
    h.shell.add_member_listener(events.append)
    epoch = 2
    for _ in range(3):  # a keeps heartbeating, b is silent
        h.advance(SESSION_MS // 4)
        assert h.heartbeat(member_id="a", member_epoch=epoch).assignment is None
    assert events == []
    h.advance(SESSION_MS // 4)
    assert [(e.member_id, e.cause) for e in events] == [("b", RemovalCause.SESSION_TIMEOUT)]
    r = h.heartbeat(member_id="a", member_epoch=epoch)
    assert r.member_epoch == 3 and h.names(r) == {"orders": {0, 1, 2, 3}}
    assert h.heartbeat(member_id="b", member_epoch=2).error is UnknownMemberIdError


def test_unacknowledged_revocation_fences_after_the_rebalance_timeout() -> None:
    h = ConsumerHarness({"orders": 4})
    h.join("a")
    h.join("b")
    h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1, 2, 3}})
    events = []
    h.shell.add_member_listener(events.append)
    # a keeps heartbeating (session alive) but never lets go of 2, 3
    for _ in range(3):
        h.advance(REBALANCE_MS // 4)
        h.heartbeat(member_id="b", member_epoch=2)
        h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1, 2, 3}})
    assert events == []
    h.advance(REBALANCE_MS // 4)
    assert [(e.member_id, e.cause) for e in events] == [("a", RemovalCause.NOT_REVOKED)]
    r = h.heartbeat(member_id="b", member_epoch=2)
    assert r.member_epoch == 3 and h.names(r) == {"orders": {0, 1, 2, 3}}
    assert h.heartbeat(member_id="a", member_epoch=1).error is UnknownMemberIdError


def test_static_member_restart_keeps_its_partitions() -> None:
    h = ConsumerHarness({"orders": 4})
    h.join("a", instance_id="i-a")
    h.join("b", instance_id="i-b")
    h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1}})
    h.heartbeat(member_id="b", member_epoch=2)
    # the instance i-b restarts: temporary leave, a new member id comes back
    r = h.heartbeat(member_id="b", member_epoch=-2, instance_id="i-b")
    assert (r.error, r.member_epoch) == (None, -2)
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.group_epoch == 2  # no rebalance
    r = h.join("b2", instance_id="i-b")
    assert r.error is None and r.member_epoch == 2
    assert h.names(r) == {"orders": {2, 3}}
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.group_epoch == 2 and snap.member("b") is None


def test_static_member_errors() -> None:
    h = ConsumerHarness({"orders": 4})
    h.join("a", instance_id="i-a")
    # the instance id is held by a member that did not leave
    assert h.join("a2", instance_id="i-a").error is UnreleasedInstanceIdError
    # another member id for the instance
    assert (
        h.heartbeat(member_id="zz", member_epoch=1, instance_id="i-a").error
        is FencedInstanceIdError
    )
    assert h.heartbeat(member_id="a", member_epoch=1, instance_id="nope").error is (
        UnknownMemberIdError
    )
    # -2 requires an instance id
    assert h.heartbeat(member_id="a", member_epoch=-2).error is InvalidRequestError


def test_static_member_that_never_returns_expires() -> None:
    h = ConsumerHarness({"orders": 2})
    h.join("a", instance_id="i-a")
    h.heartbeat(member_id="a", member_epoch=-2, instance_id="i-a")
    h.advance(SESSION_MS)
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.state is ConsumerGroupState.EMPTY


def test_member_epoch_validation() -> None:
    h = ConsumerHarness({"orders": 4})
    _stable_pair(h)  # a: epoch 2, previous 1, owns 0, 1
    assert h.heartbeat(member_id="a", member_epoch=3).error is FencedMemberEpochError
    # the previous epoch with a subset of its assignment: the bump's response was lost
    r = h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0}})
    assert r.error is None and r.member_epoch == 2
    # the previous epoch owning more than it has: fenced
    r = h.heartbeat(member_id="a", member_epoch=1, owned={"orders": {0, 1, 2}})
    assert r.error is FencedMemberEpochError
    # the previous epoch without saying what it owns: fenced
    assert h.heartbeat(member_id="a", member_epoch=1).error is FencedMemberEpochError
    # an older one: fenced
    h.heartbeat(member_id="b", member_epoch=-1)
    h.heartbeat(member_id="a", member_epoch=2)  # -> 3, previous 2
    assert h.heartbeat(member_id="a", member_epoch=1, owned={}).error is FencedMemberEpochError
    # a fenced member rejoins under its id with epoch 0 (KAFKA-19233)
    r = h.join("a")
    assert r.error is None and r.member_epoch == 3
    assert h.names(r) == {"orders": {0, 1, 2, 3}}


def test_request_validation_codes() -> None:
    h = ConsumerHarness({"orders": 4})
    assert h.join("a", group_id="").error is InvalidRequestError
    assert h.join("").error is InvalidRequestError  # v1: the member makes its id
    assert h.join("a", rebalance_timeout_ms=-1).error is InvalidRequestError
    r = h.heartbeat(member_id="a", member_epoch=0, rebalance_timeout_ms=1, topic_partitions=())
    assert r.error is InvalidRequestError  # no subscription
    r = h.heartbeat(
        member_id="a",
        member_epoch=0,
        rebalance_timeout_ms=1,
        subscribed_topic_names=("orders",),
        owned={"orders": {0}},
    )
    assert r.error is InvalidRequestError  # owns something while joining
    assert h.heartbeat(member_id="a", member_epoch=-3).error is InvalidRequestError
    assert h.join("a", rack_id="").error is InvalidRequestError
    assert h.join("a", instance_id="").error is InvalidRequestError
    assert h.join("a", server_assignor="sticky").error is UnsupportedAssignorError
    r = h.join("a", subscribed_topic_names=None, subscribed_topic_regex="(a")
    assert r.error is InvalidRegularExpressionError
    # nothing above created anything
    assert h.coord.consumer_group_snapshot("g") is None
    # unknown group or member without joining
    assert h.heartbeat(member_id="a", member_epoch=1).error is GroupIdNotFoundError
    h.join("a")
    assert h.heartbeat(member_id="x", member_epoch=1).error is UnknownMemberIdError


def test_v0_gets_a_coordinator_made_member_id() -> None:
    h = ConsumerHarness({"orders": 1})
    r = h.join("", version=0)
    assert r.error is None and r.member_id and r.member_epoch == 1


def test_group_max_size() -> None:
    h = ConsumerHarness({"orders": 4}, {**_config(), "group.consumer.max.size": 1})
    h.join("a")
    assert h.join("b").error is GroupMaxSizeReachedError
    assert h.heartbeat(member_id="a", member_epoch=1).error is None


def test_regex_subscription_follows_new_topics() -> None:
    h = ConsumerHarness({"orders": 2, "payments": 2})
    r = h.join("a", subscribed_topic_names=None, subscribed_topic_regex="ord.*")
    assert h.names(r) == {"orders": {0, 1}}
    h.set_topics({"orders": 2, "payments": 2, "ordinals": 1})
    r = h.heartbeat(member_id="a", member_epoch=1)
    assert r.member_epoch == 2 and h.names(r) == {"orders": {0, 1}, "ordinals": {0}}


def test_partition_count_change_bumps_the_epoch() -> None:
    h = ConsumerHarness({"orders": 2})
    h.join("a")
    h.set_topics({"orders": 3})
    r = h.heartbeat(member_id="a", member_epoch=1)
    assert r.member_epoch == 2 and h.names(r) == {"orders": {0, 1, 2}}


def test_range_assignor_on_request() -> None:
    h = ConsumerHarness({"orders": 4, "payments": 4})
    topics = ("orders", "payments")
    h.join("a", topics, server_assignor="range")
    h.join("b", topics, server_assignor="range")
    snap = h.coord.consumer_group_snapshot("g")
    assert snap is not None
    targets = {m.member_id: m.target for m in snap.members}
    # range co-partitions: the same partitions of both topics go to the same member
    assert targets["a"]["orders"] == targets["a"]["payments"]
    assert targets["b"]["orders"] == targets["b"]["payments"]


def test_rack_and_subscription_changes() -> None:
    h = ConsumerHarness({"orders": 2, "payments": 2})
    h.join("a", rack_id="r1")
    r = h.heartbeat(member_id="a", member_epoch=1, subscribed_topic_names=("payments",))
    # orders are revoked first (the member did not say it let go: owned unknown)
    assert r.member_epoch == 1 and h.names(r) == {}
    r = h.heartbeat(member_id="a", member_epoch=1, owned={})
    assert r.member_epoch == 2 and h.names(r) == {"payments": {0, 1}}


def test_config_bounds() -> None:
    with pytest.raises(ConfigError, match=r"group\.consumer\.session\.timeout\.ms"):
        CoordinatorConfig.from_dict({"group.consumer.session.timeout.ms": 10})
    with pytest.raises(ConfigError, match="less than"):
        CoordinatorConfig.from_dict(
            {
                "group.consumer.session.timeout.ms": 1_000,
                "group.consumer.min.session.timeout.ms": 1_000,
                "group.consumer.heartbeat.interval.ms": 1_000,
                "group.consumer.min.heartbeat.interval.ms": 1_000,
            }
        )


def _config() -> dict[str, object]:
    from consumer_harness import CONFIG

    return dict(CONFIG)


# ------------------------------------------------------------------ coexistence, offsets


def _join_classic(h: ConsumerHarness, group_id: str) -> object:
    return h.shell.handle(
        JoinGroupRequest(
            version=9,
            correlation="j",
            group_id=group_id,
            session_timeout_ms=45_000,
            rebalance_timeout_ms=1_000,
            member_id="",
            protocol_type="consumer",
            protocols=(("range", b""),),
        ),
        h.now,
    )


def test_a_group_keeps_its_type() -> None:
    h = ConsumerHarness({"orders": 1})
    h.join("a", group_id="new")
    (resp,) = _join_classic(h, "new")
    assert resp.error is InconsistentGroupProtocolError
    assert h.coord.group_state("new") is None


def test_classic_group_with_members_refuses_consumer_heartbeats() -> None:
    h = ConsumerHarness({"orders": 1}, {**_config(), "group.initial.rebalance.delay.ms": 0})
    (resp,) = _join_classic(h, "old")
    member_id = resp.member_id
    h.shell.handle(
        JoinGroupRequest(
            version=9,
            correlation="j2",
            group_id="old",
            session_timeout_ms=45_000,
            rebalance_timeout_ms=1_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=(("range", b""),),
        ),
        h.now,
    )
    assert h.coord.group_state("old") is not None
    assert h.join("a", group_id="old").error is GroupIdNotFoundError


def test_empty_groups_change_type_and_keep_offsets() -> None:
    h = ConsumerHarness({"orders": 1})
    _commit(h, "g", epoch=-1, member_id="", version=9)  # a simple-consumer commit: classic
    assert h.coord.group_state("g") is not None
    r = h.join("a")
    assert r.error is None
    assert h.coord.group_state("g") is None
    assert h.coord.committed_offsets("g")[_tp()].committed_offset == 5
    h.heartbeat(member_id="a", member_epoch=-1)
    (resp,) = _join_classic(h, "g")  # the empty consumer group gives way
    assert resp.error is not InconsistentGroupProtocolError
    assert h.coord.consumer_group_snapshot("g") is None
    assert h.coord.committed_offsets("g")[_tp()].committed_offset == 5


def _tp() -> object:
    from groupcoord import TopicPartition

    return TopicPartition("orders", 0)


def _commit(h: ConsumerHarness, group_id: str, *, epoch: int, member_id: str, version: int):
    (resp,) = h.shell.handle(
        OffsetCommitRequest(
            version=version,
            correlation="c",
            group_id=group_id,
            generation_id_or_member_epoch=epoch,
            member_id=member_id,
            topics=(
                OffsetCommitRequestTopic(
                    name="orders",
                    partitions=(
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=5),
                    ),
                ),
            ),
        ),
        h.now,
    )
    return resp.topics[0].partitions[0].error


def test_offset_commit_checks_the_member_epoch() -> None:
    h = ConsumerHarness({"orders": 1})
    h.join("a")
    assert _commit(h, "g", epoch=1, member_id="a", version=9) is None
    assert _commit(h, "g", epoch=0, member_id="a", version=9) is StaleMemberEpochError
    assert _commit(h, "g", epoch=1, member_id="zz", version=9) is UnknownMemberIdError
    assert _commit(h, "g", epoch=1, member_id="a", version=8) is UnsupportedVersionError
    # admin commits only while the group is empty
    assert _commit(h, "g", epoch=-1, member_id="", version=9) is UnknownMemberIdError
    h.heartbeat(member_id="a", member_epoch=-1)
    assert _commit(h, "g", epoch=-1, member_id="", version=9) is None


def test_offset_fetch_checks_the_member_epoch() -> None:
    h = ConsumerHarness({"orders": 1})
    h.join("a")
    _commit(h, "g", epoch=1, member_id="a", version=9)

    def fetch(member_id: str | None, epoch: int) -> object:
        (resp,) = h.shell.handle(
            OffsetFetchRequest(
                version=9,
                correlation="f",
                groups=(
                    OffsetFetchRequestGroup(group_id="g", member_id=member_id, member_epoch=epoch),
                ),
            ),
            h.now,
        )
        return resp.groups[0]

    ok = fetch("a", 1)
    assert ok.error is None and ok.topics[0].partitions[0].committed_offset == 5
    assert fetch(None, -1).error is None
    assert fetch("a", 0).error is StaleMemberEpochError
    assert fetch("zz", 1).error is UnknownMemberIdError


def test_list_and_delete_consumer_groups() -> None:
    h = ConsumerHarness({"orders": 1})
    h.join("a")
    (resp,) = h.shell.handle(ListGroupsRequest(version=5, correlation="l"), h.now)
    assert [(g.group_id, g.group_type, g.group_state) for g in resp.groups] == [
        ("g", "consumer", "Stable")
    ]
    (resp,) = h.shell.handle(
        ListGroupsRequest(version=5, correlation="l2", types_filter=("classic",)), h.now
    )
    assert resp.groups == ()
    (resp,) = h.shell.handle(
        DeleteGroupsRequest(version=2, correlation="d", groups_names=("g",)), h.now
    )
    assert resp.results[0].error is NonEmptyGroupError
    h.heartbeat(member_id="a", member_epoch=-1)
    (resp,) = h.shell.handle(
        DeleteGroupsRequest(version=2, correlation="d2", groups_names=("g",)), h.now
    )
    assert resp.results[0].error is None
    assert h.coord.consumer_group_snapshot("g") is None


# ------------------------------------------------------------------ regex syntax


@pytest.mark.parametrize(
    "pattern",
    [
        "(a)\\1",
        "a(?=b)",
        "a(?!b)",
        "(?<=a)b",
        "(?<!a)b",
        "a*+",
        "a{2}+",
        "(?>a)",
        "\\Z",
        "[[:^alpha:]]",
        "\\pL",
        "[a",
    ],
)
def test_non_re2_syntax_is_refused(pattern: str) -> None:
    with pytest.raises(InvalidRegularExpressionError):
        compile_topic_regex(pattern)


@pytest.mark.parametrize(
    ("pattern", "topic", "matches"),
    [
        ("orders.*", "orders-eu", True),
        ("orders", "orders-eu", False),  # a full match, as re2j's matches()
        ("[[:digit:]]+", "123", True),
        ("a+?b", "aab", True),
        ("x\\z", "x", True),
        ("[]a]", "]", True),
    ],
)
def test_re2_syntax_matches_whole_names(pattern: str, topic: str, matches: bool) -> None:
    assert (compile_topic_regex(pattern).fullmatch(topic) is not None) is matches


def test_topic_ids_in_responses() -> None:
    h = ConsumerHarness({"orders": 1})
    r = h.join("a")
    assert r.assignment is not None and r.assignment[0].topic_id == topic_id("orders")
