"""Scenario files: defaults, validation errors that name the key, overrides, distributions."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.sim import Scenario, ScenarioError
from groupcoord.sim.distributions import Distribution, DistributionError
from groupcoord.sim.scenario import parse_override

#: the scenario the issue's contract says must run with only these keys
CONTRACT = """
duration_s = 600
[group]
members = 4
topics = { orders = 8 }
assignors = ["cooperative-sticky"]
static = false
[consumer]
session_timeout_ms = 10000
heartbeat_interval_ms = 3000
max_poll_interval_ms = 300000
max_poll_records = 150
heartbeat_thread = true
[coordinator]
group_initial_rebalance_delay_ms = 0
[workload]
records_per_second_per_partition = 50
record_time_ms = { dist = "constant", value = 100 }
[[timeline]]
at_s = 300
action = "join"
count = 1
[[timeline]]
at_s = 400
action = "restart"
count = 2
downtime_s = 5
[[timeline]]
at_s = 500
action = "pause"
count = 1
duration_s = 20
"""


def minimal(**sections: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"duration_s": 60, "group": {"members": 2, "topics": {"t": 4}}}
    doc.update(sections)
    return doc


def test_contract_file_parses(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(CONTRACT)
    scenario = Scenario.from_toml(path)
    assert scenario.duration_ms == 600_000
    assert scenario.group.topics == {"orders": 8}
    assert scenario.consumer.max_poll_records == 150
    assert scenario.workload.record_time_ms == Distribution.constant(100)
    assert [e.action for e in scenario.timeline] == ["join", "restart", "pause"]
    assert scenario.timeline[1].downtime_s == 5


def test_defaults_are_kafkas() -> None:
    scenario = Scenario.from_dict(minimal())
    c, k = scenario.consumer, scenario.coordinator
    assert (c.session_timeout_ms, c.heartbeat_interval_ms, c.max_poll_interval_ms) == (
        45_000,
        3_000,
        300_000,
    )
    assert (c.max_poll_records, c.auto_commit_interval_ms, c.enable_auto_commit) == (
        500,
        5_000,
        True,
    )
    assert (k.group_initial_rebalance_delay_ms, k.group_min_session_timeout_ms) == (3_000, 6_000)
    assert k.group_max_session_timeout_ms == 1_800_000
    assert scenario.group.assignors == ("cooperative-sticky",)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"group": {"members": 2, "topics": {"t": 4}}}, "duration_s is required"),
        (minimal(bogus=1), "unknown key 'bogus'"),
        (minimal(consumer={"max_poll_record": 5}), "unknown key consumer.max_poll_record"),
        (minimal(consumer={"max_poll_records": 0}), "consumer.max_poll_records must be in [1,"),
        (
            minimal(consumer={"max_poll_records": "5"}),
            "consumer.max_poll_records must be an integer",
        ),
        (
            minimal(consumer={"heartbeat_thread": 1}),
            "consumer.heartbeat_thread must be true or false",
        ),
        (
            minimal(consumer={"heartbeat_interval_ms": 10_000, "session_timeout_ms": 10_000}),
            "consumer.heartbeat_interval_ms (10000) must be lower than consumer.session_timeout_ms",
        ),
        (
            minimal(consumer={"session_timeout_ms": 5_000, "heartbeat_interval_ms": 1_000}),
            "outside the coordinator's bounds [6000, 1800000]",
        ),
        (
            minimal(group={"members": 2, "topics": {"t": 4}, "assignors": ["magic"]}),
            "group.assignors: unknown assignor 'magic'",
        ),
        (
            minimal(
                group={
                    "members": 2,
                    "topics": {"t": 4},
                    "assignors": ["range", "cooperative-sticky"],
                    "static": "yes",
                }
            ),
            "group.static must be true or false",
        ),
        (minimal(group={"members": 2, "topics": {}}), "group.topics must be a non-empty table"),
        (minimal(group={"members": 2, "topics": {"t": 0}}), "group.topics.t must be in [1,"),
        (
            minimal(workload={"record_time_ms": {"dist": "gamma", "value": 1}}),
            "workload.record_time_ms.dist must be one of",
        ),
        (
            minimal(workload={"record_time_ms": {"dist": "lognormal", "median": 10, "p99": 5}}),
            "workload.record_time_ms: p99 (5) must be >= median (10)",
        ),
        (
            minimal(workload={"record_time_ms": {"dist": "uniform", "low": 3}}),
            "workload.record_time_ms: dist = 'uniform' needs 'high'",
        ),
        (minimal(timeline=[{"at_s": 1, "action": "explode"}]), "timeline[0].action must be one of"),
        (
            minimal(timeline=[{"at_s": 100, "action": "crash"}]),
            "timeline[0].at_s (100) is after duration_s",
        ),
        (
            minimal(timeline=[{"at_s": 1, "action": "pause"}]),
            "timeline[0]: action 'pause' needs duration_s",
        ),
        (
            minimal(timeline=[{"at_s": 1, "action": "crash", "downtime_s": 3}]),
            "timeline[0]: unknown key 'downtime_s' for action 'crash'",
        ),
        (
            minimal(timeline=[{"at_s": 1, "action": "partitions", "topic": "t", "count": 2}]),
            "Kafka cannot reduce a topic's partitions",
        ),
        (
            minimal(
                consumer={"scheduled_rebalance_max_delay_ms": 5000},
                group={"members": 2, "topics": {"t": 4}, "assignors": ["range"]},
            ),
            "needs the cooperative-sticky assignor",
        ),
    ],
)
def test_errors_name_the_key(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(doc)
    assert message in str(info.value)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match=r"cannot read scenario file .*missing\.toml"):
        Scenario.from_toml(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("duration_s = [")
    with pytest.raises(ScenarioError, match="is not valid TOML"):
        Scenario.from_toml(bad)


def test_replace_revalidates_and_keeps_the_original() -> None:
    base = Scenario.from_dict(minimal())
    changed = base.replace(**{"consumer.max_poll_records": 7, "group.topics.u": 3, "duration_s": 5})
    assert changed.consumer.max_poll_records == 7
    assert changed.group.topics == {"t": 4, "u": 3}
    assert changed.duration_s == 5
    assert base.consumer.max_poll_records == 500
    with pytest.raises(ScenarioError, match=r"consumer\.max_poll_records must be in"):
        base.replace(**{"consumer.max_poll_records": -1})
    with pytest.raises(ScenarioError, match="unknown key"):
        base.replace(**{"consumer.nope": 1})
    with pytest.raises(ScenarioError, match="no section"):
        base.replace(**{"nowhere.x": 1})
    nested = base.replace(**{"workload.record_time_ms.value": 9})
    assert nested.workload.record_time_ms == Distribution.constant(9)


def test_to_dict_round_trips() -> None:
    scenario = Scenario.from_dict(
        minimal(timeline=[{"at_s": 3, "action": "restart", "members": [1], "downtime_s": 2}])
    )
    again = Scenario.from_dict(scenario.to_dict())
    assert again.to_dict() == scenario.to_dict()
    assert again.timeline == scenario.timeline


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("consumer.max_poll_records=100", ("consumer.max_poll_records", 100)),
        ("consumer.heartbeat_thread=false", ("consumer.heartbeat_thread", False)),
        ('group.assignors=["range"]', ("group.assignors", ["range"])),
        ("group.group_id=orders-app", ("group.group_id", "orders-app")),
        (
            'workload.record_time_ms={dist="constant", value=5}',
            ("workload.record_time_ms", {"dist": "constant", "value": 5}),
        ),
    ],
)
def test_parse_override(text: str, expected: tuple[str, Any]) -> None:
    assert parse_override(text) == expected


def test_parse_override_needs_key_and_value() -> None:
    with pytest.raises(ScenarioError, match="KEY=VALUE"):
        parse_override("consumer.max_poll_records")


# ------------------------------------------------------------------ distributions


@given(
    low=st.floats(0, 1e4),
    width=st.floats(0, 1e4),
    seed=st.integers(0, 2**32),
)
def test_uniform_samples_stay_in_range(low: float, width: float, seed: int) -> None:
    dist = Distribution.from_table("x", {"dist": "uniform", "low": low, "high": low + width})
    sample = dist.sampler(random.Random(seed))
    assert dist.maximum == low + width
    for _ in range(20):
        assert low <= sample() <= low + width


@given(median=st.floats(0.01, 1e4), factor=st.floats(1, 100), seed=st.integers(0, 2**32))
def test_lognormal_is_nonnegative_and_keeps_its_median(
    median: float, factor: float, seed: int
) -> None:
    dist = Distribution.from_table(
        "x", {"dist": "lognormal", "median": median, "p99": median * factor}
    )
    sample = dist.sampler(random.Random(seed))
    assert all(sample() >= 0 for _ in range(20))


def test_lognormal_quantiles() -> None:
    dist = Distribution.from_table("x", {"dist": "lognormal", "median": 10, "p99": 100})
    sample = dist.sampler(random.Random(7))
    values = sorted(sample() for _ in range(20_000))
    assert math.isclose(values[10_000], 10, rel_tol=0.08)
    assert math.isclose(values[19_800], 100, rel_tol=0.15)


def test_empirical_draws_from_the_list() -> None:
    dist = Distribution.from_table("x", {"dist": "empirical", "values": [1, 5, 9]})
    sample = dist.sampler(random.Random(1))
    assert {sample() for _ in range(200)} == {1.0, 5.0, 9.0}
    assert dist.mean == 5
    assert dist.maximum == 9


def test_the_largest_draw() -> None:
    """What the processing lane bounds a batch's length with: none for lognormal."""
    assert Distribution.constant(4).maximum == 4
    lognormal = Distribution.from_table("x", {"dist": "lognormal", "median": 1, "p99": 9})
    assert lognormal.maximum is None


@pytest.mark.parametrize(
    "table",
    [
        {"dist": "constant", "value": -1},
        {"dist": "constant", "value": float("nan")},
        {"dist": "empirical", "values": []},
        {"dist": "empirical", "values": [1, "2"]},
        {"dist": "constant", "value": 1, "extra": 2},
        "fast",
    ],
)
def test_bad_distributions(table: object) -> None:
    with pytest.raises(DistributionError, match=r"^x"):
        Distribution.from_table("x", table)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (minimal(workload={"records_per_second_per_partition": 1e308}), "<= 1e+06"),
        ({"duration_s": 1e308, "group": {"members": 1, "topics": {"t": 1}}}, "duration_s must be"),
        (minimal(network={"latency_ms": 1e300}), "network.latency_ms must be a number in [0,"),
    ],
)
def test_values_too_large_to_simulate_are_refused(doc: dict[str, Any], message: str) -> None:
    """They used to pass validation and overflow inside the run."""
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(doc)
    assert message in str(info.value)
