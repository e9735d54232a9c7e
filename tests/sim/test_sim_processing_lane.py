"""The processing lane (``Engine`` with ``lazy=True``): members that process records send
their heartbeats and auto-commits without their machine, and the coordinator takes them
quietly; the outputs are the reference engine's (``lazy=False``), byte for byte."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import pytest
from engine_paths import draw_timeline, engine_counts, same_outputs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import groupcoord.sim
from groupcoord.coordinator.offsets import OffsetAndMetadata
from groupcoord.sim import Scenario, SimResult, run
from groupcoord.sim.engine import Engine
from groupcoord.sim.invariants import InvariantViolation


@st.composite
def lane_scenarios(draw: st.DrawFn) -> tuple[Scenario, int]:
    """Groups whose members process records with the heartbeat thread and auto-commit on a
    connection of constant latency (what the lane takes), with faults that take members
    out of it at any moment."""
    members = draw(st.integers(1, 5))
    topics = draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(1, 8), min_size=1))
    session = draw(st.sampled_from([3_000, 10_000]))
    timeline = draw_timeline(draw, topics, 4)
    doc = {
        "duration_s": 50,
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
            "max_poll_interval_ms": draw(st.sampled_from([5_000, 300_000])),
            "max_poll_records": draw(st.sampled_from([1, 5, 50])),
            "heartbeat_thread": True,
            "enable_auto_commit": True,
            "auto_commit_interval_ms": draw(st.sampled_from([20, 100, 1_000, 5_000])),
            "metadata_max_age_ms": draw(st.sampled_from([2_000, 300_000])),
        },
        "coordinator": {
            "group_initial_rebalance_delay_ms": draw(st.sampled_from([0, 500])),
            "group_min_session_timeout_ms": 500,
        },
        "workload": {
            "records_per_second_per_partition": draw(st.sampled_from([1, 10, 100, 400])),
            "record_time_ms": draw(
                st.sampled_from(
                    [
                        1,
                        0.3,
                        7,
                        {"dist": "uniform", "low": 0, "high": 30},
                        {"dist": "empirical", "values": [0.5, 1, 1, 4, 40]},
                    ]
                )
            ),
        },
        "network": {"latency_ms": draw(st.sampled_from([1, 0.5, 3, 7]))},
        "timeline": timeline,
    }
    return Scenario.from_dict(doc), draw(st.integers(0, 1000))


def _run(scenario: Scenario, seed: int, **kw: Any) -> SimResult | str:
    try:
        return run(scenario, seed, check_invariants=True, **kw)
    except InvariantViolation as e:
        return str(e)


def _lane_counts() -> AbstractContextManager[list[tuple[int, int, int]]]:
    return engine_counts(lambda e: (e.plane_entries, e.plane_heartbeats, e.plane_commits))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lane_scenarios())
def test_processing_lane_gives_the_reference_outputs(case: tuple[Scenario, int]) -> None:
    """The lane (its steps in Rust, and in Python) against the reference engine, which
    sends every heartbeat and commit through the machine and ``GroupCoordinator.handle``."""
    scenario, seed = case
    lane = _run(scenario, seed)
    same_outputs(lane, _run(scenario, seed, lazy=False))
    same_outputs(lane, _run(scenario, seed, native=False))


def _group(**overrides: Any) -> Scenario:
    doc: dict[str, Any] = {
        "duration_s": 120,
        "group": {"members": 6, "topics": {"t": 6}},
        "workload": {"records_per_second_per_partition": 20},
    }
    for key, value in overrides.items():
        section, _, field = key.partition(".")
        if field:
            doc.setdefault(section, {})[field] = value
        else:
            doc[section] = value
    return Scenario.from_dict(doc)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"workload.record_time_ms": {"dist": "uniform", "low": 0, "high": 60}},
        {"network.latency_ms": 4, "consumer.auto_commit_interval_ms": 700},
        {
            "timeline": [
                {"at_s": 40, "action": "pause", "count": 1, "duration_s": 2},
                {"at_s": 60, "action": "join", "count": 1},
                {"at_s": 80, "action": "coordinator_failover", "downtime_s": 1},
            ]
        },
    ],
    ids=["default", "uniform-records", "slow-network", "faults"],
)
def test_members_that_process_heartbeat_and_commit_in_the_lane(overrides: dict[str, Any]) -> None:
    """In a group that processes records, almost every heartbeat and auto-commit after the
    first rebalance goes through the lane (one queued event each, no machine call), and
    the outputs stay the reference engine's; faults take members out of it and they come
    back."""
    scenario = _group(**overrides)
    with _lane_counts() as counts:
        lane = run(scenario, 3, check_invariants=True)
    (entries, heartbeats, commits) = counts[0]
    total = lane.summary["simulated_heartbeats"]
    assert heartbeats > 0.8 * total, (heartbeats, total)
    assert commits > 0.8 * 6 * 120_000 / scenario.consumer.auto_commit_interval_ms, commits
    assert entries >= 6 + (3 if "timeline" in overrides else 0)
    same_outputs(lane, run(scenario, 3, check_invariants=True, lazy=False))


def test_the_lane_takes_only_what_it_can_keep_clear_of_timeouts() -> None:
    """Without a bound on a batch's length (lognormal record times), with a latency drawn
    per request, or when a batch could outlast max.poll.interval.ms, the lane stays shut:
    the lazy engine's other paths run, with the same outputs."""
    for overrides in (
        {"workload.record_time_ms": {"dist": "lognormal", "median": 1, "p99": 20}},
        {"network.latency_ms": {"dist": "uniform", "low": 1, "high": 3}},
        {"consumer.max_poll_records": 500, "workload.record_time_ms": 700},
    ):
        scenario = _group(**overrides, duration_s=40)
        with _lane_counts() as counts:
            lane = run(scenario, 5)
        assert counts[0] == (0, 0, 0), overrides
        same_outputs(lane, run(scenario, 5, lazy=False))


