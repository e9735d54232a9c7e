"""The simulator's outputs must not move when the engine is made faster.

The files under ``golden/`` were written by the engine as it was *before* the performance
work (one heap event per poll and per batch): first at 5c4c813, then again after merging
main at fd49086, with main's own engine (its event rows name removed members by process;
the summaries did not change); then once more when simultaneous events got their canonical
order (engine.py's module documentation; it changed how same-millisecond ties break).
Every optimization must give byte-identical
``summary_json()`` and the same event rows. A deliberate change of behaviour regenerates
them (``GROUPCOORD_REGEN_GOLDEN=1``) and says why in its commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from groupcoord.sim import Scenario, run

GOLDEN = Path(__file__).parent / "golden"

_BASE: dict[str, Any] = {
    "duration_s": 150,
    "group": {"members": 4, "topics": {"orders": 8}, "assignors": ["cooperative-sticky"]},
    "consumer": {
        "session_timeout_ms": 10000,
        "heartbeat_interval_ms": 3000,
        "max_poll_records": 150,
    },
    "coordinator": {"group_initial_rebalance_delay_ms": 0},
    "workload": {"records_per_second_per_partition": 10, "record_time_ms": 2},
}
_RANDOM = {
    "workload.record_time_ms": {"dist": "lognormal", "median": 2, "p99": 15},
    "network.latency_ms": {"dist": "uniform", "low": 0.2, "high": 5},
    "timeline": [
        {"at_s": 30, "action": "join", "count": 2},
        {"at_s": 80, "action": "crash", "count": 1},
        {"at_s": 90, "action": "pause", "duration_s": 15, "members": [2]},
        {"at_s": 110, "action": "network_partition", "duration_s": 12, "members": [3]},
    ],
}
_RESTART = {"timeline": [{"at_s": 60, "action": "restart", "count": 4, "downtime_s": 5}]}

#: name -> overrides of _BASE (Scenario.replace keys)
CASES: dict[str, dict[str, Any]] = {
    "thread-slow-batches": {"workload.record_time_ms": 100},
    "no-thread-slow-batches": {
        "workload.record_time_ms": 100,
        "consumer.heartbeat_thread": False,
    },
    "max-poll-too-small": {
        "workload.record_time_ms": 100,
        "consumer.max_poll_interval_ms": 10000,
        "consumer.session_timeout_ms": 6000,
        "consumer.heartbeat_interval_ms": 2000,
    },
    "eager-range-join": {
        "group.assignors": ["range"],
        "timeline": [{"at_s": 60, "action": "join", "count": 1}],
    },
    "crash-and-leave": {
        "timeline": [
            {"at_s": 60, "action": "crash", "count": 1},
            {"at_s": 100, "action": "leave", "count": 1},
        ]
    },
    "restart-dynamic": _RESTART,
    "restart-eager": {"group.assignors": ["range"], **_RESTART},
    "restart-static": {"group.static": True, **_RESTART},
    "pause-network-partition": {
        "timeline": [
            {"at_s": 60, "action": "pause", "duration_s": 20, "count": 1},
            {"at_s": 100, "action": "network_partition", "duration_s": 20, "count": 2},
        ]
    },
    "coordinator-failover-partitions": {
        "timeline": [
            {"at_s": 60, "action": "coordinator_failover", "downtime_s": 5},
            {"at_s": 100, "action": "partitions", "topic": "orders", "count": 12},
        ]
    },
    "random-times": _RANDOM,
    "random-times-no-thread": {**_RANDOM, "consumer.heartbeat_thread": False},
    "no-auto-commit-failover": {
        "consumer.enable_auto_commit": False,
        "timeline": [
            {"at_s": 60, "action": "coordinator_failover", "downtime_s": 5},
            {"at_s": 100, "action": "restart", "count": 2, "downtime_s": 3},
        ],
    },
    "coordination-only-40": {
        "group.members": 40,
        "group.topics": {"orders": 40},
        "workload.records_per_second_per_partition": 0,
        "timeline": [{"at_s": 100, "action": "crash", "count": 3}],
    },
}


def _scenario(name: str) -> Scenario:
    return Scenario.from_dict(_BASE).replace(**CASES[name])


def _events_text(rows: list[tuple[Any, ...]]) -> str:
    return "".join(json.dumps(list(row)) + "\n" for row in rows)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_match_the_original_engine(name: str) -> None:
    result = run(_scenario(name), seed=1, check_invariants=True)
    summary, events = result.summary_json(), _events_text(result.event_rows)
    summary_file, events_file = GOLDEN / f"{name}.json", GOLDEN / f"{name}.events.jsonl"
    if os.environ.get("GROUPCOORD_REGEN_GOLDEN"):
        summary_file.write_text(summary)
        events_file.write_text(events)
    assert summary == summary_file.read_text()
    assert events == events_file.read_text()
