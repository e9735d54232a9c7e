"""The simulator's engine: protocol behaviour in virtual time, metrics, determinism, and
(hypothesis) random scenarios that never break the group protocol's safety properties."""

from __future__ import annotations

import bisect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import GroupState
from groupcoord.sim import EVENT_COLUMNS, REBALANCE_COLUMNS, Scenario, SimResult, run
from groupcoord.sim.engine import Engine

FAST = {  # short timeouts so that faults play out in little virtual time
    "session_timeout_ms": 2_000,
    "heartbeat_interval_ms": 500,
    "max_poll_interval_ms": 5_000,
    "auto_commit_interval_ms": 1_000,
}
COORDINATOR = {"group_initial_rebalance_delay_ms": 0, "group_min_session_timeout_ms": 500}


def scenario(
    members: int = 3,
    duration_s: float = 60,
    *,
    timeline: list[dict[str, Any]] | None = None,
    consumer: dict[str, Any] | None = None,
    group: dict[str, Any] | None = None,
    workload: dict[str, Any] | None = None,
    network: dict[str, Any] | None = None,
) -> Scenario:
    return Scenario.from_dict(
        {
            "duration_s": duration_s,
            "group": {"members": members, "topics": {"t": 6}, **(group or {})},
            "consumer": {**FAST, **(consumer or {})},
            "coordinator": COORDINATOR,
            "workload": {"records_per_second_per_partition": 5, **(workload or {})},
            "network": network or {},
            "timeline": timeline or [],
        }
    )


def rows(result: SimResult, kind: str) -> list[dict[str, Any]]:
    return [e for e in result.events.to_pylist() if e["kind"] == kind]


# ------------------------------------------------------------------ behaviour


def test_steady_group_rebalances_once_and_keeps_up() -> None:
    result = run(scenario(), 1, check_invariants=True)
    s = result.summary
    assert s["rebalances"] == 1
    assert s["duplicates"] == 0
    assert s["members_expired_session"] == s["members_expired_poll"] == 0
    # 1 ms per record, 5 records/s: every record is done within a few ms of arriving
    assert s["p99_lag_ms"] <= 5
    assert s["records_processed"] >= s["records_arrived"] - 6 * 5  # at most the last second
    # the only unavailability is the first join (ms per partition)
    assert s["unavailable_partition_seconds"] < 6 * 0.1
    # heartbeats: every member every 500 ms for 60 s
    assert 3 * 100 * 0.9 <= s["simulated_heartbeats"] <= 3 * 120


def test_crash_is_noticed_after_the_session_timeout() -> None:
    result = run(scenario(timeline=[{"at_s": 20, "action": "crash"}]), 1, check_invariants=True)
    assert result.summary["members_expired_session"] == 1
    second = result.rebalances.to_pylist()[-1]
    assert "heartbeat expiration" in second["reason"]
    # the last heartbeat reached the coordinator at most one interval before the crash
    assert 20_000 + 2_000 - 500 - 2 <= second["started_ms"] <= 20_000 + 2_000 + 2
    assert result.summary["members_running"] == 2


def test_clean_leave_rebalances_at_once() -> None:
    result = run(scenario(timeline=[{"at_s": 20, "action": "leave"}]), 1, check_invariants=True)
    assert result.summary["members_left"] == 1
    assert result.summary["members_expired_session"] == 0
    second = result.rebalances.to_pylist()[-1]
    assert "LeaveGroup" in second["reason"]
    assert 20_000 <= second["started_ms"] <= 20_000 + 50


def test_static_restart_within_the_session_keeps_the_generation() -> None:
    result = run(
        scenario(
            group={"static": True},
            consumer={"session_timeout_ms": 10_000},
            timeline=[{"at_s": 20, "action": "restart", "count": 3, "downtime_s": 2}],
        ),
        1,
        check_invariants=True,
    )
    assert result.summary["rebalances"] == 1
    assert len(rows(result, "member_started")) == 6
    # each member's partitions wait out its downtime (2 s x 2 partitions x 3 members)
    assert 3 * 2 * 2 <= result.summary["unavailable_partition_seconds"] < 3 * 2 * 2 + 3


