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
3. Otherwise ``general``: members keep everything they owned; unowned partitions
   go, most-constrained topic first, to the least-loaded subscriber; then a repair
   loop moves a partition of topic ``t`` from its most-loaded holder to its
   least-loaded subscriber while the two differ by two or more (among equally loaded
   holders, one holding a partition placed this round; when the holder owned all it
   holds of ``t`` before, chains of fresh moves first: ``fresh_chains``). At the fixed
   point no partition can move to make two members more equal — Java's
   ``verifyValidityAndBalance`` rule. Every move lowers the sum of squared loads (but
   a bounded number of sideways chains), so the loop ends. Last, ``give_back``
   returns partitions the repair moved away from their previous owner along chains
   that leave every load as it is.

Ties are broken by member index (sorted member id) and dense partition id, never by
dict order, so the output is deterministic.

Racks (KIP-881), when :func:`rack_mode` says they are worth it, change three things and
never a quota: in homogeneous groups a member keeps only the owned partitions it is
rack-local to (Java's ``racksMismatch`` rule; a dropped claim goes back to its owner when no
rack-local member has room, unlike Java; heterogeneous groups keep every claim, unlike Java,
so that results are fixed points); the constrained path deals unowned partitions to
rack-local members under quota before the plain round-robin (fewest local members first, as Java's
``assignRackAwareRoundRobin``); the general path gives a partition to a rack-local
subscriber only when one is among the least loaded, and its repair loop moves a partition
local to the receiver, or foreign to the giver, before any other.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable

from groupcoord.reference.assign.fresh_chains import Holdings, chain_into, chain_out
from groupcoord.reference.assign.give_back import give_back
from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.rack import NO_RACK, Racks

#: the racks and, per partition, the member whose claim ``release_foreign`` dropped
RackView = tuple[Racks, list[int]]

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


#: How a group whose members all subscribe to the same topics is assigned.
HomogeneousPath = Callable[[GroupModel, list[int], RackView | None], list[int]]


def owners_with(model: GroupModel, homogeneous_path: HomogeneousPath) -> list[int]:
    """Per dense partition: the member index it goes to (``UNOWNED`` if no subscriber).

    The steps every sticky-family assignor shares (previous owners, the rack view, KIP-881's
    release of foreign claims); groups with equal subscriptions take ``homogeneous_path``,
    the others the general path."""
    if model.num_members == 0:
        return [UNOWNED] * model.num_partitions
    previous = resolve_previous_owners(model)
    racks = rack_mode(model)
    first = model.member_topics[0]
    homogeneous = all(topics == first for topics in model.member_topics)
    view = None if racks is None else (racks, release_foreign(racks, previous, homogeneous))
    if homogeneous:
        return homogeneous_path(model, previous, view)
    return general(model, previous, view)


def sticky_owners(model: GroupModel) -> list[int]:
    """Per dense partition: the member index it is assigned to (``UNOWNED`` if no subscriber)."""
    return owners_with(model, _constrained)


def rack_mode(model: GroupModel) -> Racks | None:
    """The racks, when Java's sticky ``RackInfo`` would use them: over all members and the
    partitions of every subscribed topic."""
    racks = model.racks
    if racks is None:
        return None
    subscribed = sorted({t for topics in model.member_topics for t in topics})
    partitions = [p for t in subscribed for p in model.partitions_of(t)]
    return racks if racks.worth_using(range(model.num_members), partitions) else None


def release_foreign(racks: Racks, previous: list[int], release: bool) -> list[int]:
    """Drops (in place) the claims of members not rack-local to the partition, when
    ``release`` (homogeneous groups; heterogeneous ones keep every claim, see
    ``release_foreign`` in rust/src/assign/sticky.rs); returns per partition the member
    whose claim was dropped, ``UNOWNED`` for the others."""
    released = [UNOWNED] * len(previous)
    if not release:
        return released
    for p, m in enumerate(previous):
        if m != UNOWNED and racks.mismatch(m, p):
            released[p] = m
            previous[p] = UNOWNED
    return released


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


