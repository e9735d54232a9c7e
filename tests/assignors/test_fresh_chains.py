"""The sticky general path's fresh chains (rust/src/assign/fresh_chains.rs and its
reference twin, python/groupcoord/reference/assign/fresh_chains.py).

- Groups from the Java differential (tests/assignors/test_java_assignors.py, salt 202)
  where Kafka's cooperative-sticky revokes nothing and ours took a partition away from
  its owner and so a second round: before the chains (seed 6 case 1048, seed 45 case
  894), or with chain_into but no sideways chain_out (seed 100 case 52). Both backends
  now keep every owned partition and settle in one round.
- The chains themselves, on random holdings (hypothesis): a chain moves only fresh
  partitions, each to a subscriber of its topic, and changes two loads by one, the
  giver's loaded as the function promises; when it finds none it changes nothing.
"""

from __future__ import annotations

from bisect import insort

import pytest
from assign_checks import check_balanced, check_cooperative, check_valid
from hypothesis import given
from hypothesis import strategies as st

from groupcoord import CooperativeStickyAssignor, Subscription, TopicPartition
from groupcoord.reference.assign.fresh_chains import Holdings, chain_into, chain_out
from groupcoord.reference.assign.model import GroupModel

BACKENDS = ("rust", "python")


def tps(*names: str) -> list[TopicPartition]:
    return [TopicPartition(n.split("-")[0], int(n.split("-")[1])) for n in names]


# seed 6 case 1048: ours gave t2-0 to consumer-3a01ab and then needed consumer-0e625d's
# t2-2 for consumer-6e4d5a (subscribed to t2 only)
SEED_6_CASE_1048 = (
    {"t0": 2, "t1": 1, "t2": 3, "t3": 8},
    {
        "consumer-6e4d5a": Subscription(["t2"], generation_id=3),
        "consumer-14de1d": Subscription(
            ["t1", "t2"], generation_id=3, group_instance_id="instance-29-1"
        ),
        "consumer-e4bfc1": Subscription(["t1", "t3"], generation_id=3),
        "consumer-56659a": Subscription(["t3", "t2", "t1", "t0"], generation_id=3),
        "consumer-4d1f72": Subscription(
            ["t1", "t0", "t3", "t2"], generation_id=3, group_instance_id="instance-98-4"
        ),
        "consumer-2ac8e9": Subscription(
            ["t0", "t3"], generation_id=1, group_instance_id="instance-21-5"
        ),
        "consumer-0e625d": Subscription(
            ["t3", "t2", "t1"], owned_partitions=tps("t2-2", "t3-7"), generation_id=3
        ),
        "consumer-3a01ab": Subscription(["t2", "t1", "t3"], group_instance_id="instance-05-7"),
        "consumer-b9fb1f": Subscription(["t2", "t1", "t3", "t0"]),
        "consumer-aa7fcd": Subscription(["t2", "t0", "t3", "t1"]),
    },
)

# seed 45 case 894: consumer-02d20f's ten owned partitions stay with it only if the
# load it cannot shed goes round through consumer-a02cf4 and consumer-a9c9fc
SEED_45_CASE_894 = (
    {"t0": 3, "t1": 13, "t2": 2, "t3": 8, "t4": 3, "t5": 8},
    {
        "consumer-02d20f": Subscription(
            ["t3", "t2", "t5", "t4", "t1"],
            owned_partitions=tps(
                "t1-0", "t1-3", "t1-4", "t1-8", "t1-10", "t1-11", "t3-0", "t3-1", "t4-1", "t5-0"
            ),
            generation_id=5,
            group_instance_id="instance-13-0",
        ),
        "consumer-a9c9fc": Subscription(
            ["t3", "t4", "t0", "t5", "t2"], group_instance_id="instance-71-1"
        ),
        "consumer-bcc1d2": Subscription(["t4", "t1"]),
        "consumer-a02cf4": Subscription(
            ["t1", "t0", "t4", "t5", "t2", "t3"], group_instance_id="instance-88-3"
        ),
    },
)

# seed 100 case 52: consumer-e0f956's one owned partition stays only if a fresh one it
# was dealt moves sideways (chain_out) to an equally loaded member first
SEED_100_CASE_52 = (
    {"t0": 0, "t1": 13, "t2": 5, "t3": 3, "t4": 3, "t5": 13},
    {
        "consumer-82d5e5": Subscription(["t5", "t4", "t0", "t1", "t2"], generation_id=3),
        "consumer-179919": Subscription(["t1", "t0"], generation_id=3),
        "consumer-30fd18": Subscription(["t0", "t4", "t2", "t5"]),
        "consumer-90557a": Subscription(["t5", "t2", "t0"]),
        "consumer-e0f956": Subscription(
            ["t3", "t0", "t2", "t5"], owned_partitions=tps("t3-0"), generation_id=3
        ),
        "consumer-48787f": Subscription(["t4", "t0", "t3"]),
    },
)