def test_dynamic_rolling_restart_rebalances_per_leave_and_join() -> None:
    result = run(
        scenario(timeline=[{"at_s": 20, "action": "restart", "count": 3, "downtime_s": 2}]),
        1,
        check_invariants=True,
    )
    assert result.summary["members_left"] == 3
    # one rebalance per departure at least; a returning member's join may share a rebalance
    # with the next member's departure (the next restart starts when the previous is back)
    assert result.summary["rebalances"] >= 1 + 3
    assert result.rebalances.to_pylist()[-1]["members_after"] == 3


def test_eager_rebalance_stops_the_world_cooperative_does_not() -> None:
    timeline = [{"at_s": 20, "action": "join"}]
    eager = run(scenario(group={"assignors": ["range"]}, timeline=timeline), 1)
    cooperative = run(scenario(timeline=timeline), 1)
    assert eager.summary["stop_the_world_ms"] > 0
    assert cooperative.summary["stop_the_world_ms"] == 0
    eager_join = eager.rebalances.to_pylist()[-1]
    assert eager_join["partitions_revoked"] == 6  # everyone gave everything up
    revoked = sum(r["partitions_revoked"] for r in cooperative.rebalances.to_pylist())
    assert revoked <= 2  # only what the newcomer takes (6 partitions over 4 members)


def test_pause_beyond_the_session_makes_a_zombie_that_redoes_work() -> None:
    result = run(
        scenario(
            consumer={"enable_auto_commit": False},
            workload={"records_per_second_per_partition": 50, "record_time_ms": 2},
            timeline=[{"at_s": 20, "action": "pause", "members": [0], "duration_s": 5}],
        ),
        1,
        check_invariants=True,
    )
    assert result.summary["members_expired_session"] == 1
    assert len(rows(result, "member_paused")) == 1
    assert len(rows(result, "lost")) >= 1


def test_network_partition_cuts_the_member_off() -> None:
    result = run(
        scenario(
            timeline=[{"at_s": 20, "action": "network_partition", "members": [1], "duration_s": 6}]
        ),
        1,
        check_invariants=True,
    )
    assert result.summary["members_expired_session"] == 1
    assert len(rows(result, "network_healed")) == 1
    assert result.summary["members_running"] == 3
    # it comes back into the group after the cut
    assert result.rebalances.to_pylist()[-1]["members_after"] == 3


def test_coordinator_failover_without_rebalance() -> None:
    result = run(
        scenario(
            consumer={"session_timeout_ms": 10_000, "heartbeat_interval_ms": 1_000},
            timeline=[{"at_s": 20, "action": "coordinator_failover", "downtime_s": 3}],
        ),
        1,
        check_invariants=True,
    )
    assert result.summary["rebalances"] == 1  # the new coordinator loaded the Stable group
    assert len(rows(result, "coordinator_down")) == len(rows(result, "coordinator_up")) == 1
    # heartbeats went on after the failover
    assert result.summary["simulated_heartbeats"] > 3 * 50


def test_partition_count_change_reaches_the_leader_at_its_metadata_refresh() -> None:
    result = run(
        scenario(
            consumer={"metadata_max_age_ms": 10_000},
            timeline=[{"at_s": 15, "action": "partitions", "topic": "t", "count": 9}],
        ),
        1,
        check_invariants=True,
    )
    last = result.rebalances.to_pylist()[-1]
    assert "metadata" in last["reason"]
    assert 15_000 < last["started_ms"] <= 20_000 + 50  # the refresh after the change
    assigned = sum(e["partitions"] for e in rows(result, "assigned"))
    assert assigned >= 9


def test_no_heartbeat_thread_expires_members_with_long_batches() -> None:
    long_batches = {"records_per_second_per_partition": 100, "record_time_ms": 10}
    old = run(scenario(consumer={"heartbeat_thread": False}, workload=long_batches), 1)
    new = run(scenario(workload=long_batches), 1)
    # batches of 500 records x 10 ms = 5 s > session 2 s, = max.poll.interval 5 s
    assert old.summary["members_expired_session"] > 0
    assert old.summary["rebalances"] > new.summary["rebalances"]


