"""The three sources (Kafka logs, ``serve --event-log``, simulator Parquet) in one schema,
and broken logs (corrupt, truncated, interleaved, multi-line stack traces, .gz) counted,
never fatal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from groupcoord.cli import app
from groupcoord.pipeline.analyze import analyze
from groupcoord.pipeline.logs import EVENT_COLUMNS, classify_inputs, read_events

FIXTURES = Path(__file__).parent / "fixtures"
BROKEN = FIXTURES / "broken"


@pytest.fixture(scope="module")
def broken_out(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("broken")
    analyze(spark, [str(BROKEN)], out)
    return out


def test_broken_logs_are_counted_not_fatal(broken_out: Path) -> None:
    summary = json.loads((broken_out / "summary.json").read_text())
    # corrupt 9 lines (5 bad), truncated 4 (1), interleaved 7 (1), stacktrace 11 + .gz 11
    assert summary["lines"] == 9 + 4 + 7 + 11 + 11
    assert summary["lines_unparsed"] == 5 + 1 + 1
    assert summary["lines_parsed"] == summary["lines"] - summary["lines_unparsed"]
    assert summary["lines_continuation"] == 2 * 6
    sampled = {s["line"] for s in summary["unparsed_sample"]}
    assert "this line is not a log record at all" in sampled
    assert any(line.startswith("ion 10 (") for line in sampled)
    assert any(line.endswith("generation 6 wi") for line in sampled)
    report = (broken_out / "report" / "unparsed_sample.csv").read_text()
    assert "this line is not a log record at all" in report


def test_broken_logs_tables(broken_out: Path) -> None:
    groups = pd.read_csv(broken_out / "groups.csv").set_index("group")
    shop, pay, web, api = (groups.loc[g] for g in ("shop", "pay", "web", "api"))
    assert (shop["rebalances"], shop["max_generation"]) == (2, 2)
    # truncated: the cut "Stabilized" line is no rebalance; the poll-timeout leave is
    assert (pay["rebalances"], pay["max_generation"]) == (1, 5)
    assert (pay["members_left"], pay["members_left_poll_timeout"]) == (1, 1)
    # interleaved: generation 10's line was broken by another line; 11 survives
    assert (web["rebalances"], web["max_generation"]) == (1, 11)
    assert (web["members_left"], web["members_expired"]) == (1, 1)
    # the stack trace and the .gz copy: one rebalance in each file
    assert (api["rebalances"], api["static_replaced"], api["members_left"]) == (2, 2, 2)
    rebalances = pd.read_parquet(broken_out / "rebalances").sort_values(["group", "generation"])
    durations = dict(
        zip(
            rebalances["group"] + ":" + rebalances["generation"].astype(str),
            rebalances["duration_ms"],
            strict=True,
        )
    )
    assert durations["shop:1"] == 3000 and durations["shop:2"] == 500
    assert durations["pay:5"] == 1000


def test_three_sources_one_schema(spark: Any, tmp_path: Path) -> None:
    from groupcoord.sim import Scenario, run

    scenario = Scenario.from_toml(
        Path(__file__).parents[2] / "examples" / "scenarios" / "rolling-restart.toml"
    )
    sim_dir = tmp_path / "rolling"
    result = run(scenario, 1)
    result.write(sim_dir)
    inputs = classify_inputs(
        [
            str(FIXTURES / "kafka-4.4.0-server.log"),
            str(FIXTURES / "serve-event-log.jsonl"),
            str(sim_dir),
        ]
    )
    assert inputs.sim == (str(sim_dir / "events.parquet"),)
    events, _ = read_events(spark, inputs)
    assert [(f.name, f.dataType.simpleString()) for f in events.schema.fields] == [
        (name, sql_type) for name, sql_type, _ in EVENT_COLUMNS
    ]
    frame = events.toPandas()
    assert set(frame["source_kind"]) == {"kafka", "event_log", "sim"}
    for kind in ("kafka", "event_log", "sim"):
        mine = frame[frame["source_kind"] == kind]
        assert (mine["event"] == "rebalance_completed").any(), kind
        assert (mine["event"] == "member_removed").any(), kind
        assert mine["time"].notna().all() and mine["group"].notna().all()
    sim = frame[(frame["source_kind"] == "sim") & (frame["event"] == "rebalance_completed")]
    assert len(sim) == result.summary["rebalances"]
    assert sim["members"].notna().all() and sim["started_at"].notna().all()


def test_event_log_fixture_matches_its_ground_truth(spark: Any, tmp_path: Path) -> None:
    """The same scripted groups, run against groupcoord serve --event-log."""
    analyze(spark, [str(FIXTURES / "serve-event-log.jsonl")], tmp_path)
    truth = json.loads((FIXTURES / "serve-truth.json").read_text())["groups"]
    groups = pd.read_csv(tmp_path / "groups.csv").set_index("group")
    for group, expected in truth.items():
        row = groups.loc[group]
        assert row["rebalances"] == expected["rebalances"], group
        assert row["max_generation"] == expected["max_generation"], group
        assert row["members_expired"] == expected["crashes"], group
        assert row["members_left"] == expected["leaves"], group
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["lines_unparsed"] == 0


def test_cli_bad_path_is_one_line_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "nope.log"), "--out", "x"])
    assert result.exit_code == 2
    assert "no such file or directory" in result.output


def test_numbers_out_of_range_are_null_not_a_failed_job(spark: Any, tmp_path: Path) -> None:
    # Spark 4 casts strictly (ANSI): a plain cast of a corrupt number fails the whole job
    head = "[2026-01-01 00:00:0{}.000] INFO [GroupCoordinator id=1 topic=__consumer_offsets"
    tail = " with 3 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)"
    log = tmp_path / "server.log"
    log.write_text(
        head.format(0)
        + " partition=1] Stabilized group g1 generation 99999999999"
        + tail
        + "\n"
        + head.format(1)
        + " partition=1] Stabilized group g1 generation 2"
        + tail
        + "\n"
        + json.dumps({"event": "rebalance_completed", "time_ms": "soon", "group": "g2"})
        + "\n"
    )
    events, _ = read_events(spark, classify_inputs([str(log)]))
    rows = events.orderBy("time").select("group", "generation").collect()
    # the JSON line without a usable time_ms is no event; the Kafka line keeps its event
    assert [(r["group"], r["generation"]) for r in rows] == [("g1", None), ("g1", 2)]
