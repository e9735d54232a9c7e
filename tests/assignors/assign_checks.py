"""Reusable invariant checkers and hypothesis strategies for assignor tests.

They speak the public API (TopicPartition, Subscription, Assignment) so the same
checks run against every assignor and both backends.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from hypothesis import strategies as st

from groupcoord import Assignment, Subscription, TopicPartition

Result = Mapping[str, Assignment]


def owned_sets(result: Result) -> dict[str, set[TopicPartition]]:
    return {m: set(a.partitions) for m, a in result.items()}


def check_valid(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    result: Result,
    *,
    complete: bool = True,
) -> None:
    """Every member present; partitions only to subscribers, at most once; all if complete."""
    assert set(result) == set(subscriptions)
    seen: dict[TopicPartition, str] = {}
    for member, assignment in result.items():
        topics = set(subscriptions[member].topics)
        for tp in assignment.partitions:
            assert isinstance(tp, TopicPartition)
            assert tp.topic in topics, f"{member} got {tp} without subscribing"
            assert 0 <= tp.partition < partitions_per_topic[tp.topic]
            assert tp not in seen, f"{tp} assigned to {seen[tp]} and {member}"
            seen[tp] = member
    if complete:
        wanted = {
            TopicPartition(t, p)
            for sub in subscriptions.values()
            for t in sub.topics
            if t in partitions_per_topic
            for p in range(partitions_per_topic[t])
        }
        assert set(seen) == wanted, f"unassigned: {sorted(wanted - set(seen))[:5]}"


def check_balanced(subscriptions: Mapping[str, Subscription], result: Result) -> None:
    """Java's verifyValidityAndBalance: no partition could move to make two members more equal."""
    loads = {m: len(a.partitions) for m, a in result.items()}
    topics = {m: set(s.topics) for m, s in subscriptions.items()}
    if len({frozenset(t) for t in topics.values()}) == 1 and loads:
        assert max(loads.values()) - min(loads.values()) <= 1, loads
    for small, small_load in loads.items():
        for large, large_load in loads.items():
            if large_load - small_load < 2:
                continue
            for tp in result[large].partitions:
                assert tp.topic not in topics[small], (
                    f"{tp} could move from {large} ({large_load}) to {small} ({small_load})"
                )


def revoked_and_added(
    subscriptions: Mapping[str, Subscription], result: Result
) -> tuple[dict[str, set[TopicPartition]], dict[str, set[TopicPartition]]]:
    revoked, added = {}, {}
    for m, sub in subscriptions.items():
        owned, new = set(sub.owned_partitions), set(result[m].partitions)
        revoked[m], added[m] = owned - new, new - owned
    return revoked, added


def check_cooperative(subscriptions: Mapping[str, Subscription], result: Result) -> None:
    """KIP-429: nothing is in one member's revoked set and another's added set in one round."""
    revoked, added = revoked_and_added(subscriptions, result)
    for m, parts in added.items():
        for other, gone in revoked.items():
            if other != m:
                clash = parts & gone
                assert not clash, f"{sorted(clash)[:3]} move {other} -> {m} in one round"


def next_round(
    subscriptions: Mapping[str, Subscription], result: Result, generation: int
) -> dict[str, Subscription]:
    """Every member now owns what it was given, at ``generation``."""
    return {
        m: Subscription(
            sub.topics,
            owned_partitions=sorted(result[m].partitions),
            generation_id=generation,
            group_instance_id=sub.group_instance_id,
            rack_id=sub.rack_id,
        )
        for m, sub in subscriptions.items()
    }


@dataclass(frozen=True)
class Group:
    partitions_per_topic: dict[str, int]
    subscriptions: dict[str, Subscription]


@st.composite
def groups(
    draw: st.DrawFn,
    *,
    max_members: int = 300,
    max_topics: int = 50,
    max_partitions: int = 200,
    identical: bool | None = None,
    with_ownership: bool = True,
) -> Group:
    """Random groups: sizes, identical or random subscriptions, prior claims with generations."""
    num_topics = draw(st.integers(1, max_topics))
    sizes = draw(st.lists(st.integers(0, max_partitions), min_size=num_topics, max_size=num_topics))
    ppt = {f"topic-{i}": n for i, n in enumerate(sizes)}
    names = list(ppt)
    num_members = draw(st.integers(1, max_members))
    same = draw(st.booleans()) if identical is None else identical
    all_partitions = [TopicPartition(t, p) for t in names for p in range(ppt[t])]
    subscriptions: dict[str, Subscription] = {}
    # One drawn seed drives the bulk choices: drawing each from hypothesis would
    # exhaust its entropy budget on groups this large.
    rnd = random.Random(draw(st.integers(0, 2**64)))
    for m in range(num_members):
        topics = names if same else [t for t in names if rnd.random() < 0.5]
        owned: list[TopicPartition] = []
        generation = -1
        if with_ownership and all_partitions and rnd.random() < 0.7:
            owned = rnd.sample(all_partitions, rnd.randint(0, min(8, len(all_partitions))))
            generation = rnd.randint(-1, 3)
        subscriptions[f"member-{rnd.randrange(10**6):06d}-{m}"] = Subscription(
            topics, owned_partitions=owned, generation_id=generation
        )
    return Group(ppt, subscriptions)


