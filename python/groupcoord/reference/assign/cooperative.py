"""CooperativeStickyAssignor (KIP-429) on top of the sticky target.

A partition whose owner changes must first be revoked by the member that holds
it, so it is left out of this round: any partition in the sticky target of member
``x`` that ``x`` does not claim but another member does is withheld. The holder
sees it missing from its assignment, revokes it and rejoins; the next round finds
it unclaimed and places it. Claims count here whatever their generation: a member
revokes every owned partition missing from its assignment, so handing such a
partition to someone else in the same round would give it two consumers.

When this round revokes something, the members rejoin and the next round starts from
what they keep. With mixed subscriptions the sticky general path may then settle on
other, equally balanced loads than this round's target and revoke again (a third
round). So the leader looks one round ahead (``_settling_target``): it runs the next
round's sticky target on what members would keep, and when that revokes something,
offers that target instead, eight candidates at most. Groups whose members all
subscribe to the same topics need none of this: the constrained path keeps whatever a
member holds up to its quota, so their second round never revokes. The same step for
step as ``rust/src/assign/cooperative.rs``.
"""

from __future__ import annotations

from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.sticky import (
    UNOWNED,
    collect,
    general,
    rack_mode,
    sticky_owners,
)

#: Candidate targets checked, the first included (see LOOKAHEAD_TRIES in
#: rust/src/assign/cooperative.rs for how many groups need).
LOOKAHEAD_TRIES = 8


def cooperative_owners(model: GroupModel) -> list[int]:
    handed = _withhold(model, sticky_owners(model))
    if model.num_members == 0:
        return handed
    first = model.member_topics[0]
    homogeneous = all(topics == first for topics in model.member_topics)
    if homogeneous or not _revokes(model, handed):
        return handed
    return _settling_target(model, handed)


def _withhold(model: GroupModel, target: list[int]) -> list[int]:
    """The sticky target with every partition another member claims withheld from its new
    owner (the claimant revokes it first)."""
    handed = list(target)
    claimed = bytearray(model.num_partitions)
    kept_by_claimant = bytearray(model.num_partitions)
    for m, claims in enumerate(model.claims):
        for p in claims:
            claimed[p] = 1
            if target[p] == m:
                kept_by_claimant[p] = 1
    for p, m in enumerate(handed):
        if m != UNOWNED and claimed[p] and not kept_by_claimant[p]:
            handed[p] = UNOWNED
    return handed


def _revokes(model: GroupModel, handed: list[int]) -> bool:
    """Whether some member loses a partition it claims (and so rejoins)."""
    return any(handed[p] != m for m, claims in enumerate(model.claims) for p in claims)


def _settling_target(model: GroupModel, first: list[int]) -> list[int]:
    """This round's assignment, chosen so that the next round revokes nothing when one of
    a few candidates does: the next round's members own what they are handed now (one
    claimant per partition, so generations no longer matter, and a mixed group takes the
    general path with every claim kept, as here), and its target keeps all of it unless
    it revokes. A candidate whose next round revokes gives way to that round's target;
    when none settles, the first candidate stands."""
    racks = rack_mode(model)
    # heterogeneous groups release no claim for racks (see release_foreign)
    view = None if racks is None else (racks, [UNOWNED] * model.num_partitions)
    handed = first
    for _ in range(LOOKAHEAD_TRIES):
        following = general(model, list(handed), view)
        if all(m == UNOWNED or following[p] == m for p, m in enumerate(handed)):
            return handed
        handed = _withhold(model, following)
    return first


def assign_cooperative_sticky(model: GroupModel) -> list[list[int]]:
    return collect(cooperative_owners(model), model.num_members)
