"""StickyAssignor (KIP-54): balance first, then keep as many owned partitions as possible.

The pipeline, the same step for step in ``rust/src/assign/sticky.rs``:

1. ``resolve_previous_owners``: one previous owner per partition, judged by generation
   (KAFKA-12984 / KAFKA-14639): the highest generation claim wins; two members
   claiming a partition in that same generation leave it unowned; claims on topics
   the member no longer subscribes to were already dropped by the model.
2. When every member subscribes to the same topics, ``_constrained``: each member
   keeps up to its quota (``P // M``, plus one for ``P % M`` of them) of what it
   owned, and the rest are dealt round-robin to members under quota. Balanced to
   ``max - min <= 1`` in O(P + M).
3. Otherwise ``_general``: members keep everything they owned; unowned partitions
   go, most-constrained topic first, to the least-loaded subscriber; then a repair
   loop moves a partition of topic ``t`` from its most-loaded holder to its
   least-loaded subscriber while the two differ by two or more. At the fixed point
   no partition can move to make two members more equal — Java's
   ``verifyValidityAndBalance`` rule. Every move lowers the sum of squared loads,
   so the loop ends.

Ties are broken by member index (sorted member id) and dense partition id, never by
dict order, so the output is deterministic.
"""

from __future__ import annotations

import heapq
from collections import deque

from groupcoord.reference.assign.model import GroupModel

UNOWNED = -1


def resolve_previous_owners(model: GroupModel) -> list[int]:
    """Per dense partition: the member index that owned it, or ``UNOWNED``."""
    n = model.num_partitions
    owner = [UNOWNED] * n
    best = [0] * n
    tied = bytearray(n)
    for m, claims in enumerate(model.subscribed_claims):
        generation = model.generations[m]
        for p in claims:
            if (owner[p] == UNOWNED and not tied[p]) or generation > best[p]:
                owner[p], best[p], tied[p] = m, generation, 0
            elif generation == best[p]:
                tied[p] = 1
    for p in range(n):
        if tied[p]:
            owner[p] = UNOWNED
    return owner


def sticky_owners(model: GroupModel) -> list[int]:
    """Per dense partition: the member index it is assigned to (``UNOWNED`` if no subscriber)."""
    if model.num_members == 0:
        return [UNOWNED] * model.num_partitions
    previous = resolve_previous_owners(model)
    first = model.member_topics[0]
    if all(topics == first for topics in model.member_topics):
        return _constrained(model, previous)
    return _general(model, previous)


def assign_sticky(model: GroupModel) -> list[list[int]]:
    return collect(sticky_owners(model), model.num_members)


def collect(owner: list[int], num_members: int) -> list[list[int]]:
    """Invert a per-partition owner table into sorted per-member partition lists."""
    result: list[list[int]] = [[] for _ in range(num_members)]
    for p, m in enumerate(owner):
        if m != UNOWNED:
            result[m].append(p)
    return result


def _subscribed_partitions(model: GroupModel, topics: list[int]) -> list[int]:
    return [p for t in topics for p in range(model.offsets[t], model.offsets[t + 1])]


def _constrained(model: GroupModel, previous: list[int]) -> list[int]:
    members = model.num_members
    partitions = _subscribed_partitions(model, model.member_topics[0])
    min_quota, extra = divmod(len(partitions), members)

    kept: list[list[int]] = [[] for _ in range(members)]
    for p in partitions:
        if previous[p] != UNOWNED:
            kept[previous[p]].append(p)

    owner = [UNOWNED] * model.num_partitions
    count = [0] * members
    extra_left = extra
    for m in range(members):
        if len(kept[m]) > min_quota and extra_left > 0:
            keep = min_quota + 1
            extra_left -= 1
        else:
            keep = min(len(kept[m]), min_quota)
        for p in kept[m][:keep]:
            owner[p] = m
        count[m] = keep

    unassigned = [p for p in partitions if owner[p] == UNOWNED]
    next_free = 0
    # Round-robin up to the minimum quota, so each topic spreads over the members.
    under = deque(m for m in range(members) if count[m] < min_quota)
    while under:
        m = under.popleft()
        owner[unassigned[next_free]] = m
        next_free += 1
        count[m] += 1
        if count[m] < min_quota:
            under.append(m)
    # What is left is exactly one partition per extra slot not taken while keeping.
    for m in range(members):
        if next_free == len(unassigned):
            break
        if count[m] == min_quota:
            owner[unassigned[next_free]] = m
            next_free += 1
            count[m] += 1
    assert next_free == len(unassigned), "constrained assignment left partitions over"
    return owner


def _general(model: GroupModel, previous: list[int]) -> list[int]:
    subscribers = model.subscribers()
    offsets = model.offsets
    owner = list(previous)
    load = [0] * model.num_members
    # retained[p]: p sits with the member that owned it before this round; the repair
    # loop moves such partitions only when nothing else will do.
    retained = bytearray(model.num_partitions)
    for p, m in enumerate(owner):
        if m != UNOWNED:
            load[m] += 1
            retained[p] = 1

    topic_order = sorted(
        (t for t in range(len(subscribers)) if subscribers[t]),
        key=lambda t: (len(subscribers[t]), t),
    )
    for t in topic_order:
        heap = [(load[m], m) for m in subscribers[t]]
        heapq.heapify(heap)
        for p in range(offsets[t], offsets[t + 1]):
            if owner[p] != UNOWNED:
                continue
            least, m = heapq.heappop(heap)
            owner[p] = m
            load[m] = least + 1
            heapq.heappush(heap, (least + 1, m))

    moved = True
    while moved:
        moved = False
        for t in topic_order:
            lo, hi = offsets[t], offsets[t + 1]
            if lo == hi:
                continue
            while True:
                receiver = min(subscribers[t], key=lambda m: (load[m], m))
                giver = owner[lo]
                for p in range(lo + 1, hi):
                    o = owner[p]
                    if load[o] > load[giver] or (load[o] == load[giver] and o < giver):
                        giver = o
                if load[giver] - load[receiver] < 2:
                    break
                victim = _pick_victim(owner, retained, giver, lo, hi)
                owner[victim] = receiver
                retained[victim] = 1 if previous[victim] == receiver else 0
                load[giver] -= 1
                load[receiver] += 1
                moved = True
    return owner


def _pick_victim(owner: list[int], retained: bytearray, giver: int, lo: int, hi: int) -> int:
    """The giver's partition in [lo, hi) to move: a newly placed one first, highest id first."""
    fallback = -1
    for p in range(hi - 1, lo - 1, -1):
        if owner[p] == giver:
            if not retained[p]:
                return p
            if fallback < 0:
                fallback = p
    return fallback
