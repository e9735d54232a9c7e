"""The Rust core and the pure-Python reference give identical output, for every assignor,
and refuse the same wrong input (wrong types, not only wrong values) with the same error.

(The sticky and cooperative implementations are the same algorithm step for step, so the
test holds them to identical output too, not only range and round-robin;
docs/architecture.md, "Data model and API contract".)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from assign_checks import (
    Group,
    groups,
    wrong_encoded_subscriptions,
    wrong_group_instance_ids,
    wrong_partitions_per_topic,
    wrong_subscriptions,
)
from hypothesis import HealthCheck, given, settings

from groupcoord import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
)
from groupcoord.assignors.base import Backend
from groupcoord.errors import InvalidAssignorInput
from groupcoord.protocol import encode_subscription


def as_lists(result: dict) -> dict[str, list]:
    return {m: list(a.partitions) for m, a in result.items()}


@pytest.mark.parametrize(
    "cls", [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups(max_members=60, max_topics=15, max_partitions=60))
def test_rust_and_reference_agree(cls: type[Assignor], group: Group) -> None:
    rust = cls(backend="rust").assign(group.partitions_per_topic, group.subscriptions)
    python = cls(backend="python").assign(group.partitions_per_topic, group.subscriptions)
    assert as_lists(rust) == as_lists(python)


@pytest.mark.parametrize(
    "cls", [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(group=groups(max_members=40, max_topics=10, max_partitions=40))
def test_rust_and_reference_agree_on_bytes(cls: type[Assignor], group: Group) -> None:
    encoded = {m: encode_subscription(s, 3) for m, s in group.subscriptions.items()}
    rust = cls(backend="rust").assign_encoded(group.partitions_per_topic, encoded)
    python = cls(backend="python").assign_encoded(group.partitions_per_topic, encoded)
    assert rust == python


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    """What a call did: its result, or the exception's type and message."""
    try:
        result = call()
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", result


ALL = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]


@pytest.mark.parametrize("cls", ALL)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ppt=wrong_partitions_per_topic(), subs=wrong_subscriptions())
def test_both_backends_refuse_wrong_types_alike(cls: type[Assignor], ppt: Any, subs: Any) -> None:
    rust = outcome(lambda: as_lists(cls(backend="rust").assign(ppt, subs)))
    python = outcome(lambda: as_lists(cls(backend="python").assign(ppt, subs)))
    assert rust == python
    # a refusal is always the typed error, never an AttributeError or TypeError leaking out
    assert rust[0] in ("ok", "InvalidAssignorInput"), rust


@pytest.mark.parametrize("cls", ALL)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ppt=wrong_partitions_per_topic(),
    subs=wrong_encoded_subscriptions(),
    instances=wrong_group_instance_ids(),
)
def test_both_backends_refuse_wrong_encoded_input_alike(
    cls: type[Assignor], ppt: Any, subs: Any, instances: Any
) -> None:
    rust = outcome(lambda: cls(backend="rust").assign_encoded(ppt, subs, instances))
    python = outcome(lambda: cls(backend="python").assign_encoded(ppt, subs, instances))
    assert rust == python  # payload errors too: the same field, member, offset and words
    assert rust[0] in ("ok", "InvalidAssignorInput", "InvalidPayload"), rust


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize(
    ("ppt", "subs", "message"),
    [
        # the cases, each by name
        (
            {"orders": 3},
            {"m": Subscription(["orders"], owned_partitions=[("orders", "0")])},  # type: ignore[list-item]
            "owned partitions of 'm' must be (str, int32) pairs, got ('orders', '0')",
        ),
        (
            {"orders": 3},
            {"m": Subscription(["orders"], owned_partitions=["orders-0"])},  # type: ignore[list-item]
            "owned partitions of 'm' must be (str, int32) pairs, got 'orders-0'",
        ),
        (
            [("orders", 3)],
            {"m": Subscription(["orders"])},
            "partitions_per_topic must be a mapping of topic name to partition count, got list",
        ),
        (
            None,
            {"m": Subscription(["orders"])},
            "partitions_per_topic must be a mapping of topic name to partition count, got NoneType",
        ),
        (
            {"orders": 3},
            [("m", Subscription(["orders"]))],
            "subscriptions must be a mapping of member id to Subscription, got list",
        ),
    ],
)
def test_the_reported_bad_inputs_are_refused_by_name(
    cls: type[Assignor], backend: Backend, ppt: Any, subs: Any, message: str
) -> None:
    with pytest.raises(InvalidAssignorInput) as info:
        cls(backend=backend).assign(ppt, subs)
    assert str(info.value) == message


def test_a_bare_string_of_owned_partitions_is_refused() -> None:
    with pytest.raises(TypeError, match="owned_partitions must be a sequence of TopicPartition"):
        Subscription(["orders"], owned_partitions="orders")  # type: ignore[arg-type]
