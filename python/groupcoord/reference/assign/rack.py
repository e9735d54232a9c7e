"""Rack data for rack-aware assignment (KIP-881), as ``rust/src/assign/rack.rs`` holds it.

Rack names are interned in sorted order (so ties broken by rack id do not depend on the
caller's order); each member has one rack id or ``NO_RACK``; each dense partition a sorted
tuple of distinct replica rack ids.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.errors import InvalidAssignorInput

#: a member without a rack (no ``rack_id``, or ``""``: Java filters empty racks out too)
NO_RACK = -1


@dataclass(slots=True)
class Racks:
    names: list[str]
    #: per member index: its rack id, or ``NO_RACK``
    member_rack: list[int]
    #: per dense partition: its replica racks, ascending
    rows: list[tuple[int, ...]]

    def local(self, m: int, p: int) -> bool:
        """Member ``m`` has a rack and ``p`` has a replica there."""
        r = self.member_rack[m]
        return r != NO_RACK and _contains(self.rows[p], r)

    def mismatch(self, m: int, p: int) -> bool:
        """Java's ``racksMismatch``: ``m`` has a rack and ``p`` no replica there."""
        r = self.member_rack[m]
        return r != NO_RACK and not _contains(self.rows[p], r)

    def worth_using(self, members: Iterable[int], partitions: Sequence[int]) -> bool:
        """Java's ``useRackAwareAssignment``: some member racks hold replicas, and not
        every partition has replicas on every rack that holds any of them."""
        member_racks = {self.member_rack[m] for m in members} - {NO_RACK}
        if not member_racks:
            return False
        union: set[int] = set()
        for p in partitions:
            union.update(self.rows[p])
        if member_racks.isdisjoint(union):
            return False
        return any(len(self.rows[p]) != len(union) for p in partitions)

    def members_by_rack(self, members: Iterable[int]) -> list[list[int]]:
        by_rack: list[list[int]] = [[] for _ in self.names]
        for m in members:
            r = self.member_rack[m]
            if r != NO_RACK:
                by_rack[r].append(m)
        return by_rack


def _contains(row: tuple[int, ...], r: int) -> bool:
    i = bisect_left(row, r)
    return i < len(row) and row[i] == r


def read_partition_racks(
    partition_racks: Mapping[Any, Any] | None,
) -> list[tuple[str, int, list[str]]]:
    """``{(topic, partition): set of rack ids}`` as ``(topic, partition, racks)`` entries.

    Refuses what ``read_partition_racks`` in rust/src/bindings/assign_input.rs refuses,
    worded alike: keys that are not (str, int32) pairs, values that are not a set or
    frozenset of str (a bare str is the usual slip: ``{tp: "rack-a"}``).
    """
    entries: list[tuple[str, int, list[str]]] = []
    if partition_racks is None:
        return entries
    for key, value in partition_racks.items():
        pair = _topic_partition(key)
        if pair is None:
            raise InvalidAssignorInput(
                f"partition_racks keys must be (str, int32) pairs, got {key!r}"
            )
        topic, partition = pair
        if not isinstance(value, (set, frozenset)) or not all(isinstance(r, str) for r in value):
            raise InvalidAssignorInput(
                f"racks of {key!r} must be a set or frozenset of str, got {value!r}"
            )
        entries.append((topic, partition, list(value)))
    return entries


def _topic_partition(key: object) -> tuple[str, int] | None:
    """The rule of ``owned_claim`` (model.py) and of the Rust bindings: a 2-tuple (a
    TopicPartition is one) of a str and an int32 that is not a bool."""
    if isinstance(key, tuple) and len(key) == 2:
        topic, partition = key
        if (
            isinstance(topic, str)
            and isinstance(partition, int)
            and not isinstance(partition, bool)
            and -(2**31) <= partition < 2**31
        ):
            return topic, partition
    return None


def intern_racks(
    member_racks: Sequence[str | None],
    partition_racks: Sequence[tuple[int, list[str]]],
    num_partitions: int,
) -> Racks | None:
    """``member_racks`` in member-index order; ``partition_racks`` as (dense id, racks).
    None when no member has a rack or no partition has one."""
    if not partition_racks or not any(member_racks):
        return None
    names = sorted(
        {r for r in member_racks if r} | {r for _, racks in partition_racks for r in racks}
    )
    index = {name: i for i, name in enumerate(names)}
    rows: list[set[int]] = [set() for _ in range(num_partitions)]
    for p, racks in partition_racks:
        rows[p].update(index[r] for r in racks)
    return Racks(
        names=names,
        member_rack=[index[r] if r else NO_RACK for r in member_racks],
        rows=[tuple(sorted(row)) for row in rows],
    )
