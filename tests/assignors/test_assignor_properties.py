"""Properties every assignor must have, over random groups (hypothesis).

Run on the Rust backend at full size; the differential test holds the Python
reference to identical output, so the properties carry over to it.
"""

from __future__ import annotations

import random

import pytest
from assign_checks import (
    Group,
    check_balanced,
    check_cooperative,
    check_valid,
    groups,
    next_round,
    owned_sets,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
)

ALL = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
STICKY = [StickyAssignor, CooperativeStickyAssignor]
SETTINGS = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def settle(
    assignor: Assignor, group: Group, start: int = 1, limit: int = 6
) -> tuple[dict, dict, int]:
    """Run rounds (members own what they were given) until the output stops changing."""
    subs = group.subscriptions
    result = assignor.assign(group.partitions_per_topic, subs)
    for rounds in range(1, limit + 1):
        if isinstance(assignor, CooperativeStickyAssignor):
            check_cooperative(subs, result)
        subs = next_round(subs, result, start + rounds)
        again = assignor.assign(group.partitions_per_topic, subs)
        if owned_sets(again) == owned_sets(result):
            return subs, result, rounds
        result = again
    raise AssertionError(f"no fixed point after {limit} rounds")


@pytest.mark.parametrize("cls", [RangeAssignor, RoundRobinAssignor, StickyAssignor])
@SETTINGS
@given(group=groups())
def test_every_subscribed_partition_is_assigned_exactly_once(
    cls: type[Assignor], group: Group
) -> None:
    result = cls().assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result)


@pytest.mark.parametrize("cls", STICKY)
@SETTINGS
@given(group=groups())
def test_sticky_assignors_are_balanced_once_settled(cls: type[Assignor], group: Group) -> None:
    subs, result, _ = settle(cls(), group)
    check_valid(group.partitions_per_topic, subs, result)
    check_balanced(subs, result)


@SETTINGS
@given(group=groups())
def test_sticky_first_round_is_balanced(group: Group) -> None:
    result = StickyAssignor().assign(group.partitions_per_topic, group.subscriptions)
    check_balanced(group.subscriptions, result)


@SETTINGS
@given(group=groups())
def test_cooperative_never_moves_a_partition_in_one_round(group: Group) -> None:
    result = CooperativeStickyAssignor().assign(group.partitions_per_topic, group.subscriptions)
    check_valid(group.partitions_per_topic, group.subscriptions, result, complete=False)
    check_cooperative(group.subscriptions, result)


@SETTINGS
@given(group=groups(identical=True))
def test_cooperative_settles_within_two_rounds_for_identical_subscriptions(group: Group) -> None:
    # Round 1 may withhold partitions that change owner; round 2 places them; the
    # third assignment must equal the second.
    _, _, rounds = settle(CooperativeStickyAssignor(), group)
    assert rounds <= 2


@SETTINGS
@given(group=groups(identical=False))
def test_cooperative_settles_quickly_for_any_subscriptions(group: Group) -> None:
    _, _, rounds = settle(CooperativeStickyAssignor(), group)
    assert rounds <= 3


@pytest.mark.parametrize("cls", STICKY)
@SETTINGS
@given(group=groups(max_members=120, identical=True), data=st.data())
def test_a_departure_moves_nothing_between_survivors(
    cls: type[Assignor], group: Group, data: st.DataObject
) -> None:
    assignor = cls()
    subs, result, _ = settle(assignor, group)
    if len(subs) < 2:
        return
    leaver = data.draw(st.sampled_from(sorted(subs)))
    survivors = {m: s for m, s in subs.items() if m != leaver}
    after = assignor.assign(group.partitions_per_topic, survivors)
    for m in survivors:
        assert set(result[m].partitions) <= set(after[m].partitions), f"{m} lost partitions"
    if isinstance(assignor, StickyAssignor):
        check_valid(group.partitions_per_topic, survivors, after)


@pytest.mark.parametrize("cls", STICKY)
@SETTINGS
@given(group=groups(max_members=120, identical=True))
def test_a_joiner_takes_only_what_it_needs(cls: type[Assignor], group: Group) -> None:
    assignor = cls()
    subs, result, _ = settle(assignor, group)
    topics = next(iter(subs.values())).topics
    joined = dict(subs)
    joined["zz-newcomer"] = Subscription(topics)
    after = assignor.assign(group.partitions_per_topic, joined)
    for m in subs:
        assert set(after[m].partitions) <= set(result[m].partitions), f"{m} gained partitions"
    if isinstance(assignor, StickyAssignor):
        total = sum(len(a.partitions) for a in result.values())
        fair = total // len(joined)
        assert fair <= len(after["zz-newcomer"].partitions) <= fair + 1
    else:
        # Round 1 only revokes; the newcomer gets what was freed a round later.
        assert not after["zz-newcomer"].partitions
        settled, final, _ = settle(
            assignor, Group(group.partitions_per_topic, next_round(joined, after, 99))
        )
        check_balanced(settled, final)


@pytest.mark.parametrize("cls", STICKY)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups(max_members=60, max_topics=20, max_partitions=60), seed=st.integers(0, 2**32))
def test_churn_over_ten_rounds(cls: type[Assignor], group: Group, seed: int) -> None:
    """Members join and leave for ten rounds; every round is valid (and cooperative-safe)."""
    rnd = random.Random(seed)
    assignor = cls()
    ppt = group.partitions_per_topic
    subs = dict(group.subscriptions)
    topic_names = list(ppt)
    for generation in range(1, 11):
        result = assignor.assign(ppt, subs)
        if isinstance(assignor, CooperativeStickyAssignor):
            check_cooperative(subs, result)
            check_valid(ppt, subs, result, complete=False)
        else:
            check_valid(ppt, subs, result)
            check_balanced(subs, result)
        subs = next_round(subs, result, generation)
        if len(subs) > 1 and rnd.random() < 0.5:
            del subs[rnd.choice(sorted(subs))]
        if rnd.random() < 0.5:
            topics = [t for t in topic_names if rnd.random() < 0.6] or topic_names[:1]
            subs[f"joiner-{generation}"] = Subscription(topics)
    settled, final, _ = settle(assignor, Group(ppt, subs), start=20)
    check_valid(ppt, settled, final)
    check_balanced(settled, final)


@pytest.mark.parametrize("cls", ALL)
@SETTINGS
@given(group=groups(max_members=40), seed=st.integers(0, 2**32))
def test_output_does_not_depend_on_dict_order(cls: type[Assignor], group: Group, seed: int) -> None:
    items = list(group.subscriptions.items())
    random.Random(seed).shuffle(items)
    topics = list(group.partitions_per_topic.items())
    random.Random(seed + 1).shuffle(topics)
    a = cls().assign(group.partitions_per_topic, group.subscriptions)
    b = cls().assign(dict(topics), dict(items))
    assert {m: list(x.partitions) for m, x in a.items()} == {
        m: list(x.partitions) for m, x in b.items()
    }
