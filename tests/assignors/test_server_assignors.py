"""KIP-848 server-side assignors (``groupcoord.assignors.server``): uniform and range.

Rust and the reference agree (with and without racks and a current assignment); results
are valid, balanced, deterministic, and sticky when a member joins or leaves; racks never
change balance; range is the classic range's output.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord import RangeAssignor as ClassicRange
from groupcoord import Subscription, TopicPartition, _core
from groupcoord.assignors.server import (
    GroupTarget,
    RangeAssignor,
    ServerAssignor,
    ServerMember,
    TargetAssignment,
    UniformAssignor,
)
from groupcoord.errors import InvalidAssignorInput

SERVER = [UniformAssignor, RangeAssignor]
TP = TopicPartition
Target = dict[str, dict[str, tuple[int, ...]]]


@dataclass(frozen=True)
class ServerGroup:
    topics: dict[str, int]
    members: dict[str, ServerMember]
    current: dict[str, dict[str, list[int]]]
    partition_racks: dict[TopicPartition, frozenset[str]]


@st.composite
def server_groups(
    draw: st.DrawFn,
    *,
    max_members: int = 40,
    max_topics: int = 8,
    max_partitions: int = 40,
    racks: bool | None = None,
) -> ServerGroup:
    rnd = random.Random(draw(st.integers(0, 2**64)))
    topics = {
        f"t{i}": rnd.randint(0, max_partitions) for i in range(draw(st.integers(1, max_topics)))
    }
    same = draw(st.booleans())
    racked = draw(st.booleans()) if racks is None else racks
    members = {}
    for m in range(draw(st.integers(1, max_members))):
        subscribed = list(topics) if same else [t for t in topics if rnd.random() < 0.5]
        rack = rnd.choice(["r0", "r1", "r2", None]) if racked else None
        instance = f"i{rnd.randrange(100)}-{m}" if rnd.random() < 0.2 else None
        members[f"m{rnd.randrange(10**6):06d}-{m}"] = ServerMember(subscribed, rack, instance)
    # a current assignment: each partition held by at most one random member (some by none)
    current: dict[str, dict[str, list[int]]] = {}
    ids = [*members, "gone"]
    for t, n in topics.items():
        for p in range(n):
            if rnd.random() < 0.6:
                current.setdefault(rnd.choice(ids), {}).setdefault(t, []).append(p)
    partition_racks = {}
    if racked:
        for t, n in topics.items():
            for p in range(n):
                partition_racks[TP(t, p)] = frozenset(
                    r for r in ("r0", "r1", "r2", "r3") if rnd.random() < 0.4
                )
    return ServerGroup(topics, members, current, partition_racks)


def run(cls: type[ServerAssignor], g: ServerGroup, backend: str = "rust", **kw: Any) -> Target:
    kw.setdefault("current", g.current)
    kw.setdefault("partition_racks", g.partition_racks)
    return cls(backend=backend).assign(g.members, g.topics, **kw)  # type: ignore[arg-type]


def pairs(target: Target, member: str) -> set[TopicPartition]:
    return {TP(t, p) for t, ps in target[member].items() for p in ps}


def check_valid(g: ServerGroup, target: Target) -> None:
    assert set(target) == set(g.members)
    seen: set[TopicPartition] = set()
    for m, assignment in target.items():
        for t, ps in assignment.items():
            assert isinstance(ps, tuple) and ps and list(ps) == sorted(ps), (m, t, ps)
            assert t in g.members[m].topics
            for p in ps:
                assert 0 <= p < g.topics[t] and TP(t, p) not in seen
                seen.add(TP(t, p))
    wanted = {
        TP(t, p)
        for mm in g.members.values()
        for t in mm.topics
        if t in g.topics
        for p in range(g.topics[t])
    }
    assert seen == wanted


def check_balanced(g: ServerGroup, target: Target) -> None:
    loads = {m: sum(map(len, a.values())) for m, a in target.items()}
    if len({frozenset(mm.topics) for mm in g.members.values()}) == 1:
        assert max(loads.values()) - min(loads.values()) <= 1, loads
    for small, s in loads.items():
        for large, big in loads.items():
            if big - s >= 2:
                assert not set(target[large]) & set(g.members[small].topics), (large, small)


@pytest.mark.parametrize("cls", SERVER)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups())
def test_rust_and_reference_agree(cls: type[ServerAssignor], g: ServerGroup) -> None:
    assert run(cls, g, "rust") == run(cls, g, "python")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups(max_members=12, max_partitions=30), data=st.data())
def test_rust_and_reference_read_an_untidy_current_alike(
    g: ServerGroup, data: st.DataObject
) -> None:
    """`current` as callers may pass it: topics out of order, partitions repeated, out of
    range or unsorted, lists or tuples, and one tuple object held by several members (as
    results share them; Rust reads a long tuple once per call and takes claims read in
    ascending order as dense ids): both backends read the same claims from it."""
    rnd = random.Random(data.draw(st.integers(0, 2**64)))
    shared: list[tuple[int, ...]] = []
    current: dict[str, dict[str, Any]] = {}
    for m, held in g.current.items():
        items = list(held.items()) + [("deleted", [0, 1])] * (rnd.random() < 0.1)
        if rnd.random() < 0.5:
            rnd.shuffle(items)
        untidy: dict[str, Any] = {}
        for t, ps in items:
            ps = list(ps)
            if rnd.random() < 0.3:
                ps.append(rnd.choice([-1, g.topics.get(t, 0), g.topics.get(t, 0) + 3, *ps, 0]))
            if rnd.random() < 0.2:
                rnd.shuffle(ps)
            if rnd.random() < 0.15:
                ps = list(range(g.topics.get(t, 0) + rnd.choice([0, 2])))  # a long run
            if shared and rnd.random() < 0.3:
                untidy[t] = rnd.choice(shared)  # another member's tuple, claims and all
            elif rnd.random() < 0.7:
                untidy[t] = tuple(ps)
                shared.append(untidy[t])
            else:
                untidy[t] = ps
        current[m] = untidy
    for cls in SERVER:
        assert run(cls, g, "rust", current=current) == run(cls, g, "python", current=current)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups())
def test_uniform_is_valid_balanced_and_a_fixed_point(g: ServerGroup) -> None:
    target = run(UniformAssignor, g)
    check_valid(g, target)
    check_balanced(g, target)
    assert run(UniformAssignor, g, current=target) == target


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups(racks=False), data=st.data())
def test_uniform_is_sticky_when_a_member_leaves_or_joins(
    g: ServerGroup, data: st.DataObject
) -> None:
    settled = run(UniformAssignor, g, current={})
    leaver = data.draw(st.sampled_from(sorted(g.members)))
    rest = {m: mm for m, mm in g.members.items() if m != leaver}
    if rest:
        after = UniformAssignor().assign(rest, g.topics, current=settled)
        g2 = ServerGroup(g.topics, rest, settled, {})
        check_valid(g2, after)
        check_balanced(g2, after)
        homogeneous = len({frozenset(mm.topics) for mm in rest.values()}) == 1
        if homogeneous:
            # every survivor keeps min(what it had, its new quota): only the leaver's
            # partitions and the overflow move
            total = sum(map(len, after.values())) and sum(len(pairs(after, m)) for m in rest)
            quota = -(-total // len(rest))
            for m in rest:
                kept = pairs(settled, m) & pairs(after, m)
                assert len(kept) >= min(len(pairs(settled, m)), quota - 1), m
    joiner = ServerMember(next(iter(g.members.values())).topics)
    grown = {**g.members, "zz-new": joiner}
    after = UniformAssignor().assign(grown, g.topics, current=settled)
    g3 = ServerGroup(g.topics, grown, settled, {})
    check_valid(g3, after)
    check_balanced(g3, after)
    if len({frozenset(mm.topics) for mm in grown.values()}) == 1:
        total = sum(len(pairs(after, m)) for m in grown)
        low = total // len(grown)
        for m in g.members:
            # nobody gives up more than it must to feed the joiner
            assert len(pairs(settled, m) & pairs(after, m)) >= min(len(pairs(settled, m)), low)


@pytest.mark.parametrize("cls", SERVER)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups(), seed=st.integers())
def test_deterministic_whatever_the_input_order(
    cls: type[ServerAssignor], g: ServerGroup, seed: int
) -> None:
    rnd = random.Random(seed)
    members = list(g.members.items())
    rnd.shuffle(members)
    topics = list(g.topics.items())
    rnd.shuffle(topics)
    shuffled = cls().assign(
        dict(members), dict(topics), current=g.current, partition_racks=g.partition_racks
    )
    assert shuffled == run(cls, g)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups(racks=True))
def test_rack_preference_never_breaks_balance(g: ServerGroup) -> None:
    with_racks = run(UniformAssignor, g)
    check_valid(g, with_racks)
    check_balanced(g, with_racks)
    if len({frozenset(mm.topics) for mm in g.members.values()}) == 1:
        # the same quota per member as without racks (member order decides who gets one more)
        without = run(UniformAssignor, g, partition_racks=None)
        assert {m: sum(map(len, a.values())) for m, a in with_racks.items()} == {
            m: sum(map(len, a.values())) for m, a in without.items()
        }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups())
def test_range_is_the_classic_range(g: ServerGroup) -> None:
    subs = {
        m: Subscription(list(mm.topics), rack_id=mm.rack, group_instance_id=mm.instance_id)
        for m, mm in g.members.items()
    }
    classic = ClassicRange().assign(g.topics, subs, partition_racks=g.partition_racks)
    expected: dict[str, dict[str, list[int]]] = {m: {} for m in g.members}
    for m, a in classic.items():
        for tp in a.partitions:
            expected[m].setdefault(tp.topic, []).append(tp.partition)
    got = run(RangeAssignor, g)
    assert {m: {t: list(ps) for t, ps in a.items()} for m, a in got.items()} == expected


def test_uniform_fresh_deals_contiguous_ranges_as_kafka() -> None:
    members = {m: ServerMember(["a", "b"]) for m in ("m1", "m2", "m3")}
    for backend in ("rust", "python"):
        target = UniformAssignor(backend=backend).assign(members, {"a": 4, "b": 3})
        assert target == {"m1": {"a": (0, 1, 2)}, "m2": {"a": (3,), "b": (0,)}, "m3": {"b": (1, 2)}}


def test_uniform_prefers_rack_local_members() -> None:
    members = {"m1": ServerMember(["t"], rack="x"), "m2": ServerMember(["t"], rack="y")}
    racks = {TP("t", p): frozenset({"y" if p % 2 == 0 else "x"}) for p in range(4)}
    for backend in ("rust", "python"):
        target = UniformAssignor(backend=backend).assign(members, {"t": 4}, partition_racks=racks)
        assert target == {"m1": {"t": (1, 3)}, "m2": {"t": (0, 2)}}


def test_members_that_left_and_unknown_topics_in_current_are_ignored() -> None:
    members = {"m1": ServerMember(["t"])}
    current: TargetAssignment = {"gone": {"t": [0]}, "m1": {"t": [1, 7], "deleted": [0]}}
    for backend in ("rust", "python"):
        assert UniformAssignor(backend=backend).assign(members, {"t": 2}, current=current) == {
            "m1": {"t": (0, 1)}
        }


@pytest.mark.parametrize(
    ("members", "current", "message"),
    [
        ({"m": ["t"]}, None, "member 'm' must be a ServerMember, got list"),
        ({"": ServerMember(["t"])}, None, "member ids must be non-empty strings"),
        ({"m": ServerMember(["t"])}, {"m": [0]}, "current assignment of 'm' must be a mapping"),
        (
            {"m": ServerMember(["t"])},
            {"m": {"t": [True]}},
            r"partitions of 'm' in current must be int32, got True in topic 't'",
        ),
        ({"m": ServerMember(["t"])}, {"m": {"t": [2**31]}}, "must be int32"),
        ({"m": ServerMember(["t"])}, {"m": {0: [1]}}, "must map topic names"),
    ],
)
def test_bad_input_is_refused_alike(members: Any, current: Any, message: str) -> None:
    for backend in ("rust", "python"):
        with pytest.raises(InvalidAssignorInput, match=message):
            UniformAssignor(backend=backend).assign(members, {"t": 2}, current=current)


def test_server_member_checks_its_fields() -> None:
    with pytest.raises(InvalidAssignorInput, match="collection of str"):
        ServerMember("orders")
    with pytest.raises(InvalidAssignorInput, match="rack must be str or None"):
        ServerMember(["t"], rack=3)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", SERVER, ids=lambda c: c.name)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=server_groups(max_members=25), data=st.data())
def test_a_kept_target_is_assign_with_the_previous_result_as_current(
    cls: type[ServerAssignor], g: ServerGroup, data: st.DataObject
) -> None:
    """GroupTarget (both backends) over a run of changes (members leave, join, resubscribe,
    change instance ids; topics grow, vanish, appear; nothing changes) gives what
    assign(current=previous result) gives, fresh each time. The Rust backend's kept
    target is incremental while the topics stay the same (kept partitions as dense ids,
    unchanged members' dicts copied), so most steps keep the topics; callers changing
    the results they got must not change what comes next."""
    kept = {b: GroupTarget(cls(backend=b)) for b in ("rust", "python")}
    members, topics = dict(g.members), dict(g.topics)
    racks = g.partition_racks if data.draw(st.booleans()) else None
    previous: Target | None = None
    changes = ["leave", "join", "resubscribe", "static", "same", "grow", "drop", "add"]
    for step in range(data.draw(st.integers(1, 10))):
        want = cls().assign(members, topics, current=previous, partition_racks=racks)
        for target in kept.values():
            got = target.assign(members, topics, partition_racks=racks)
            assert got == want
            # what a caller does with its result is its own business
            for assignment in got.values():
                assignment.clear()
                assignment["vandal"] = (step,)
            got.clear()
        previous = want
        change = data.draw(
            st.sampled_from(changes[:5] if data.draw(st.integers(0, 3)) else changes[5:])
        )
        if change == "leave" and len(members) > 1:
            members.pop(data.draw(st.sampled_from(sorted(members))))
        elif change == "join":
            subscribed = data.draw(st.sets(st.sampled_from(sorted(topics))))
            members[f"new-{step}-{len(members)}"] = ServerMember(subscribed)
        elif change == "resubscribe":
            m = data.draw(st.sampled_from(sorted(members)))
            members[m] = ServerMember(sorted(topics)[-1:], members[m].rack, members[m].instance_id)
        elif change == "static":
            m = data.draw(st.sampled_from(sorted(members)))
            instance = data.draw(st.sampled_from([None, "i00", "i99"]))
            members[m] = ServerMember(members[m].topics, members[m].rack, instance)
        elif change == "grow":
            t = data.draw(st.sampled_from(sorted(topics)))
            topics[t] += data.draw(st.integers(1, 5))
        elif change == "drop" and len(topics) > 1:
            topics.pop(data.draw(st.sampled_from(sorted(topics))))
        elif change == "add":
            topics[f"t-new-{step}"] = data.draw(st.integers(0, 6))


@pytest.mark.parametrize("cls", SERVER, ids=lambda c: c.name)
def test_results_list_members_and_topics_in_the_reference_order(
    cls: type[ServerAssignor],
) -> None:
    """Not only equal dicts: the same iteration order as the reference (member order,
    topics ascending), also for range's members holding one partition of forty topics,
    whose dicts Rust builds with dict.fromkeys, and through a kept target."""
    topics = {f"t{i:02d}": 3 for i in reversed(range(40))}
    members = {f"m{i}": ServerMember(list(topics)) for i in reversed(range(5))}
    want = cls(backend="python").assign(members, topics)
    target = GroupTarget(cls())
    for got in (cls().assign(members, topics), target.assign(members, topics)):
        assert got == want
        assert list(got) == list(want)
        assert [list(d) for d in got.values()] == [list(d) for d in want.values()]
    again = target.assign(members, topics)  # every member's dict a copy of a kept one
    assert [list(d) for d in again.values()] == [list(d) for d in want.values()]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.integers(0, 200), min_size=1, max_size=3),
    size=st.integers(1, 30),
    data=st.data(),
)
def test_uniform_on_long_topics_rust_and_reference_agree_through_joins_and_leaves(
    sizes: list[int], size: int, data: st.DataObject
) -> None:
    """Homogeneous groups on topics past 64 partitions (where Rust's list path takes
    whole bitmap words), kept targets of both backends through joins and leaves."""
    topics = {f"t{i}": n for i, n in enumerate(sizes)}
    members = {f"m{i:02d}": ServerMember(list(topics)) for i in range(size)}
    kept = {b: GroupTarget(UniformAssignor(backend=b)) for b in ("rust", "python")}
    for step in range(data.draw(st.integers(1, 6))):
        rust, reference = (kept[b].assign(members, topics) for b in ("rust", "python"))
        assert rust == reference
        if data.draw(st.booleans()) and len(members) > 1:
            members.pop(data.draw(st.sampled_from(sorted(members))))
        else:
            members[f"j{step}"] = ServerMember(list(topics))


class _Dict(dict[str, Any]):
    pass


def test_plain_current_is_true_only_for_dicts_of_dicts_with_str_keys() -> None:
    """The Rust check that lets ServerAssignor.assign skip its topic-by-topic one: True
    only where that one finds nothing (False just hands the question back)."""
    assert _core.plain_current({})
    assert _core.plain_current({"m": {"t": (0, 1)}, "n": {}, "o": {"u": "anything"}})
    assert not _core.plain_current({"m": {"t": (0,)}, "n": {1: (0,)}})
    assert not _core.plain_current({"m": [0]})
    assert not _core.plain_current({"m": _Dict(t=(0,))})  # a subclass may iterate otherwise


def test_a_kept_target_refuses_bad_input_and_keeps_the_previous_one() -> None:
    target = GroupTarget(UniformAssignor())
    members = {"a": ServerMember(["t"]), "b": ServerMember(["t"])}
    first = target.assign(members, {"t": 4})
    with pytest.raises(InvalidAssignorInput):
        target.assign({"a": "not a member"}, {"t": 4})  # type: ignore[dict-item]
    with pytest.raises(InvalidAssignorInput):
        target.assign(members, {"t": -1})
    # unchanged: the kept target is still the first result
    assert target.assign(members, {"t": 4}) == first
    assert target.assign({"a": ServerMember(["t"])}, {"t": 4}) == {"a": {"t": (0, 1, 2, 3)}}
    target.clear()
    assert "GroupTarget" in repr(target)
    with pytest.raises(InvalidAssignorInput, match="server-side assignor"):
        GroupTarget(ClassicRange())  # type: ignore[arg-type]


def test_range_reads_nothing_of_current_but_its_type() -> None:
    """Range ignores ``current`` (as Kafka's), so only its type is checked: contents that
    uniform refuses do not change range's answer, on either backend or a kept target."""
    members = {"m1": ServerMember(["t"]), "m2": ServerMember(["t"])}
    unread: Any = {"m1": [0], "m2": {0: [True]}}
    expected = {"m1": {"t": (0,)}, "m2": {"t": (1,)}}
    for backend in ("rust", "python"):
        assert RangeAssignor(backend=backend).assign(members, {"t": 2}, current=unread) == expected
        assert (
            GroupTarget(RangeAssignor(backend=backend)).assign(members, {"t": 2}, current=unread)
            == expected
        )
        with pytest.raises(InvalidAssignorInput, match="current must be a mapping"):
            RangeAssignor(backend=backend).assign(members, {"t": 2}, current=[("m1", 0)])  # type: ignore[arg-type]
        with pytest.raises(InvalidAssignorInput, match="current assignment of 'm1'"):
            UniformAssignor(backend=backend).assign(members, {"t": 2}, current=unread)