def test_outputs_have_the_documented_columns(tmp_path: Path) -> None:
    result = run(scenario(timeline=[{"at_s": 10, "action": "crash"}]), 1)
    assert result.events.column_names == [name for name, _, _ in EVENT_COLUMNS]
    assert result.rebalances.column_names == [name for name, _, _ in REBALANCE_COLUMNS]
    kinds = {e["kind"] for e in result.events.to_pylist()}
    assert {"member_started", "member_crashed", "member_removed", "rebalance_completed"} <= kinds
    written = result.write(tmp_path / "out")
    assert sorted(p.name for p in written.iterdir()) == [
        "events.parquet",
        "rebalances.parquet",
        "summary.json",
    ]
    for key in (
        "rebalances",
        "members_expired_session",
        "members_expired_poll",
        "unavailable_partition_seconds",
        "duplicates",
        "stop_the_world_ms",
        "time_to_stable_ms",
        "p99_lag_ms",
        "simulated_heartbeats",
    ):
        assert key in result.summary


# ------------------------------------------------------------------ determinism


def test_same_seed_same_summary_in_any_process(tmp_path: Path) -> None:
    """Byte-identical summary.json from separate processes with different string-hash salts
    (set iteration order differs between them)."""
    path = tmp_path / "s.toml"
    path.write_text(
        """
duration_s = 120
[group]
members = 4
topics = { a = 5, b = 3 }
[consumer]
session_timeout_ms = 2000
heartbeat_interval_ms = 500
[coordinator]
group_initial_rebalance_delay_ms = 0
group_min_session_timeout_ms = 500
[workload]
record_time_ms = { dist = "lognormal", median = 2, p99 = 40 }
[network]
latency_ms = { dist = "uniform", low = 0.2, high = 5 }
[[timeline]]
at_s = 30
action = "crash"
[[timeline]]
at_s = 50
action = "restart"
count = 2
downtime_s = 1
[[timeline]]
at_s = 70
action = "join"
count = 2
"""
    )
    outputs = []
    for salt in ("1", "2"):
        out = tmp_path / f"out{salt}"
        env = {**os.environ, "PYTHONHASHSEED": salt}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "groupcoord",
                "simulate",
                str(path),
                "--seed",
                "5",
                "--out",
                str(out),
            ],
            check=True,
            env=env,
            capture_output=True,
        )
        outputs.append((out / "summary.json").read_bytes())
    assert outputs[0] == outputs[1]
    different_seed = run(Scenario.from_toml(path), 6).summary_json().encode()
    assert different_seed != outputs[0]


# ------------------------------------------------------------------ random scenarios

ACTION = st.sampled_from(["join", "crash", "leave", "restart", "pause", "network_partition"])


@st.composite
def random_scenarios(draw: st.DrawFn) -> tuple[Scenario, int]:
    members = draw(st.integers(1, 6))
    topics = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(1, 8), min_size=1))
    assignors = draw(
        st.sampled_from(
            [
                ["cooperative-sticky"],
                ["range"],
                ["roundrobin"],
                ["sticky"],
                ["cooperative-sticky", "range"],
            ]
        )
    )
    static = draw(st.booleans())
    thread = draw(st.booleans())
    session = draw(st.sampled_from([1_000, 2_000, 4_000]))
    timeline = []
    for _ in range(draw(st.integers(0, 5))):
        action = draw(ACTION)
        event: dict[str, Any] = {"at_s": draw(st.integers(1, 40)), "action": action}
        if action == "restart":
            event["downtime_s"] = draw(st.sampled_from([0.5, 3]))
        if action in ("pause", "network_partition"):
            event["duration_s"] = draw(st.sampled_from([0.5, 3, 8]))
        if action != "join" or draw(st.booleans()):
            event["count"] = draw(st.integers(1, 2))
        timeline.append(event)
    if draw(st.booleans()):
        timeline.append(
            {"at_s": draw(st.integers(1, 40)), "action": "coordinator_failover", "downtime_s": 1}
        )
    doc = {
        "duration_s": 90,
        "group": {"members": members, "topics": topics, "assignors": assignors, "static": static},
        "consumer": {
            "session_timeout_ms": session,
            "heartbeat_interval_ms": session // 4,
            "max_poll_interval_ms": draw(st.sampled_from([1_500, 5_000])),
            "max_poll_records": draw(st.sampled_from([5, 50])),
            "heartbeat_thread": thread,
            "enable_auto_commit": draw(st.booleans()),
        },
        "coordinator": {
            "group_initial_rebalance_delay_ms": draw(st.sampled_from([0, 500])),
            "group_min_session_timeout_ms": 500,
        },
        "workload": {
            "records_per_second_per_partition": draw(st.sampled_from([0, 2, 20])),
            "record_time_ms": draw(
                st.sampled_from(
                    [
                        1,
                        {"dist": "uniform", "low": 0, "high": 30},
                        {"dist": "lognormal", "median": 5, "p99": 200},
                    ]
                )
            ),
        },
        "network": {
            "latency_ms": draw(st.sampled_from([1, {"dist": "uniform", "low": 0, "high": 20}]))
        },
        "timeline": timeline,
    }
    return Scenario.from_dict(doc), draw(st.integers(0, 1000))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_scenarios())
