"""Helpers of the engine's differential tests: the same outputs, an engine's counters of
the paths its runs took (so that a comparison is not vacuous), and random faults."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest
from hypothesis import strategies as st

import groupcoord.sim
from groupcoord.sim import SimResult
from groupcoord.sim.engine import Engine

T = TypeVar("T")


def same_outputs(a: SimResult | str, b: SimResult | str) -> None:
    """The same summary, event rows and rebalance rows (or the same invariant violation)."""
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    assert a.summary_json() == b.summary_json()
    assert a.event_rows == b.event_rows
    assert a.rebalance_rows == b.rebalance_rows


@contextmanager
def engine_counts(read: Callable[[Engine], T]) -> Iterator[list[T]]:
    """``read(engine)`` after each run made inside (an engine's counters of its paths)."""
    counts: list[T] = []

    class Counting(Engine):
        def run(self) -> Any:
            recorder = super().run()
            counts.append(read(self))
            return recorder

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(groupcoord.sim, "Engine", Counting)
        yield counts


ACTION = st.sampled_from(
    ["join", "crash", "leave", "restart", "pause", "network_partition", "partitions"]
)


def draw_timeline(draw: st.DrawFn, topics: dict[str, int], events: int) -> list[dict[str, Any]]:
    """Up to ``events`` random faults in the first 40 virtual seconds (pauses and cuts
    shorter and longer than the session: zombies that process what others own), and maybe
    a coordinator failover."""
    timeline: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, events))):
        action = draw(ACTION)
        event: dict[str, Any] = {"at_s": draw(st.integers(1, 40)), "action": action}
        if action == "restart":
            event["downtime_s"] = draw(st.sampled_from([0, 0.5, 3]))
        if action in ("pause", "network_partition"):
            event["duration_s"] = draw(st.sampled_from([0.5, 3, 12]))
        if action == "partitions":
            event["topic"] = draw(st.sampled_from(sorted(topics)))
            event["count"] = topics[event["topic"]] + draw(st.integers(1, 4))
        elif action != "join" or draw(st.booleans()):
            event["count"] = draw(st.integers(1, 2))
        timeline.append(event)
    if draw(st.booleans()):
        timeline.append(
            {
                "at_s": draw(st.integers(1, 40)),
                "action": "coordinator_failover",
                "downtime_s": draw(st.sampled_from([0, 1, 4])),
            }
        )
    return timeline