GROUPS = {
    "seed 6 case 1048": SEED_6_CASE_1048,
    "seed 45 case 894": SEED_45_CASE_894,
    "seed 100 case 52": SEED_100_CASE_52,
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", GROUPS)
def test_kafka_keeps_everything_here_and_so_do_we(name: str, backend: str) -> None:
    ppt, subs = GROUPS[name]
    result = CooperativeStickyAssignor(backend=backend).assign(ppt, subs)
    check_cooperative(subs, result)
    for member, sub in subs.items():
        assert set(sub.owned_partitions) <= set(result[member].partitions), member
    check_valid(ppt, subs, result)
    check_balanced(subs, result)


# ---------------------------------------------------------------------------------------
# the chains on random holdings


@st.composite
def holdings(draw: st.DrawFn) -> tuple[GroupModel, Holdings, int]:
    """Every partition of a subscribed topic held by one of its subscribers (as after
    the general path's placement), some retained; and a member to chain for."""
    sizes = draw(st.lists(st.integers(0, 5), min_size=1, max_size=4))
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + n)
    topics_of = draw(
        st.lists(
            st.sets(st.integers(0, len(sizes) - 1), min_size=1).map(sorted),
            min_size=1,
            max_size=6,
        )
    )
    members = len(topics_of)
    model = GroupModel(
        topic_names=[f"t{t}" for t in range(len(sizes))],
        offsets=offsets,
        member_ids=[f"m{m}" for m in range(members)],
        instance_ids=[None] * members,
        member_topics=topics_of,
        claims=[[] for _ in range(members)],
        subscribed_claims=[[] for _ in range(members)],
        generations=[1] * members,
    )
    subscribers = model.subscribers()
    owner = [-1] * offsets[-1]
    retained = bytearray(offsets[-1])
    for t, subs in enumerate(subscribers):
        for p in range(offsets[t], offsets[t + 1]):
            if subs:
                owner[p] = draw(st.sampled_from(subs))
                retained[p] = draw(st.booleans())
    previous = [o if r else -1 for o, r in zip(owner, retained, strict=True)]
    load = [owner.count(m) for m in range(members)]
    fresh = [p for p in range(len(owner)) if owner[p] >= 0 and not retained[p]]
    fresh_held = [sum(1 for p in fresh if owner[p] == m) for m in range(members)]
    h = Holdings(owner, load, retained, fresh_held, fresh, previous)
    return model, h, draw(st.integers(0, members - 1))


def _snapshot(h: Holdings) -> tuple[list[int], bytearray, list[int]]:
    return list(h.owner), bytearray(h.retained), list(h.load)


def _check_chain(
    model: GroupModel,
    before: tuple[list[int], bytearray, list[int]],
    h: Holdings,
    source: int,
    to: int,
) -> None:
    owner, retained, load = before
    for p, (was, now) in enumerate(zip(owner, h.owner, strict=True)):
        if was != now:
            assert not retained[p], f"retained partition {p} moved"
            assert model.topic_of(p) in model.member_topics[now]
    for m, got in enumerate(h.load):
        assert got == load[m] + (m == to) - (m == source), m
        assert got == h.owner.count(m)
    fresh = [p for p in range(len(h.owner)) if h.owner[p] >= 0 and not h.retained[p]]
    assert h.fresh == fresh
    assert h.fresh_held == [sum(1 for p in fresh if h.owner[p] == m) for m in range(len(load))]


@given(holdings())
def test_chain_into_moves_fresh_partitions_from_a_member_two_above(
    case: tuple[GroupModel, Holdings, int],
) -> None:
    model, h, receiver = case
    before = _snapshot(h)
    if chain_into(model, h, receiver):
        (giver,) = [m for m in range(len(h.load)) if h.load[m] == before[2][m] - 1]
        assert before[2][giver] >= before[2][receiver] + 2
        _check_chain(model, before, h, giver, receiver)
    else:
        assert _snapshot(h) == before


@given(holdings())
def test_chain_out_moves_fresh_partitions_to_a_member_below(
    case: tuple[GroupModel, Holdings, int],
) -> None:
    model, h, giver = case
    before = _snapshot(h)
    if chain_out(model, model.subscribers(), h, giver):
        (taker,) = [m for m in range(len(h.load)) if h.load[m] == before[2][m] + 1]
        assert before[2][taker] < before[2][giver]
        _check_chain(model, before, h, giver, taker)
    else:
        assert _snapshot(h) == before


def test_a_fresh_partition_travels_instead_of_a_retained_one() -> None:
    # t0 (dense 0, 1): member 0 holds both, retained; t1 (dense 2): member 1 holds it,
    # fresh, loaded as if it held two more; member 2 subscribes to t0 and t1
    model = GroupModel(
        topic_names=["t0", "t1"],
        offsets=[0, 2, 3],
        member_ids=["m0", "m1", "m2"],
        instance_ids=[None] * 3,
        member_topics=[[0], [0, 1], [0, 1]],
        claims=[[], [], []],
        subscribed_claims=[[], [], []],
        generations=[1] * 3,
    )
    fresh: list[int] = []
    insort(fresh, 2)
    h = Holdings([0, 0, 1], [2, 3, 0], bytearray([1, 1, 0]), [0, 1, 0], fresh, [0, 0, -1])
    assert chain_into(model, h, 2)
    assert h.owner == [0, 0, 2]
    assert h.load == [2, 2, 1]
    assert h.fresh == [2]
    assert h.fresh_held == [0, 0, 1]
