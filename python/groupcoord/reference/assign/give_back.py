"""The sticky general path's last step: partitions back to their previous owners.

The repair loop balances by moving partitions one at a time, and sometimes moves a
member's own partition out before another member's comes back to it. This step undoes
such moves where it can without changing any member's load: a partition ``p`` that sits
with ``x`` but was owned by ``y`` goes back to ``y``, which passes on one partition it
holds that it did not own before, and so on along a chain of members that ends at ``x``.
Every member in the chain gives one partition and takes one, so the loads (and with them
balance) stay as they are; a partition may go to a member only if that member's load is
at most one above the least loaded subscriber of its topic (Java's balance rule). Each
chain puts at least one more partition with its previous owner and never takes one from
its previous owner, so the step ends.

For cooperative-sticky this is what lets the second round keep everything: the first
round's result, minus what was withheld, is owned by then, and a chain from the placed
partitions back to their owners is what keeps the repair loop from revoking some of it.

The same step for step as ``rust/src/assign/give_back.rs`` (ties: candidates in dense
order, chains found breadth first over topics and members in ascending order).
"""

from __future__ import annotations

from bisect import insort

UNOWNED = -1


def give_back(
    subscribers: list[list[int]],
    offsets: list[int],
    previous: list[int],
    owner: list[int],
    load: list[int],
) -> None:
    """Moves partitions (in ``owner``, in place) back to their previous owners along
    load-neutral chains; ``load`` is per member and does not change."""
    # what the repair moved away from its previous owner; most groups have nothing here
    # (fresh ones in particular), and then nothing else is built
    candidates = [p for p, m in enumerate(owner) if previous[p] != UNOWNED and m != previous[p]]
    if not candidates:
        return
    topic_of = [0] * len(owner)
    for t in range(len(subscribers)):
        for p in range(offsets[t], offsets[t + 1]):
            topic_of[p] = t
    # the highest load a member may have and still take a partition of topic t
    ceiling = [min((load[m] for m in subs), default=0) + 1 for subs in subscribers]
    # per member and topic: the partitions it holds and did not own before
    movable: list[dict[int, list[int]]] = [{} for _ in load]
    for p, m in enumerate(owner):
        if m != UNOWNED and previous[p] != m:
            movable[m].setdefault(topic_of[p], []).append(p)

    changed = True
    while changed:
        changed = False
        # per member y: the members a search from y reached when it found no chain (all
        # it can reach), valid until the next chain is applied
        reached: dict[int, bytearray] = {}
        for p in candidates:
            x, y = owner[p], previous[p]
            t = topic_of[p]
            if x == y or load[y] > ceiling[t]:
                continue
            seen = reached.get(y)
            if seen is not None and not seen[x]:
                continue
            parent = _search(subscribers, ceiling, load, movable, y, x)
            if isinstance(parent, bytearray):
                reached[y] = parent
                continue
            # p back to y, then along the chain backwards from x, each member giving the
            # next one a partition it did not own before
            owner[p] = y
            movable[x][t].remove(p)
            v = x
            while v != y:
                u, topic = parent[v]
                held = movable[u][topic]
                q = next((q for q in held if previous[q] == v), held[-1])
                held.remove(q)
                owner[q] = v
                if previous[q] != v:
                    insort(movable[v].setdefault(topic, []), q)
                v = u
            changed = True
            reached.clear()


def _search(
    subscribers: list[list[int]],
    ceiling: list[int],
    load: list[int],
    movable: list[dict[int, list[int]]],
    start: int,
    target: int,
) -> dict[int, tuple[int, int]] | bytearray:
    """Breadth first from ``start`` over "member u holds a partition of topic t it did not
    own before, and member v may take it": per member reached, the (member, topic) it is
    reached from, once ``target`` is; else the members reached."""
    seen = bytearray(len(load))
    seen[start] = 1
    expanded = bytearray(len(subscribers))
    parent: dict[int, tuple[int, int]] = {}
    queue = [start]
    for u in queue:
        for t in sorted(movable[u]):
            # a topic's takers are the same whoever gives: expanding it once is enough
            if expanded[t] or not movable[u][t]:
                continue
            expanded[t] = 1
            for v in subscribers[t]:
                if seen[v] or load[v] > ceiling[t]:
                    continue
                seen[v] = 1
                parent[v] = (u, t)
                if v == target:
                    return parent
                queue.append(v)
    return seen
