"""CooperativeStickyAssignor (KIP-429) on top of the sticky target.

A partition whose owner changes must first be revoked by the member that holds
it, so it is left out of this round: any partition in the sticky target of member
``x`` that ``x`` does not claim but another member does is withheld. The holder
sees it missing from its assignment, revokes it and rejoins; the next round finds
it unclaimed and places it. Claims count here whatever their generation: a member
revokes every owned partition missing from its assignment, so handing such a
partition to someone else in the same round would give it two consumers.
"""

from __future__ import annotations

from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.sticky import UNOWNED, collect, sticky_owners


def cooperative_owners(model: GroupModel) -> list[int]:
    target = sticky_owners(model)
    claimed = bytearray(model.num_partitions)
    kept_by_claimant = bytearray(model.num_partitions)
    for m, claims in enumerate(model.claims):
        for p in claims:
            claimed[p] = 1
            if target[p] == m:
                kept_by_claimant[p] = 1
    for p, m in enumerate(target):
        if m != UNOWNED and claimed[p] and not kept_by_claimant[p]:
            target[p] = UNOWNED
    return target


def assign_cooperative_sticky(model: GroupModel) -> list[list[int]]:
    return collect(cooperative_owners(model), model.num_members)
