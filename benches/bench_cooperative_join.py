"""pytest-benchmark: cooperative-sticky's first round after members join a group with mixed
subscriptions, Rust vs the Python reference.

This is the round that revokes partitions (the joiners' share) and so the one where the
leader looks a round ahead (rust/src/assign/cooperative.rs): bench_assign.py's fresh and
leave phases revoke nothing and never take that path. Sizes: members x partitions (10
topics), each member on a random subset of the topics; the group settles from a fresh
assignment, then one member in fifty joins. ``GROUPCOORD_COOP_JOIN_SIZES`` (comma-separated,
e.g. ``1000x100k``); without it, the two small ones, so that the CI run
(``--benchmark-disable``) stays quick. ``extra_info`` records the rounds the group needs to
settle and the partitions moved.
"""

from __future__ import annotations

import gc
import os
import random
from typing import Any

import pytest

from groupcoord import CooperativeStickyAssignor, Subscription

SIZES = os.environ.get("GROUPCOORD_COOP_JOIN_SIZES", "100x1k,500x10k").split(",")
TOPICS = 10


def _parse(size: str) -> tuple[int, int]:
    members, partitions = size.lower().split("x")
    scale = {"k": 1_000, "m": 1_000_000}
    count = (
        int(partitions[:-1]) * scale[partitions[-1]] if partitions[-1] in scale else int(partitions)
    )
    return int(members), count


def joined_group(size: str, backend: str) -> tuple[dict[str, int], dict[str, Subscription]]:
    """A settled group with mixed subscriptions (fresh assignment, generation 1), and one
    member in fifty joining with a random subscription."""
    members, partitions = _parse(size)
    rnd = random.Random(7)
    ppt = {f"topic-{t}": partitions // TOPICS for t in range(TOPICS)}
    names = list(ppt)

    def pick() -> list[str]:
        return rnd.sample(names, rnd.randint(1, TOPICS))

    subs = {f"member-{m:05d}": Subscription(pick()) for m in range(members)}
    fresh = CooperativeStickyAssignor(backend=backend).assign(ppt, subs)
    subs = {
        m: Subscription(s.topics, owned_partitions=fresh[m].partitions, generation_id=1)
        for m, s in subs.items()
    }
    for j in range(max(1, members // 50)):
        subs[f"member-new-{j:04d}"] = Subscription(pick())
    return ppt, subs


def settle(
    assignor: CooperativeStickyAssignor, ppt: dict[str, int], subs: dict[str, Subscription]
) -> tuple[int, int]:
    """Rounds until one revokes nothing, and the partitions that changed owner."""
    before = {tp: m for m, s in subs.items() for tp in s.owned_partitions}
    generation = 2
    for rounds in range(1, 10):
        out = assignor.assign(ppt, subs)
        if not any(set(s.owned_partitions) - set(out[m].partitions) for m, s in subs.items()):
            moved = sum(1 for m, a in out.items() for tp in a.partitions if before.get(tp, m) != m)
            return rounds, moved
        subs = {
            m: Subscription(s.topics, owned_partitions=out[m].partitions, generation_id=generation)
            for m, s in subs.items()
        }
        generation += 1
    raise AssertionError("not settled after 9 rounds")


def _collect() -> None:
    # before each round, outside its timing (returns None: pedantic's setup may not return)
    gc.collect()


@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize("size", SIZES)
def test_cooperative_join(benchmark: Any, size: str, backend: str) -> None:
    ppt, subs = joined_group(size, backend)
    assignor = CooperativeStickyAssignor(backend=backend)
    benchmark.group = f"cooperative-join-{size}"
    result = benchmark.pedantic(
        lambda: assignor.assign(ppt, subs), setup=_collect, rounds=5, iterations=1
    )
    # the round under test revokes something: the joiners' share comes from the others
    assert any(set(s.owned_partitions) - set(result[m].partitions) for m, s in subs.items())
    rounds, moved = settle(assignor, ppt, subs)
    benchmark.extra_info.update(rounds_to_settle=rounds, partitions_moved=moved)
