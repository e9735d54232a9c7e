"""The sticky general path's repair loop without a revocation: chains of fresh moves.

When the repair loop must unload a member that holds only partitions it owned before
(retained ones) of the topic at hand, the plain move takes one of them away: for
cooperative-sticky that is a revocation and a second round. Often the loads can change
in the same way by moving only partitions placed this round (fresh ones) along a chain
of members, each passing one on to a subscriber of its topic:

- :func:`chain_into`: into the receiver, from the first member reached (breadth first)
  that is loaded two or more above it. The giver loses one, the receiver gains one, no
  other load changes: the sum of squared loads falls, as with the plain move.
- :func:`chain_out`: out of the giver, to the first member reached that is loaded below
  it. One loaded two or more below is a plain improvement; one loaded exactly one below
  (a sideways move: the sum of squares stays) only when, at its new load, it holds no
  retained partition of a topic with a subscriber loaded two or more below: the move
  then makes no new imbalance of the kind it removes. The caller bounds the sideways
  moves (one per member per run), so the loop ends whatever happens.

Of the 95,000 groups with mixed subscriptions of 200 seeds of the Java differential
(tests/assignors/test_java_assignors.py), cooperative-sticky without these chains took
a round more than Kafka's in 11; with them in none, and it moved 2.7% fewer partitions
(123,726 against 127,146); no run needed more than three sideways moves.

The same step for step as ``rust/src/assign/fresh_chains.rs`` (ties: breadth first over
members in the order reached, topics and partitions ascending).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

from groupcoord.reference.assign.model import GroupModel


@dataclass(slots=True)
class Holdings:
    """The state the repair loop moves partitions in (the lists are the loop's own)."""

    owner: list[int]
    load: list[int]
    retained: bytearray
    #: per member, how many fresh partitions it holds
    fresh_held: list[int]
    #: the fresh partitions (held, not retained), ascending: a chain's search visits
    #: only these
    fresh: list[int]
    previous: list[int]

    def fresh_in(self, lo: int, hi: int) -> list[int]:
        """The fresh partitions among dense ids [lo, hi), ascending."""
        fresh = self.fresh
        return fresh[bisect_left(fresh, lo) : bisect_left(fresh, hi)]

    def pass_on(self, p: int, source: int, to: int) -> None:
        """One hop of a chain: fresh partition ``p`` goes from ``source`` to ``to``."""
        self.owner[p] = to
        self.fresh_held[source] -= 1
        self.retained[p] = self.previous[p] == to
        if self.retained[p]:
            del self.fresh[bisect_left(self.fresh, p)]
        else:
            self.fresh_held[to] += 1


def chain_into(model: GroupModel, h: Holdings, receiver: int) -> bool:
    """One more partition for ``receiver`` through fresh moves only; ``False`` (nothing
    changed) when no member loaded two or more above it reaches it that way."""
    load = h.load
    need = load[receiver] + 2
    # the chain starts at a member loaded that high holding a fresh partition
    if not any(m != receiver and h.fresh_held[m] > 0 and load[m] >= need for m in range(len(load))):
        return False
    offsets = model.offsets
    # via[y] = (x, p): y passes its fresh partition p on to x, one step nearer the receiver
    via: dict[int, tuple[int, int]] = {receiver: (-1, -1)}
    # a topic's holders are all reached the first time one member's scan covers it
    scanned = bytearray(model.num_topics)
    queue = [receiver]
    for x in queue:
        for t in model.member_topics[x]:
            if scanned[t]:
                continue
            scanned[t] = 1
            for p in h.fresh_in(offsets[t], offsets[t + 1]):
                y = h.owner[p]
                if y in via:
                    continue
                via[y] = (x, p)
                if load[y] >= need:
                    load[y] -= 1
                    load[receiver] += 1
                    while y != receiver:
                        x, p = via[y]
                        h.pass_on(p, y, x)
                        y = x
                    return True
                queue.append(y)
    return False


def chain_out(model: GroupModel, subscribers: list[list[int]], h: Holdings, giver: int) -> bool:
    """One partition fewer for ``giver`` through fresh moves only (see the module
    documentation for whom it may end at); ``False`` (nothing changed) when none."""
    if h.fresh_held[giver] == 0:
        return False
    load = h.load
    top = load[giver]
    offsets = model.offsets
    # per member, the first fresh partition it holds of each topic, topics ascending
    first_fresh: dict[int, list[tuple[int, int]]] = {}
    for t in range(model.num_topics):
        for p in h.fresh_in(offsets[t], offsets[t + 1]):
            held = first_fresh.setdefault(h.owner[p], [])
            if not held or held[-1][0] != t:
                held.append((t, p))
    # via[y] = (x, p): x passes its fresh partition p on to y, one step further out
    via: dict[int, tuple[int, int]] = {giver: (-1, -1)}
    scanned = bytearray(model.num_topics)
    queue = [giver]
    for x in queue:
        for t, p in first_fresh.get(x, ()):
            if scanned[t]:
                continue
            scanned[t] = 1
            for y in subscribers[t]:
                if y in via:
                    continue
                via[y] = (x, p)
                if load[y] < top - 1 or (
                    load[y] == top - 1 and _calm(model, subscribers, h, y, top)
                ):
                    load[giver] -= 1
                    load[y] += 1
                    while y != giver:
                        x, p = via[y]
                        h.pass_on(p, x, y)
                        y = x
                    return True
                queue.append(y)
    return False


def _calm(
    model: GroupModel, subscribers: list[list[int]], h: Holdings, member: int, new_load: int
) -> bool:
    """At ``new_load``, ``member`` holds no retained partition of a topic that has a
    subscriber loaded two or more below it."""
    offsets = model.offsets
    for t in model.member_topics[member]:
        holds_retained = any(
            h.owner[p] == member and h.retained[p] for p in range(offsets[t], offsets[t + 1])
        )
        if holds_retained and min(h.load[m] for m in subscribers[t]) <= new_load - 2:
            return False
    return True
