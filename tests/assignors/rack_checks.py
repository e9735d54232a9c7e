"""Hypothesis strategies for rack-aware assignment (KIP-881): groups whose members carry
``rack_id`` and whose partitions carry replica racks, and wrong ``partition_racks`` input."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from assign_checks import Group, groups
from hypothesis import strategies as st

from groupcoord import TopicPartition

#: member racks are drawn from the first three; "r3" holds replicas but no member, so
#: some partitions have no rack-local member at all
RACKS = ("r0", "r1", "r2", "r3")


@dataclass(frozen=True)
class RackedGroup:
    group: Group
    partition_racks: dict[TopicPartition, frozenset[str]]


def rack_everything(group: Group, rnd: random.Random, disjoint: bool = False) -> RackedGroup:
    """Each member in one of three racks (or none: ``None`` or ``""``), each partition on a
    random subset of four. ``disjoint``: replica racks no member is in."""
    subscriptions = {
        m: replace(sub, rack_id=rnd.choice(["r0", "r1", "r2", None, ""]))
        for m, sub in group.subscriptions.items()
    }
    partition_racks = {}
    for topic, count in group.partitions_per_topic.items():
        for p in range(count):
            if rnd.random() < 0.9:  # some partitions have no known racks
                pool = ("x0", "x1") if disjoint else RACKS
                partition_racks[TopicPartition(topic, p)] = frozenset(
                    r for r in pool if rnd.random() < 0.5
                )
    return RackedGroup(Group(group.partitions_per_topic, subscriptions), partition_racks)


@st.composite
def racked_groups(draw: st.DrawFn, *, disjoint: bool = False, **kwargs: object) -> RackedGroup:
    group = draw(groups(**kwargs))  # type: ignore[arg-type]
    return rack_everything(group, random.Random(draw(st.integers(0, 2**32))), disjoint)


_pairs = st.one_of(
    st.builds(TopicPartition, st.sampled_from(["a", "b", "ghost"]), st.integers(-1, 5)),
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
)
_wrong_keys = st.one_of(
    st.tuples(
        st.sampled_from(["a", "b"]), st.one_of(st.booleans(), st.just(2**31), st.text(max_size=1))
    ),
    st.tuples(st.integers(0, 3), st.integers(0, 3)),
    st.text(max_size=3),
    st.integers(0, 3),
    st.tuples(st.sampled_from(["a"]), st.integers(0, 2), st.integers(0, 2)),
)
_rack_sets = st.frozensets(st.sampled_from(["r0", "r1", ""]), max_size=2)
_wrong_values = st.one_of(
    st.text(max_size=3),  # {tp: "r0"}, the usual slip
    st.lists(st.sampled_from(["r0", "r1"]), max_size=2),
    st.frozensets(st.integers(0, 3), min_size=1, max_size=2),
    st.none(),
    st.integers(0, 3),
)


def wrong_partition_racks() -> st.SearchStrategy[object]:
    """``partition_racks`` with wrong keys, wrong values, or not a mapping at all."""
    key = st.integers(0, 7).flatmap(lambda i: _wrong_keys if i == 7 else _pairs)
    value = st.integers(0, 7).flatmap(lambda i: _wrong_values if i == 7 else _rack_sets)
    return st.one_of(
        st.none(),
        st.dictionaries(key, value, max_size=4),
        st.lists(st.tuples(_pairs, _rack_sets), max_size=2),
        st.text(max_size=2),
    )