def _constrained(model: GroupModel, previous: list[int], view: RackView | None) -> list[int]:
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
    if view is not None:
        racks, released = view
        extra_left = _rack_fill(racks, owner, count, unassigned, min_quota, extra_left)
        # no local member had room: back to the owner whose claim racks released
        for p in unassigned:
            m = released[p]
            if m == UNOWNED:
                continue
            if count[m] < min_quota or (count[m] == min_quota and extra_left > 0):
                if count[m] == min_quota:
                    extra_left -= 1
                count[m] += 1
                owner[p] = m
        unassigned = [p for p in unassigned if owner[p] == UNOWNED]
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


def _rack_fill(
    racks: Racks,
    owner: list[int],
    count: list[int],
    unassigned: list[int],
    min_quota: int,
    extra_left: int,
) -> int:
    """Deals ``unassigned`` partitions (in place) to rack-local members up to their quota:
    below ``min_quota`` first, then one over it while ``extra_left`` allows. Fewest local
    members first; each to the rack (of its replicas) with the most members still under
    quota, to its longest-waiting member. Returns the extra slots left."""
    by_rack = racks.members_by_rack(range(len(count)))
    under = [deque(m for m in ms if count[m] < min_quota) for ms in by_rack]
    at_min = [deque(m for m in ms if count[m] == min_quota) for ms in by_rack]
    order = sorted((sum(len(by_rack[r]) for r in racks.rows[p]), p) for p in unassigned)

    def fullest(queues: list[deque[int]], rows: tuple[int, ...]) -> int | None:
        candidates = [r for r in rows if queues[r]]
        if not candidates:
            return None
        return max(candidates, key=lambda r: (len(queues[r]), -r))

    for _, p in order:
        rows = racks.rows[p]
        r = fullest(under, rows)
        if r is not None:
            m = under[r].popleft()
            owner[p] = m
            count[m] += 1
            (under if count[m] < min_quota else at_min)[r].append(m)
        elif extra_left > 0:
            r = fullest(at_min, rows)
            if r is not None:
                m = at_min[r].popleft()
                owner[p] = m
                count[m] += 1
                extra_left -= 1
    unassigned[:] = [p for p in unassigned if owner[p] == UNOWNED]
    return extra_left


def _least(heap: list[tuple[int, int]], load: list[int]) -> tuple[int, int] | None:
    """The least loaded entry of a lazily updated heap; stale entries are dropped."""
    while heap:
        entry = heap[0]
        if load[entry[1]] == entry[0]:
            return entry
        heapq.heappop(heap)
    return None


def _place_with_racks(
    view: RackView,
    subscribers: list[int],
    lo: int,
    hi: int,
    owner: list[int],
    load: list[int],
) -> None:
    """Unowned partitions of [lo, hi) to the least loaded subscriber, unless a rack-local
    one is just as little loaded, or else the owner whose claim racks released is."""
    racks, released = view
    everyone = [(load[m], m) for m in subscribers]
    heapq.heapify(everyone)
    by_rack: dict[int, list[tuple[int, int]]] = {}
    for m in subscribers:
        r = racks.member_rack[m]
        if r != NO_RACK:
            heapq.heappush(by_rack.setdefault(r, []), (load[m], m))
    for p in range(lo, hi):
        if owner[p] != UNOWNED:
            continue
        top = _least(everyone, load)
        assert top is not None, "a subscribed topic has subscribers"
        lowest, chosen = top
        best = -1
        for r in racks.rows[p]:
            heap = by_rack.get(r)
            if heap is None:
                continue
            entry = _least(heap, load)
            if entry is not None and entry[0] == lowest and (best < 0 or entry[1] < best):
                best = entry[1]
        before = released[p]
        if best >= 0:
            chosen = best
        elif before != UNOWNED and load[before] == lowest and before in subscribers:
            chosen = before
        owner[p] = chosen
        load[chosen] += 1
        heapq.heappush(everyone, (load[chosen], chosen))
        r = racks.member_rack[chosen]
        if r != NO_RACK:
            heapq.heappush(by_rack[r], (load[chosen], chosen))


