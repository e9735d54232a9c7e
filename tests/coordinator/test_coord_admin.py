"""DescribeGroups, ListGroups and DeleteGroups; the state table; configuration."""

from __future__ import annotations

import pytest
from coord_harness import Harness, rebalance

from groupcoord.config import ConfigError, CoordinatorConfig
from groupcoord.coordinator import (
    TRANSITIONS,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupCoordinator,
    GroupState,
    IllegalStateTransition,
    ListGroupsRequest,
)
from groupcoord.coordinator.states import check_transition
from groupcoord.errors import GroupIdNotFoundError, NonEmptyGroupError, UnsupportedVersionError
from groupcoord.types import TopicPartition


def _describe(h: Harness, *groups: str, version: int = 5):
    return h.send(
        DescribeGroupsRequest(version=version, correlation=h.correlation(), groups=groups)
    )


def _list(h: Harness, version: int = 5, **kw):
    return h.send(ListGroupsRequest(version=version, correlation=h.correlation(), **kw))


def _delete(h: Harness, *groups: str):
    return h.send(DeleteGroupsRequest(version=2, correlation=h.correlation(), groups_names=groups))


def test_describe_stable_group_with_decoded_metadata_and_assignment() -> None:
    h = Harness()
    a = h.member("a", instance_id="ia", topics=("t", "u"))
    b = h.member("b", topics=("t", "u"))
    rebalance(h, [a, b])
    (g,) = _describe(h, "g").groups
    assert (g.error, g.group_state, g.protocol_type, g.protocol_data) == (
        None,
        "Stable",
        "consumer",
        "range",
    )
    by_id = {m.member_id: m for m in g.members}
    ma = by_id[a.member_id]
    assert ma.group_instance_id == "ia" and ma.client_id == "a" and ma.client_host
    assert ma.subscription is not None and tuple(ma.subscription.topics) == ("t", "u")
    assert ma.member_assignment == a.assignment
    assert ma.assignment is not None
    assert sorted(ma.assignment.partitions) == sorted(TopicPartition(*p) for p in a.partitions())
    assert by_id[b.member_id].assignment is not None


def test_describe_rebalancing_group_has_no_metadata() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    a.join()
    (g,) = _describe(h, "g").groups
    assert g.group_state == "PreparingRebalance" and g.protocol_data == ""
    assert all(m.member_metadata == b"" and m.subscription is None for m in g.members)


def test_describe_unknown_group_is_dead() -> None:
    h = Harness()
    (g,) = _describe(h, "nope", version=0).groups
    assert g.error is None and g.group_state == "Dead" and g.members == ()


def test_describe_v6_says_why_an_unknown_group_is_dead() -> None:
    # KIP-1043: from v6 a group that is not there is GROUP_ID_NOT_FOUND with Kafka's message;
    # a known classic group is described as before, with no message
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    nope, g = _describe(h, "nope", "g", version=6).groups
    assert (nope.error, nope.error_message, nope.group_state) == (
        GroupIdNotFoundError,
        "Group nope not found.",
        "Dead",
    )
    assert (g.error, g.error_message, g.group_state) == (None, None, "Stable")


def test_describe_non_consumer_group_does_not_decode() -> None:
    h = Harness()
    a = h.member("a", protocol_type="connect", protocols=(("default", b"\xff\x00"),))
    rebalance(h, [a])
    (g,) = _describe(h, "g").groups
    assert g.members[0].member_metadata == b"\xff\x00" and g.members[0].subscription is None


def test_list_groups_with_state_and_type_filters() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    h.member("s", group_id="simple").commit(
        {("t", 0): 1}, generation_id_or_member_epoch=-1, member_id=""
    )
    listed = {g.group_id: g for g in _list(h).groups}
    assert listed["g"].group_state == "Stable" and listed["g"].protocol_type == "consumer"
    assert listed["simple"].group_state == "Empty" and listed["simple"].protocol_type == ""
    assert [g.group_id for g in _list(h, states_filter=("stable",)).groups] == ["g"]
    assert [g.group_id for g in _list(h, states_filter=("Empty",)).groups] == ["simple"]
    assert _list(h, types_filter=("consumer",)).groups == ()
    assert len(_list(h, types_filter=("Classic",)).groups) == 2
    assert len(_list(h, version=0).groups) == 2
    with pytest.raises(UnsupportedVersionError):
        ListGroupsRequest(version=3, states_filter=("stable",))