def test_random_scenarios_keep_the_protocol_safe(case: tuple[Scenario, int]) -> None:
    scenario_, seed = case
    result = run(scenario_, seed, check_invariants=True)
    s = result.summary
    partitions = sum(scenario_.group.topics.values())
    assert 0 <= s["unavailable_partition_seconds"] <= partitions * scenario_.duration_s + 1e-6
    assert s["records_processed"] <= s["records_arrived"] + s["duplicates"]
    _assert_generations_rise(scenario_, result.rebalances.to_pylist())
    assert result.summary_json() == run(scenario_, seed).summary_json()


def _assert_generations_rise(scenario_: Scenario, rows: list[dict[str, Any]]) -> None:
    """Generations rise within one coordinator's life. A coordinator that takes over
    (``coordinator_failover``) resumes from the last generation stored, the last whose
    leader's assignment was (it reached Stable), so a generation that had not got that far
    is numbered again, as in Kafka, which persists a generation with the leader's
    SyncGroup."""
    failovers = sorted(e.at_ms for e in scenario_.timeline if e.action == "coordinator_failover")
    lives: list[list[dict[str, Any]]] = [[] for _ in range(len(failovers) + 1)]
    for row in rows:
        lives[bisect.bisect_right(failovers, row["completed_ms"])].append(row)
    stored = 0
    for life in lives:
        generations = [row["generation"] for row in life]
        assert generations == sorted(set(generations)), generations
        assert not generations or generations[0] > stored, (generations, stored)
        stored = max([stored] + [r["generation"] for r in life if r["stable_ms"] is not None])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_scenarios())
def test_random_scenarios_converge_once_churn_stops(case: tuple[Scenario, int]) -> None:
    """Every fault is over by t=48 s; by t=90 s the running members own every partition,
    each exactly once, in the coordinator's current generation.

    Only for a group that can keep up: the heartbeat thread on and a batch (at most 50
    records of at most 30 ms) well within max.poll.interval.ms. Without the thread, or with
    batches beyond the poll interval, the group rebalances for ever: that is the KIP-62
    claim examples/scenarios/kip62-heartbeat-thread.toml shows, not a failure to converge."""
    scenario_, seed = case
    scenario_ = scenario_.replace(
        **{
            "consumer.heartbeat_thread": True,
            "consumer.max_poll_interval_ms": 5_000,
            "workload.record_time_ms": {"dist": "uniform", "low": 0, "high": 30},
        }
    )
    engine = Engine(scenario_, seed)
    engine.run()
    running = [p for p in engine.processes.values() if p.alive]
    if not running:
        return
    snapshot = engine.coordinator.snapshot(scenario_.group.group_id) if engine.coordinator else None
    assert snapshot is not None and snapshot.state is GroupState.STABLE
    owned = [tp for p in running for tp in p.machine.assignment]
    assert len(owned) == len(set(owned))
    assert set(owned) == set(engine.streams)
    assert {p.machine.generation for p in running} == {snapshot.generation_id}