def general(model: GroupModel, previous: list[int], view: RackView | None) -> list[int]:
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
        if view is not None:
            _place_with_racks(view, subscribers[t], offsets[t], offsets[t + 1], owner, load)
            continue
        heap = [(load[m], m) for m in subscribers[t]]
        heapq.heapify(heap)
        for p in range(offsets[t], offsets[t + 1]):
            if owner[p] != UNOWNED:
                continue
            least, m = heapq.heappop(heap)
            owner[p] = m
            load[m] = least + 1
            heapq.heappush(heap, (least + 1, m))

    # chain_out's moves that leave the sum of squared loads as it is: at most one per
    # member (fresh_chains.py), so the loop ends
    sideways = 0
    # per member, the fresh (not retained) partitions it holds: the chains' quick test
    # for whether any member could start or end one
    # nothing retained stays so: a partition only becomes retained by going back to its
    # previous owner
    any_retained = any(retained)
    fresh_held = [0] * model.num_members
    for p, m in enumerate(owner):
        if m != UNOWNED and not retained[p]:
            fresh_held[m] += 1
    # the chains' state, with the fresh partitions listed when a chain is first tried
    # (never, in a group without retained partitions) and kept up to date from then on
    h: Holdings | None = None
    moved = True
    while moved:
        moved = False
        for t in topic_order:
            lo, hi = offsets[t], offsets[t + 1]
            if lo == hi:
                continue
            while True:
                receiver = min(subscribers[t], key=lambda m: (load[m], m))
                # The most loaded holder gives; among equals, one holding a partition
                # placed this round (moving that one leaves every previous owner's
                # partitions where they are: a cooperative round then revokes nothing
                # where it otherwise would), then the lower index.
                giver = owner[lo]
                for p in range(lo + 1, hi):
                    o = owner[p]
                    if load[o] > load[giver] or (load[o] == load[giver] and o < giver):
                        giver = o
                top = load[giver]
                if top - load[receiver] < 2:
                    break
                # With nothing retained (a fresh assignment) the giver holds only fresh
                # partitions; otherwise one of the holders as loaded does only if such a
                # member holds any fresh partition at all (rarely, when members keep
                # what they owned), which is checked before the topic is scanned.
                fresh_giver = giver if not any_retained else -1
                if any_retained and any(
                    load[m] == top and fresh_held[m] > 0 for m in subscribers[t]
                ):
                    fresh_giver = min(
                        (
                            owner[p]
                            for p in range(lo, hi)
                            if not retained[p] and load[owner[p]] == top
                        ),
                        default=-1,
                    )
                if fresh_giver >= 0:
                    giver = fresh_giver
                elif view is None:
                    # the giver holds only partitions it owned before of this topic:
                    # first try to balance by moving fresh ones (no revocation)
                    if h is None:
                        fresh = [p for p, m in enumerate(owner) if m != UNOWNED and not retained[p]]
                        h = Holdings(owner, load, retained, fresh_held, fresh, previous)
                    if chain_into(model, h, receiver):
                        moved = True
                        continue
                    if (
                        sideways < model.num_members
                        and top == load[receiver] + 2
                        and chain_out(model, subscribers, h, giver)
                    ):
                        sideways += 1
                        moved = True
                        continue
                if view is None:
                    victim = _pick_victim(owner, retained, giver, lo, hi)
                else:
                    victim = _pick_victim_with_racks(
                        view[0], owner, retained, giver, receiver, lo, hi
                    )
                owner[victim] = receiver
                if not retained[victim]:
                    fresh_held[giver] -= 1
                    if h is not None:
                        del h.fresh[bisect_left(h.fresh, victim)]
                retained[victim] = 1 if previous[victim] == receiver else 0
                if not retained[victim]:
                    fresh_held[receiver] += 1
                    if h is not None:
                        insort(h.fresh, victim)
                load[giver] -= 1
                load[receiver] += 1
                moved = True
    # With racks the repair loop chose what to move for locality; giving partitions back
    # could undo that, so only rackless groups take this step.
    if view is None:
        give_back(subscribers, offsets, previous, owner, load)
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


def _pick_victim_with_racks(
    racks: Racks,
    owner: list[int],
    retained: bytearray,
    giver: int,
    receiver: int,
    lo: int,
    hi: int,
) -> int:
    """``_pick_victim`` when racks count: newly placed before retained, then local to the
    receiver, then foreign to the giver; highest id first among equals."""
    best_key: tuple[bool, bool, bool] | None = None
    best = -1
    for p in range(hi - 1, lo - 1, -1):
        if owner[p] != giver:
            continue
        key = (bool(retained[p]), not racks.local(receiver, p), racks.local(giver, p))
        if best_key is None or key < best_key:
            best_key, best = key, p
    return best