# ----------------------------------------------------------------------------- wrong input
# Inputs of the wrong type or shape, mixed with valid ones, for the Rust-vs-reference
# differential test of what the assignors refuse. Valid partition counts stay small, so an
# input that passes every check is still quick to assign.

_TOPICS = ["a", "b", "ghost"]


def _mostly(
    valid: st.SearchStrategy[object], wrong: st.SearchStrategy[object]
) -> st.SearchStrategy[object]:
    """``valid`` 7 times in 8: one wrong piece per input finds more than many at once."""
    # hypothesis favours small integers, so the rare branch is the largest
    return st.integers(0, 7).flatmap(lambda i: wrong if i == 7 else valid)


#: values of any type an assignor must not take for a count, a partition or an id
_wrong_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.text(max_size=2),
    st.binary(max_size=2),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.lists(st.integers(0, 3), max_size=2),
)
_hashable_wrong = st.one_of(
    st.none(), st.integers(-3, 3), st.binary(max_size=2), st.tuples(st.text(max_size=1))
)
_owned_items = _mostly(
    st.one_of(
        st.tuples(st.sampled_from(_TOPICS), st.integers(-2, 5)),  # some out of range: ignored
        st.builds(TopicPartition, st.sampled_from(_TOPICS), st.integers(0, 5)),
    ),
    st.one_of(
        st.tuples(st.sampled_from(_TOPICS), _wrong_scalars),
        st.tuples(_wrong_scalars, st.integers(0, 3)),
        st.text(max_size=4),  # "orders-0"
        st.lists(st.one_of(st.sampled_from(_TOPICS), st.integers(0, 3)), max_size=3),
        st.tuples(st.sampled_from(_TOPICS), st.integers(0, 3), st.integers(0, 3)),
        _wrong_scalars,
    ),
)
_subscription_values = _mostly(
    st.builds(
        Subscription,
        st.lists(st.sampled_from(_TOPICS), max_size=3),
        owned_partitions=st.lists(_owned_items, max_size=3),
        generation_id=st.integers(-1, 4),
    ),
    st.one_of(
        st.lists(st.sampled_from(_TOPICS), max_size=2),  # a bare topic list
        st.dictionaries(st.just("topics"), st.lists(st.sampled_from(_TOPICS), max_size=2)),
        _wrong_scalars,
    ),
)
_member_ids = _mostly(st.sampled_from(["m1", "m2", "m3"]), st.one_of(st.just(""), _hashable_wrong))
_counts = _mostly(st.integers(0, 5), st.one_of(st.integers(-3, -1), st.just(2**31), _wrong_scalars))


def _or_not_a_mapping(
    mapping: st.SearchStrategy[object], items: st.SearchStrategy[tuple[object, object]]
) -> st.SearchStrategy[object]:
    wrong = st.one_of(
        st.lists(items, max_size=2), st.none(), st.integers(0, 3), st.text(max_size=2)
    )
    return _mostly(mapping, wrong)


def wrong_partitions_per_topic() -> st.SearchStrategy[object]:
    keys = _mostly(st.sampled_from(["a", "b"]), _hashable_wrong)
    return _or_not_a_mapping(
        st.dictionaries(keys, _counts, max_size=3),
        st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 5)),
    )


def wrong_subscriptions() -> st.SearchStrategy[object]:
    """Member id -> Subscription mappings with wrong ids, values and owned partitions."""
    return _or_not_a_mapping(
        st.dictionaries(_member_ids, _subscription_values, max_size=4),
        st.tuples(_member_ids, _subscription_values),
    )


def wrong_encoded_subscriptions() -> st.SearchStrategy[object]:
    """Member id -> subscription bytes, with wrong ids and values (and garbage bytes)."""
    from groupcoord.protocol import encode_subscription

    encoded = st.builds(
        encode_subscription,
        st.builds(Subscription, st.lists(st.sampled_from(_TOPICS), max_size=3)),
        st.integers(0, 3),
    )
    values = _mostly(encoded, st.one_of(st.binary(max_size=6), _subscription_values))
    return _or_not_a_mapping(
        st.dictionaries(_member_ids, values, max_size=4), st.tuples(_member_ids, values)
    )


def wrong_group_instance_ids() -> st.SearchStrategy[object]:
    instances = _mostly(st.one_of(st.none(), st.sampled_from(["i1", "i2"])), _wrong_scalars)
    return st.one_of(
        st.none(),
        _or_not_a_mapping(
            st.dictionaries(st.sampled_from(["m1", "m2", "m3"]), instances, max_size=3),
            st.tuples(st.sampled_from(["m1", "m2"]), st.sampled_from(["i1", "i2"])),
        ),
    )
