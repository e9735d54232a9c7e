"""pytest-benchmark: Rust vs the Python reference vs kafka-python (see groupcoord.benchmark).

One benchmark per (scenario, phase, assignor, implementation), grouped by case so that
``--benchmark-only`` compares the implementations of a case side by side, plus the floor
per scenario.

Sizes: ``GROUPCOORD_BENCH_SCALE`` (a preset such as ``smoke``/``quick``/``all``, or
scenario names separated by commas, as ``groupcoord bench --sizes``); without it, ``all``
with ``--benchmark-only`` and ``smoke`` otherwise, so that the CI run
(``--benchmark-disable``, each case once) stays small. Peer runs estimated over
``GROUPCOORD_BENCH_PEER_LIMIT`` seconds (default: the preset's) are skipped.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import pytest

from groupcoord import benchmark as gb

#: slugs for test ids (the table's names have spaces and parentheses)
SLUGS = {
    gb.RUST_ASSIGN: "rust-assign",
    gb.RUST_ENCODED: "rust-encoded",
    gb.REFERENCE_ASSIGN: "reference-assign",
    gb.REFERENCE_ENCODED: "reference-encoded",
    gb.KAFKA_PYTHON: "kafka-python",
}
#: rounds per benchmark at most, and the seconds of runs after which fewer are enough
MAX_ROUNDS = 5
ROUND_BUDGET = 1.0


def _sizes(config: pytest.Config) -> tuple[list[gb.Scenario], float]:
    spec = os.environ.get("GROUPCOORD_BENCH_SCALE") or (
        "all" if config.getoption("benchmark_only", default=False) else "smoke"
    )
    scenarios, limit = gb.resolve_sizes(spec)
    override = os.environ.get("GROUPCOORD_BENCH_PEER_LIMIT")
    return scenarios, float(override) if override else limit


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    scenarios, limit = _sizes(metafunc.config)
    if "point" in metafunc.fixturenames:
        # one list, small scenarios first: the estimates for big ones come from small ones
        points = [
            (scenario, phase, assignor, implementation, limit)
            for scenario in scenarios
            for phase in gb.PHASES
            for assignor in gb.ASSIGNORS
            for implementation in gb.IMPLEMENTATIONS
        ]
        ids = [f"{s.name}-{p}-{a}-{SLUGS[i]}" for s, p, a, i, _ in points]
        metafunc.parametrize("point", points, ids=ids)
    if "scenario" in metafunc.fixturenames:
        metafunc.parametrize("scenario", scenarios, ids=[s.name for s in scenarios])


# Inputs of the scenario being benchmarked (cases run scenario by scenario, so one at a time
# is kept: 2000x1M inputs are large) and the run times seen so far, for the estimates.
_prepared: dict[Any, Any] = {}
_estimator = gb.Estimator()


def _case(scenario: gb.Scenario, phase: str, assignor: str) -> gb.Case:
    if _prepared.get("scenario") != scenario.name:
        _prepared.clear()
        _prepared["scenario"] = scenario.name
    key = (phase, assignor)
    if key not in _prepared:
        _prepared[key] = gb.prepare_case(scenario, phase, assignor)
    case: gb.Case = _prepared[key]
    return case


def _cluster(scenario: gb.Scenario) -> Any:
    if "cluster" not in _prepared:
        _prepared["cluster"] = gb.kafka_python_cluster(scenario)
    return _prepared["cluster"]


class _Recorder:
    """Calls ``fn`` under the peer limit and keeps each call's duration for the estimates."""

    def __init__(self, fn: Callable[[], object], limit: float | None) -> None:
        self.fn = fn
        self.limit = limit
        self.runs: list[float] = []

    def __call__(self) -> object:
        with gb.deadline(self.limit):
            start = time.perf_counter()
            result = self.fn()
            self.runs.append(time.perf_counter() - start)
        return result


def _collect() -> None:
    # before each round, outside its timing: no round pays for another's garbage (the
    # harness's own objects are frozen out of the collector's reach, see gb.frozen_heap)
    gc.collect()


def _rounds(guess: float | None) -> int:
    if guess is None or guess <= 0:
        return 3
    return max(1, min(MAX_ROUNDS, int(ROUND_BUDGET / guess)))


def test_assign(benchmark: Any, point: tuple[gb.Scenario, str, str, str, float]) -> None:
    scenario, phase, assignor, implementation, limit = point
    peer = implementation in gb.PEERS
    key = (implementation, assignor, phase)
    guess = _estimator.estimate(key, scenario)
    if peer and guess is not None and guess > limit:
        pytest.skip(f"{implementation} estimated at {guess:.0f} s, over {limit:g} s")
    cluster = None
    if implementation == gb.KAFKA_PYTHON:
        pytest.importorskip("kafka", reason="kafka-python is not installed")
        cluster = _cluster(scenario)
    case = _case(scenario, phase, assignor)
    recorder = _Recorder(case.runner(implementation, cluster), limit if peer else None)
    benchmark.group = case.id
    benchmark.extra_info.update(
        scenario=scenario.name, phase=phase, assignor=assignor, implementation=implementation
    )
    try:
        with gb.frozen_heap():
            benchmark.pedantic(recorder, setup=_collect, rounds=_rounds(guess), iterations=1)
    except gb.RunTimeout:
        pytest.skip(f"{implementation} took over {limit:g} s")
    except KeyError as exc:
        if implementation != gb.KAFKA_PYTHON:
            raise
        # kafka-python's RoundRobin indexes its member map with a tuple when a member does
        # not subscribe to the partition's topic
        pytest.xfail(f"kafka-python crashed: KeyError {exc}")
    finally:
        if recorder.runs:
            _estimator.record(key, scenario, min(recorder.runs))


def test_floor(benchmark: Any, scenario: gb.Scenario) -> None:
    """Building every partition of the scenario as a TopicPartition (what assign() can't beat)."""
    benchmark.group = f"{scenario.name}-floor"
    run = gb.floor_runner(scenario)
    with gb.frozen_heap():
        benchmark.pedantic(run, setup=_collect, rounds=MAX_ROUNDS, iterations=1)
