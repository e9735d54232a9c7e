"""The server-side ``uniform`` assignor of KIP-848 consumer groups, as
``rust/src/assign/uniform.rs``: balanced and sticky to the current target assignment.

Homogeneous groups follow Kafka's ``UniformHomogeneousAssignmentBuilder``: the first
``P % M`` members (sorted member id) get ``P // M + 1`` partitions, the others ``P // M``;
each keeps what it holds up to that quota, in partition order; the rest (never assigned,
then given up, member by member) are dealt in order to the members still short, each
filled before the next. Heterogeneous groups go through the sticky general path.

Racks (KIP-881): a member keeps only rack-local partitions; unassigned partitions go to
rack-local members with room, then released ones back to their owner if it still has
room, before the plain dealing. Quotas never change.
"""

from __future__ import annotations

from collections import deque

from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.rack import Racks
from groupcoord.reference.assign.sticky import (
    UNOWNED,
    RackView,
    collect,
    owners_with,
)


def uniform_owners(model: GroupModel) -> list[int]:
    """Per dense partition: the member index it goes to (``UNOWNED`` if no subscriber)."""
    return owners_with(model, _homogeneous)


def assign_uniform(model: GroupModel) -> list[list[int]]:
    return collect(uniform_owners(model), model.num_members)


def _homogeneous(model: GroupModel, previous: list[int], view: RackView | None) -> list[int]:
    members = model.num_members
    partitions = [p for t in model.member_topics[0] for p in model.partitions_of(t)]
    min_quota, extra = divmod(len(partitions), members)
    room = [min_quota + (1 if m < extra else 0) for m in range(members)]

    owner = [UNOWNED] * model.num_partitions
    unassigned: list[int] = []
    given_up: list[tuple[int, int]] = []
    for p in partitions:
        m = previous[p]
        if m == UNOWNED:
            unassigned.append(p)
        elif room[m] > 0:
            room[m] -= 1
            owner[p] = m
        else:
            given_up.append((m, p))
    # Kafka appends the partitions over quota after the unowned ones, member by member.
    given_up.sort(key=lambda e: e[0])
    unassigned.extend(p for _, p in given_up)

    if view is not None:
        racks, released = view
        _deal_rack_local(racks, owner, room, unassigned)
        for p in unassigned:
            m = released[p]
            if owner[p] == UNOWNED and m != UNOWNED and room[m] > 0:
                room[m] -= 1
                owner[p] = m
        unassigned = [p for p in unassigned if owner[p] == UNOWNED]
    it = iter(unassigned)
    for m in range(members):
        for _ in range(room[m]):
            owner[next(it)] = m
        room[m] = 0
    assert next(it, None) is None, "partitions left unassigned"
    return owner


def _deal_rack_local(
    racks: Racks, owner: list[int], room: list[int], unassigned: list[int]
) -> None:
    """Partitions of ``unassigned`` to rack-local members with room: fewest local members
    first; each to the rack (of its replicas) with the most members still having room, to
    the one waiting longest there."""
    by_rack = racks.members_by_rack(range(len(room)))
    waiting = [deque(m for m in ms if room[m] > 0) for ms in by_rack]
    order = sorted(
        (sum(len(by_rack[r]) for r in racks.rows[p]), i) for i, p in enumerate(unassigned)
    )
    for _, i in order:
        p = unassigned[i]
        candidates = [r for r in racks.rows[p] if waiting[r]]
        if not candidates:
            continue
        r = max(candidates, key=lambda r: (len(waiting[r]), -r))
        m = waiting[r].popleft()
        owner[p] = m
        room[m] -= 1
        if room[m] > 0:
            waiting[r].append(m)