@pytest.mark.parametrize("partitions_change", [False, True], ids=["same-counts", "counts-change"])
def test_metadata_refreshes_stay_in_the_lane_until_a_partition_count_changes(
    partitions_change: bool,
) -> None:
    """A lane member's metadata refresh (every 2 s here) runs its loop once, in the lane:
    the engine's own handler runs for almost none of them, and members do not leave the
    lane for them. A partition count change is the engine's: each member leaves at its
    next refresh, and the leader's starts the rebalance. The outputs stay the reference
    engine's (which runs every refresh) and the Python lane's."""
    # (every 2 s, 6 members, 120 s: 360 refreshes)
    timeline = (
        [{"at_s": 60, "action": "partitions", "topic": "t", "count": 9}]
        if partitions_change
        else []
    )
    scenario = _group(**{"consumer.metadata_max_age_ms": 2_000, "timeline": timeline})
    handled: list[int] = []
    entries: list[int] = []

    class Counting(Engine):
        def _refresh_metadata(self, process: Any, token: int) -> None:
            if token == process.metadata_token:
                handled.append(self.now)
            super()._refresh_metadata(process, token)

        def run(self) -> Any:
            recorder = super().run()
            entries.append(self.plane_entries)
            return recorder

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(groupcoord.sim, "Engine", Counting)
        lane = run(scenario, 3, check_invariants=True)
    # (the members enter the lane some seconds after the first rebalance)
    later = [t for t in handled if t >= 20_000 and not 60_000 <= t < 64_000]
    assert len(later) < 6 * 100_000 // 2_000 // 20, later
    assert entries[0] < 6 + 10 + (20 if partitions_change else 0), entries
    if partitions_change:
        assert lane.summary["rebalances"] >= 2
        assert any(60_000 <= t < 63_000 for t in handled), handled  # each next refresh
    same_outputs(lane, run(scenario, 3, check_invariants=True, lazy=False))
    same_outputs(lane, run(scenario, 3, check_invariants=True, native=False))


@pytest.mark.parametrize("topics", [{"t": 6}, {"b": 4, "a": 8}], ids=["one-topic", "two-topics"])
def test_the_lane_stores_what_the_reference_engine_stores(topics: dict[str, int]) -> None:
    """The commits the LaneSet takes are stored as records it builds itself (without the
    classes' ``__init__``): the store and the coordinator end with the offsets, records
    and batch numbering of the reference engine, whose every commit goes through
    ``handle``; with two topics a member's commit names its partitions sorted."""
    scenario = _group(group={"members": 3, "topics": topics})
    engines = []
    for kw in ({}, {"native": False}, {"lazy": False}):
        engine = Engine(scenario, 3, **kw)
        engine.run()
        engines.append(engine)
    native, python_lane, reference = engines
    assert native.plane_commits > 50  # taken in the LaneSet
    for other in (python_lane, reference):
        assert native.store.load() == other.store.load()
        assert native.store.commits == other.store.commits
        assert native.coordinator is not None and other.coordinator is not None
        group = scenario.group.group_id
        a, b = (
            native.coordinator.committed_offsets(group),
            other.coordinator.committed_offsets(group),
        )
        assert a == b and list(a) == list(b)
    stored = native.store.load().offsets[scenario.group.group_id]
    assert {type(o) for o in stored.values()} == {OffsetAndMetadata}
    assert len(stored) == sum(topics.values())
