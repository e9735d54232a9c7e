"""The lazy engine (application steps run on demand, not queued; quiet heartbeats in the
heartbeat lane) gives exactly the outputs of the reference engine that queues every step
and sends every heartbeat through the machine and ``GroupCoordinator.handle``
(``run(..., lazy=False)``): summary, event rows and rebalance rows, on hypothesis-drawn
scenarios (heartbeat thread on and off, pauses, network partitions, partition count
changes, coordinator failover, rolling restarts, random processing times and latencies,
auto-commit on and off, records or none).

The golden runs (test_engine_golden.py) run the lazy engine too; these tests check that
the lazy steps and the lane really ran (the comparisons are not vacuous)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

import pytest
from engine_paths import draw_timeline, engine_counts, same_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import groupcoord.sim
from groupcoord.sim import Scenario, SimResult, run
from groupcoord.sim.engine import Engine
from groupcoord.sim.invariants import InvariantViolation

T = TypeVar("T")


@contextmanager
def _lazy_steps() -> Iterator[list[int]]:
    """Counts the lazy steps of the runs made inside."""
    counts: list[int] = []

    class Counting(Engine):
        def run(self) -> Any:
            recorder = super().run()
            counts.append(self.lazy_steps)
            return recorder

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(groupcoord.sim, "Engine", Counting)
        yield counts


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Scenario, int]:
    members = draw(st.integers(1, 6))
    topics = draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 8), min_size=1))
    session = draw(st.sampled_from([1_000, 3_000, 10_000]))
    timeline = draw_timeline(draw, topics, 5)
    doc = {
        "duration_s": 60,
        "group": {
            "members": members,
            "topics": topics,
            "assignors": draw(
                st.sampled_from([["cooperative-sticky"], ["range"], ["roundrobin"], ["sticky"]])
            ),
            "static": draw(st.booleans()),
        },
        "consumer": {
            "session_timeout_ms": session,
            "heartbeat_interval_ms": session // draw(st.sampled_from([3, 4])),
            "max_poll_interval_ms": draw(st.sampled_from([1_500, 5_000, 300_000])),
            "max_poll_records": draw(st.sampled_from([1, 5, 50, 500])),
            "heartbeat_thread": draw(st.booleans()),
            "enable_auto_commit": draw(st.sampled_from([True, True, True, False])),
            "auto_commit_interval_ms": draw(st.sampled_from([100, 1_000, 5_000])),
            "metadata_max_age_ms": draw(st.sampled_from([2_000, 300_000])),
        },
        "coordinator": {
            "group_initial_rebalance_delay_ms": draw(st.sampled_from([0, 500])),
            "group_min_session_timeout_ms": 500,
        },
        "workload": {
            # 0: the members only heartbeat (the heartbeat lane)
            "records_per_second_per_partition": draw(st.sampled_from([0, 1, 10, 100])),
            "record_time_ms": draw(
                st.sampled_from(
                    [
                        1,
                        0.3,
                        {"dist": "uniform", "low": 0, "high": 30},
                        {"dist": "lognormal", "median": 2, "p99": 200},
                        {"dist": "empirical", "values": [0.5, 1, 1, 4, 40]},
                    ]
                )
            ),
        },
        "network": {
            "latency_ms": draw(st.sampled_from([0, 1, {"dist": "uniform", "low": 0, "high": 20}]))
        },
        "timeline": timeline,
    }
    return Scenario.from_dict(doc), draw(st.integers(0, 1000))


def _run(scenario: Scenario, seed: int, *, lazy: bool) -> SimResult | str:
    """The result, or the invariant violation the run stopped at (some drawn settings, such
    as heartbeat.interval.ms above max.poll.interval.ms with static members, break the
    checked properties in both engines: they must break them at the same point)."""
    try:
        return run(scenario, seed, check_invariants=True, lazy=lazy)
    except InvariantViolation as e:
        return str(e)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_lazy_engine_gives_the_reference_outputs(case: tuple[Scenario, int]) -> None:
    scenario, seed = case
    with _lazy_steps() as counts:
        lazy = _run(scenario, seed, lazy=True)
    eager = _run(scenario, seed, lazy=False)
    if isinstance(lazy, str) or isinstance(eager, str):
        assert lazy == eager
        return
    same_outputs(lazy, eager)
    c = scenario.consumer
    if not (c.heartbeat_thread and c.enable_auto_commit):
        assert counts == [0]


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"consumer.max_poll_records": 1, "workload.records_per_second_per_partition": 200},
        # a pause longer than the session: the zombie and the new owner process the same
        # partitions
        {
            "timeline": [
                {"at_s": 20, "action": "pause", "duration_s": 15, "count": 2},
                {"at_s": 45, "action": "network_partition", "duration_s": 15, "count": 1},
                {"at_s": 70, "action": "restart", "count": 3, "downtime_s": 2},
                {"at_s": 90, "action": "coordinator_failover", "downtime_s": 2},
            ]
        },
        {
            "group.static": True,
            "timeline": [{"at_s": 30, "action": "restart", "count": 4, "downtime_s": 3}],
        },
    ],
    ids=["steady", "one-record-polls", "faults", "static-restart"],
)
def test_lazy_steps_run_and_change_nothing(overrides: dict[str, Any]) -> None:
    scenario = Scenario.from_dict(
        {
            "duration_s": 120,
            "group": {"members": 5, "topics": {"t": 10}},
            "consumer": {"session_timeout_ms": 6_000, "heartbeat_interval_ms": 2_000},
            "workload": {
                "records_per_second_per_partition": 20,
                "record_time_ms": {"dist": "lognormal", "median": 3, "p99": 40},
            },
            "network": {"latency_ms": {"dist": "uniform", "low": 0.2, "high": 4}},
        }
    ).replace(**overrides)
    with _lazy_steps() as counts:
        lazy = run(scenario, 3, check_invariants=True)
    eager = run(scenario, 3, lazy=False)
    same_outputs(lazy, eager)
    # most application steps ran lazily
    assert counts[0] > lazy.summary["records_processed"] // 2


def _lane_heartbeats() -> AbstractContextManager[list[int]]:
    """Counts the heartbeats answered in the lane by the runs made inside."""
    return engine_counts(lambda engine: engine.lane_heartbeats)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"group.static": True, "network.latency_ms": 0.4},
        {
            "timeline": [
                {"at_s": 20, "action": "pause", "duration_s": 15, "count": 2},
                {"at_s": 45, "action": "network_partition", "duration_s": 15, "count": 1},
                {"at_s": 60, "action": "join", "count": 2},
                {"at_s": 70, "action": "restart", "count": 3, "downtime_s": 2},
                {"at_s": 90, "action": "coordinator_failover", "downtime_s": 2},
                {"at_s": 100, "action": "crash", "count": 1},
            ]
        },
        # members without partitions heartbeat in the lane while the others process
        {"group.members": 8, "workload.records_per_second_per_partition": 20},
    ],
    ids=["steady", "static", "faults", "idle-members"],
)
def test_lane_heartbeats_run_and_change_nothing(overrides: dict[str, Any]) -> None:
    scenario = Scenario.from_dict(
        {
            "duration_s": 120,
            "group": {"members": 5, "topics": {"t": 5}},
            "consumer": {"session_timeout_ms": 6_000, "heartbeat_interval_ms": 2_000},
            "workload": {"records_per_second_per_partition": 0},
            "network": {"latency_ms": {"dist": "uniform", "low": 0.2, "high": 4}},
            "timeline": [{"at_s": 50, "action": "leave", "count": 1}],
        }
    ).replace(**overrides)
    with _lane_heartbeats() as counts:
        lane = run(scenario, 5, check_invariants=True)
    eager = run(scenario, 5, lazy=False)
    same_outputs(lane, eager)
    idle = lane.summary["simulated_heartbeats"]
    if "group.members" in overrides:
        idle = idle * 3 // 8  # three of the eight members have no partition
    # most heartbeats of the members with nothing else to do went through the lane
    assert counts[0] > idle // 2, (counts, lane.summary["simulated_heartbeats"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_native_application_loop_gives_the_python_loops_outputs(
    case: tuple[Scenario, int],
) -> None:
    """``_core.app_loop`` (Rust) runs the lazy application steps exactly as the Python
    loop does: the same floats, the same outputs."""
    scenario, seed = case
    native = _run_native(scenario, seed, native=True)
    python = _run_native(scenario, seed, native=False)
    if isinstance(native, str) or isinstance(python, str):
        assert native == python
        return
    same_outputs(native, python)


def _run_native(scenario: Scenario, seed: int, *, native: bool) -> SimResult | str:
    try:
        return run(scenario, seed, check_invariants=True, native=native)
    except InvariantViolation as e:
        return str(e)


@pytest.mark.parametrize(
    "record_time",
    [
        1,
        0.3,
        {"dist": "lognormal", "median": 3, "p99": 40},
        {"dist": "empirical", "values": [1, 9]},
    ],
    ids=["constant", "constant-fraction", "lognormal", "empirical"],
)
def test_native_loop_runs_and_changes_nothing(record_time: Any) -> None:
    scenario = Scenario.from_dict(
        {
            "duration_s": 90,
            "group": {"members": 4, "topics": {"t": 10, "u": 3}},
            "consumer": {"max_poll_records": 7},
            "workload": {"records_per_second_per_partition": 40, "record_time_ms": record_time},
            "timeline": [
                {"at_s": 20, "action": "pause", "duration_s": 50, "count": 1},
                {"at_s": 40, "action": "join", "count": 1},
            ],
        }
    )
    with _lazy_steps() as counts:
        native = run(scenario, 2)
    python = run(scenario, 2, native=False)
    same_outputs(native, python)
    # thousands of application steps ran in the loop (batches of several records each)
    assert counts[0] > 5_000, counts


def _lazy_answers() -> AbstractContextManager[list[tuple[int, int]]]:
    """(answers after which the process stayed lazy, of those the ones folded into its lazy
    steps) in the runs made inside."""
    return engine_counts(lambda engine: (engine.lazy_answers, engine.folded_answers))


def _processing_group(overrides: dict[str, Any]) -> Scenario:
    """Six members processing records (the default workload) for 90 s over a network of
    0.2-6 ms latencies, with ``overrides`` (``Scenario.replace`` keys)."""
    return Scenario.from_dict(
        {
            "duration_s": 90,
            "group": {"members": 6, "topics": {"t": 6}},
            "network": {"latency_ms": {"dist": "uniform", "low": 0.2, "high": 6}},
        }
    ).replace(**overrides)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@pytest.mark.parametrize(
    "overrides",
    [
        {},
        # answers that often arrive while a batch is in hand, or with records waiting
        {"workload.record_time_ms": {"dist": "uniform", "low": 0, "high": 90}},
        {
            "timeline": [
                {"at_s": 20, "action": "pause", "duration_s": 8, "count": 1},
                {"at_s": 40, "action": "network_partition", "duration_s": 3, "count": 1},
                {"at_s": 60, "action": "coordinator_failover", "downtime_s": 1},
            ]
        },
    ],
    ids=["default-workload", "long-records", "faults"],
)
def test_members_that_process_stay_lazy_across_answers(
    overrides: dict[str, Any], native: bool
) -> None:
    """The scenario's default workload (every member processes records): the step that
    reads a heartbeat's or a commit's answer, or sends an auto-commit, leaves the process
    lazy, most answers are read inside the lazy steps (folded, never queued: answers that
    arrive inside a batch, at a record's arrival or with a batch ending in the same
    millisecond included), and the outputs are the eager engine's."""
    scenario = _processing_group(overrides)
    with _lazy_answers() as counts:
        lazy = run(scenario, 7, check_invariants=True, native=native)
    eager = run(scenario, 7, lazy=False)
    same_outputs(lazy, eager)
    heartbeats = lazy.summary["simulated_heartbeats"]
    # with 1 ms records most heartbeats' and commits' answers left their process lazy;
    # with long ones many arrive during a batch, whose end is the next step
    stayed, folded = counts[0]
    assert stayed > (heartbeats // 2 if not overrides else heartbeats // 10), counts
    assert folded > stayed // 2, counts


def _commit_paths() -> AbstractContextManager[list[tuple[int, int]]]:
    """(auto-commits sent by one machine call, OffsetCommits the coordinator took quietly)
    in the runs made inside."""
    return engine_counts(lambda engine: (engine.quick_commits, engine.quiet_commits))


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"group.static": True, "consumer.auto_commit_interval_ms": 700},
        {
            "timeline": [
                {"at_s": 20, "action": "pause", "duration_s": 8, "count": 1},
                {"at_s": 30, "action": "join", "count": 2},
                {"at_s": 40, "action": "network_partition", "duration_s": 3, "count": 1},
                {"at_s": 50, "action": "restart", "count": 2, "downtime_s": 1},
                {"at_s": 60, "action": "coordinator_failover", "downtime_s": 1},
                {"at_s": 70, "action": "crash", "count": 1},
            ]
        },
    ],
    ids=["default-workload", "static-short-interval", "faults"],
)
def test_auto_commits_take_the_quiet_paths_and_change_nothing(overrides: dict[str, Any]) -> None:
    """Auto-commits of stable members are sent by ``MemberMachine.poll_idle_commit`` and
    taken by ``GroupCoordinator.quiet_offset_commit`` in the lazy engine; the outputs are
    the eager engine's (which sends and handles every one the full way)."""
    scenario = _processing_group(overrides)
    with _commit_paths() as counts:
        lazy = run(scenario, 11, check_invariants=True)
    eager = run(scenario, 11, lazy=False)
    same_outputs(lazy, eager)
    quick, quiet = counts[0]
    # six members commit every 5 s (0.7 s) for most of the 90 s
    expected = 6 * 90_000 // scenario.consumer.auto_commit_interval_ms
    assert quick > expected // 2 and quiet > expected // 2, (counts, expected)