def test_delete_groups_non_empty_not_found_and_deleted() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    s = h.member("s", group_id="simple")
    s.commit({("t", 0): 1}, generation_id_or_member_epoch=-1, member_id="")
    resp = _delete(h, "g", "simple", "nope", "simple")
    assert [(r.group_id, r.error) for r in resp.results] == [
        ("g", NonEmptyGroupError),
        ("simple", None),
        ("nope", GroupIdNotFoundError),
    ]
    assert h.coord.snapshot("simple") is None
    assert s.fetch({"t": [0]}).topics[0].partitions[0].committed_offset == -1
    (d,) = _describe(h, "simple").groups
    assert d.group_state == "Dead"
    a.leave()
    assert [r.error for r in _delete(h, "g").results] == [None]
    assert h.coord.next_deadline() is None


# ---------------------------------------------------------------------------- states


def test_transition_table_is_kafkas() -> None:
    e, p, c, s, d = (
        GroupState.EMPTY,
        GroupState.PREPARING_REBALANCE,
        GroupState.COMPLETING_REBALANCE,
        GroupState.STABLE,
        GroupState.DEAD,
    )
    assert dict(TRANSITIONS) == {
        e: {p, d},
        p: {c, e, d},
        c: {p, s, d},
        s: {p, d},
        d: {d},
    }


def test_illegal_transition_raises_one_clear_error() -> None:
    with pytest.raises(IllegalStateTransition, match="Empty -> Stable"):
        check_transition("g", GroupState.EMPTY, GroupState.STABLE)
    check_transition("g", GroupState.STABLE, GroupState.PREPARING_REBALANCE)


# ---------------------------------------------------------------------------- config


def test_config_defaults_are_kafkas() -> None:
    c = CoordinatorConfig()
    assert c.to_dict() == {
        "group.min.session.timeout.ms": 6000,
        "group.max.session.timeout.ms": 1_800_000,
        "group.initial.rebalance.delay.ms": 3000,
        "group.max.size": 2**31 - 1,
        "offset.metadata.max.bytes": 4096,
        "group.consumer.session.timeout.ms": 45_000,
        "group.consumer.min.session.timeout.ms": 45_000,
        "group.consumer.max.session.timeout.ms": 60_000,
        "group.consumer.heartbeat.interval.ms": 5_000,
        "group.consumer.min.heartbeat.interval.ms": 5_000,
        "group.consumer.max.heartbeat.interval.ms": 15_000,
        "group.consumer.max.size": 2**31 - 1,
        "offsets.retention.minutes": 10_080,
        "offsets.retention.check.interval.ms": 600_000,
        "new_member_join_timeout_ms": 300_000,
    }


def test_config_from_dict_and_validation() -> None:
    c = CoordinatorConfig.from_dict({"group.max.size": "5", "group.min.session.timeout.ms": 10})
    assert c.group_max_size == 5 and c.group_min_session_timeout_ms == 10
    with pytest.raises(ConfigError, match="unknown"):
        CoordinatorConfig.from_dict({"session.timeout.ms": 1})
    with pytest.raises(ConfigError, match=r"group\.max\.size"):
        CoordinatorConfig.from_dict({"group.max.size": 0})
    with pytest.raises(ConfigError, match="must not exceed"):
        CoordinatorConfig.from_dict({"group.min.session.timeout.ms": 2_000_000})
    with pytest.raises(ConfigError, match="integer"):
        CoordinatorConfig.from_dict({"group.max.size": "many"})
    with pytest.raises(ValueError):
        GroupCoordinator(config={"offset.metadata.max.bytes": -1})


def test_time_must_not_go_backwards() -> None:
    coord = GroupCoordinator(now_ms=100)
    with pytest.raises(ValueError, match="backwards"):
        coord.tick(99)
    with pytest.raises(TypeError):
        coord.handle(object(), 100)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="out of order"):
        coord.persisted(1, True, 100)  # no batch was handed out
