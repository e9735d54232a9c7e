"""MemberConfig validation, protocol choice, the state table and the listener."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.assignors import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
)
from groupcoord.assignors.base import Assignor
from groupcoord.config import ConfigError
from groupcoord.member import (
    CallbackKind,
    IllegalMemberTransition,
    ListenerCall,
    MemberConfig,
    MemberState,
    RebalanceListener,
    choose_protocol,
)
from groupcoord.member.states import TRANSITIONS, check_transition
from groupcoord.types import TopicPartition

ALL: list[Assignor] = [
    RangeAssignor(),
    RoundRobinAssignor(),
    StickyAssignor(),
    CooperativeStickyAssignor(),
]


def _config(**kw: object) -> MemberConfig:
    base: dict[str, object] = {"group_id": "g", "topics": ["t"], "assignors": [RangeAssignor()]}
    base.update(kw)
    return MemberConfig(**base)  # type: ignore[arg-type]


def test_defaults_are_kafkas_and_rebalance_timeout_is_max_poll_interval() -> None:
    c = _config()
    assert (c.session_timeout_ms, c.heartbeat_interval_ms, c.max_poll_interval_ms) == (
        45_000,
        3_000,
        300_000,
    )
    assert c.rebalance_timeout_ms == 300_000 and not c.is_static
    assert c.topics == ("t",) and c.rebalance_protocol is RebalanceProtocol.EAGER


@pytest.mark.parametrize(
    ("kw", "fragment"),
    [
        ({"group_id": ""}, "group.id"),
        ({"topics": "t"}, "single str"),
        ({"topics": []}, "topics"),
        ({"assignors": []}, "at least one"),
        ({"assignors": ["range"]}, "Assignor instances"),
        ({"assignors": [RangeAssignor(), RangeAssignor()]}, "twice"),
        ({"heartbeat_interval_ms": 3_000, "session_timeout_ms": 3_000}, "lower than"),
        ({"session_timeout_ms": 0}, "session.timeout.ms"),
        ({"max_poll_interval_ms": -1}, "max.poll.interval.ms"),
        ({"heartbeat_interval_ms": True}, "heartbeat.interval.ms"),
        ({"retry_backoff_ms": -5}, "retry.backoff.ms"),
        ({"group_instance_id": ""}, "group.instance.id"),
        ({"group_instance_id": "bad id!"}, "group.instance.id"),
        ({"group_instance_id": "x" * 250}, "group.instance.id"),
        ({"max_versions": {11: -1}}, "max_versions"),
        ({"max_versions": [1]}, "max_versions"),
    ],
)
def test_invalid_settings_raise_config_error_naming_the_setting(
    kw: dict[str, object], fragment: str
) -> None:
    with pytest.raises(ConfigError, match=fragment):
        _config(**kw)


def test_config_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        _config(session_timeout_ms=10, heartbeat_interval_ms=20)


def test_protocol_choice_takes_the_most_advanced_common_protocol() -> None:
    coop = CooperativeStickyAssignor()
    assert choose_protocol([coop]) is RebalanceProtocol.COOPERATIVE
    # first bounce of the upgrade: cooperative-sticky announced first, behaviour still eager
    assert choose_protocol([coop, RangeAssignor()]) is RebalanceProtocol.EAGER
    assert choose_protocol([RangeAssignor(), coop]) is RebalanceProtocol.EAGER


@given(st.lists(st.sampled_from(ALL), min_size=1, max_size=4, unique_by=lambda a: a.name))
def test_protocol_choice_is_supported_by_every_assignor_and_maximal(
    assignors: list[Assignor],
) -> None:
    chosen = choose_protocol(assignors)
    assert all(chosen in a.supported_protocols for a in assignors)
    everyone_cooperative = all(
        RebalanceProtocol.COOPERATIVE in a.supported_protocols for a in assignors
    )
    assert (chosen is RebalanceProtocol.COOPERATIVE) == everyone_cooperative


def test_assignors_without_a_common_protocol_are_refused() -> None:
    class CooperativeOnly(CooperativeStickyAssignor):
        name = "coop-only"
        supported_protocols = (RebalanceProtocol.COOPERATIVE,)

    with pytest.raises(ConfigError, match="no rebalance protocol in common"):
        choose_protocol([CooperativeOnly(), RangeAssignor()])


@pytest.mark.parametrize("source", list(MemberState))
@pytest.mark.parametrize("target", list(MemberState))
def test_state_table_allows_exactly_its_transitions(
    source: MemberState, target: MemberState
) -> None:
    if target is source or target in TRANSITIONS[source]:
        check_transition(source, target)
    else:
        with pytest.raises(IllegalMemberTransition, match=source.value):
            check_transition(source, target)


def test_closed_is_terminal_and_every_live_state_can_close_or_fail() -> None:
    assert TRANSITIONS[MemberState.CLOSED] == frozenset()
    for state in MemberState:
        if state not in (MemberState.CLOSED, MemberState.FATAL):
            assert {MemberState.CLOSED, MemberState.FATAL} <= TRANSITIONS[state]


def test_listener_call_delivers_to_the_matching_hook() -> None:
    seen: list[tuple[str, frozenset[TopicPartition]]] = []

    class Recorder(RebalanceListener):
        def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
            seen.append(("revoked", partitions))

        def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
            seen.append(("assigned", partitions))

        def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
            seen.append(("lost", partitions))

    ps = frozenset({TopicPartition("t", 1)})
    for kind in CallbackKind:
        ListenerCall(kind=kind, partitions=ps).deliver(Recorder())
    assert seen == [("revoked", ps), ("assigned", ps), ("lost", ps)]
    RebalanceListener().on_partitions_lost(ps)  # the base class hooks do nothing


def test_configs_are_hashable_and_compare_by_value() -> None:
    assignor = RangeAssignor()
    a = _config(assignors=[assignor], max_versions={11: 5})
    b = _config(assignors=[assignor], max_versions={11: 5})
    assert a == b and hash(a) == hash(b)
    assert a != _config(assignors=[assignor], max_versions={11: 4})
