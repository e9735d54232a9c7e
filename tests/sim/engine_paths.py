"""Helpers of the engine's differential tests: the same outputs, and an engine's counters
of the paths its runs took (so that a comparison is not vacuous)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import pytest

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
