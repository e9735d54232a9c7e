"""The coordinator recomputes a consumer group's target through the assignor's own kept
copy (``GroupTarget``, reading no million partitions back from Python). Differential:
every recomputation of random group lives (joins with random subscriptions and assignor
choices, leaves, members fenced and back under the same id, static members replaced,
topics growing and appearing) must equal ``assign(current=<the target before>)``, what
the coordinator computed before it kept a copy. Mutation-checked: trusting the keeper
after a static member's replacement, or after a removed member came back, fails this."""

from __future__ import annotations

from typing import Any

import pytest
from consumer_harness import REBALANCE_MS, SESSION_MS, ConsumerHarness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import consumer_heartbeat
from groupcoord.coordinator.consumer_heartbeat import ASSIGNORS, preferred_assignor

MEMBERS = ("m0", "m1", "m2", "m3", "m4")
TOPIC_NAMES = ("orders", "payments", "audit")

Op = tuple[Any, ...]
ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("join"),
            st.sampled_from(MEMBERS),
            st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=3, unique=True),
            st.sampled_from([None, "uniform", "range"]),
            st.sampled_from([None, "i0", "i1"]),
        ),
        st.tuples(st.just("heartbeat"), st.sampled_from(MEMBERS)),
        st.tuples(st.just("leave"), st.sampled_from(MEMBERS), st.sampled_from([-1, -2])),
        st.tuples(st.just("advance"), st.integers(1, SESSION_MS + REBALANCE_MS)),
        st.tuples(st.just("grow"), st.sampled_from(TOPIC_NAMES), st.integers(1, 4)),
    ),
    max_size=40,
)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap the coordinator's recomputation: compare each with the reference."""
    original = consumer_heartbeat._update_target
    count = [0]

    def update_target(rb: Any, group: Any) -> None:
        before = dict(group.target)
        members = {
            m.member_id: consumer_heartbeat.ServerMember(
                topics=consumer_heartbeat._subscribed_topics(rb, m),
                rack=m.rack_id,
                instance_id=m.instance_id,
            )
            for m in group.members.values()
        }
        want = ASSIGNORS[preferred_assignor(group)].assign(
            members, group.subscription_metadata, current=before
        )
        original(rb, group)
        got = {m: {t: tuple(sorted(ps)) for t, ps in a.items()} for m, a in group.target.items()}
        assert got == {m: {t: ps for t, ps in a.items() if ps} for m, a in want.items()}
        count[0] += 1

    monkeypatch.setattr(consumer_heartbeat, "_update_target", update_target)
    return count


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(script=ops)
def test_kept_target_recomputes_as_assign_with_the_current_target(
    checked: list[int], script: list[Op]
) -> None:
    topics = {"orders": 6, "payments": 4, "audit": 2}
    h = ConsumerHarness(topics)
    epochs: dict[str, int] = {}
    instances: dict[str, str | None] = {}
    for op in script:
        kind = op[0]
        if kind == "join":
            _, member_id, subscribed, assignor, instance = op
            fields: dict[str, Any] = {}
            if assignor is not None:
                fields["server_assignor"] = assignor
            if instance is not None:
                fields["instance_id"] = instance
            resp = h.join(member_id, tuple(subscribed), **fields)
            if resp.error is None:
                epochs[member_id] = resp.member_epoch
                instances[member_id] = instance
        elif kind == "heartbeat":
            member_id = op[1]
            if member_id in epochs:
                resp = h.heartbeat(member_id=member_id, member_epoch=epochs[member_id])
                if resp.error is None:
                    epochs[member_id] = resp.member_epoch
                else:
                    epochs.pop(member_id)
        elif kind == "leave":
            # -2: a static member's temporary leave (another member id may take its place)
            _, member_id, epoch = op
            if member_id in epochs:
                h.heartbeat(
                    member_id=member_id,
                    member_epoch=epoch,
                    instance_id=instances.get(member_id) if epoch == -2 else None,
                )
                epochs.pop(member_id)
        elif kind == "advance":
            h.advance(op[1])
        else:
            _, topic, more = op
            topics[topic] += more
            h.set_topics(topics)


def test_the_differential_sees_recomputations(checked: list[int]) -> None:
    # the wrapper is what the coordinator calls (not a copy it never reaches)
    h = ConsumerHarness({"orders": 6})
    h.join("a", ("orders",))
    h.join("b", ("orders",))
    assert checked[0] >= 2


def _two_on_orders() -> ConsumerHarness:
    h = ConsumerHarness({"orders": 6, "payments": 2})
    a = h.join("m0", ("orders",))
    b = h.join("m1", ("orders",))
    h.heartbeat(member_id="m0", member_epoch=a.member_epoch)
    assert b.error is None
    return h


def test_a_member_back_under_its_id_before_a_recomputation(checked: list[int]) -> None:
    # m1 leaves and its rejoin (now also on payments) is the next recomputation: the
    # keeper still holds m1's old partitions, which assign(current=target) no longer has
    h = _two_on_orders()
    h.heartbeat(member_id="m1", member_epoch=-1)
    assert h.join("m1", ("orders", "payments")).error is None
    assert checked[0] >= 3


def test_a_static_member_replaced_under_another_id(checked: list[int]) -> None:
    # the target of instance i1 moves from m1 to n1: the keeper has it under m1
    h = ConsumerHarness({"orders": 6, "payments": 2})
    a = h.join("m0", ("orders",))
    b = h.join("m1", ("orders",), instance_id="i1")
    h.heartbeat(member_id="m0", member_epoch=a.member_epoch)
    h.heartbeat(member_id="m1", member_epoch=b.member_epoch, instance_id="i1")
    h.heartbeat(member_id="m1", member_epoch=-2, instance_id="i1")
    assert h.join("n1", ("orders", "payments"), instance_id="i1").error is None
    assert checked[0] >= 3
