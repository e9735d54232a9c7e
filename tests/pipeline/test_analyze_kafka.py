"""``groupcoord analyze`` over real Apache Kafka broker logs (3.9 Scala coordinator and 4.x
Java coordinator; made by tools/kafka_groups.py): the tables match the ground truth the
driver counted from what it did and from the members' own callbacks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from groupcoord.pipeline.analyze import AnalyzeOptions, analyze

FIXTURES = Path(__file__).parent / "fixtures"
VERSIONS = ("3.9.2", "4.4.0")


def _truth(version: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"kafka-{version}-truth.json").read_text())["groups"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def kafka_out(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kafka-analyze")
    paths = [str(FIXTURES / f"kafka-{v}-server.log") for v in VERSIONS]
    analyze(spark, paths, out, AnalyzeOptions(storm_count=5, storm_window_s=60))
    return out


def test_rebalances_match_ground_truth(kafka_out: Path) -> None:
    rebalances = pd.read_parquet(kafka_out / "rebalances")
    events = pd.read_parquet(kafka_out / "events")
    for version in VERSIONS:
        source = str(FIXTURES.resolve() / f"kafka-{version}-server.log")
        for group, truth in _truth(version).items():
            mine = rebalances[(rebalances["source"] == source) & (rebalances["group"] == group)]
            assert len(mine) == truth["rebalances"], (version, group)
            assert mine["generation"].max() == truth["max_generation"], (version, group)
            assert mine["generation"].is_unique
            removed = events[
                (events["source"] == source)
                & (events["group"] == group)
                & (events["event"] == "member_removed")
            ]
            expired = int((removed["cause"] == "session_timeout").sum())
            left = int(removed["cause"].isin(["left", "poll_timeout"]).sum())
            assert expired == truth["crashes"], (version, group)
            assert left == truth["leaves"], (version, group)
            # every rebalance has its start, reason and a non-negative duration
            assert mine["started_at"].notna().all()
            assert (mine["duration_ms"] >= 0).all()
            assert mine["reason"].notna().all()
            assert set(mine["source_kind"]) == {"kafka"}
            assert (mine["members"] >= 1).all()


def test_groups_csv_sums_both_brokers(kafka_out: Path) -> None:
    groups = pd.read_csv(kafka_out / "groups.csv").set_index("group")
    assert set(groups.index) == {"orders-app", "billing-app"}
    for group in groups.index:
        truths = [_truth(v)[group] for v in VERSIONS]
        row = groups.loc[group]
        assert row["rebalances"] == sum(t["rebalances"] for t in truths)
        assert row["max_generation"] == max(t["max_generation"] for t in truths)
        assert row["members_expired"] == sum(t["crashes"] for t in truths)
        assert row["members_left"] == sum(t["leaves"] for t in truths)
        assert row["brokers"] == "kafka-3.9.2-server kafka-4.4.0-server"
    brokers = pd.read_csv(kafka_out / "brokers.csv").set_index("broker")
    for version in VERSIONS:
        truth = _truth(version)
        assert brokers.loc[f"kafka-{version}-server", "rebalances"] == sum(
            t["rebalances"] for t in truth.values()
        )


def test_every_line_of_a_real_log_parses(kafka_out: Path) -> None:
    summary = json.loads((kafka_out / "summary.json").read_text())
    lines = sum(
        len((FIXTURES / f"kafka-{v}-server.log").read_text().splitlines()) for v in VERSIONS
    )
    assert summary["lines"] == lines
    assert summary["lines_unparsed"] == 0
    assert summary["lines_parsed"] == lines
    assert summary["lines_continuation"] > 0  # the config dumps


def test_storms_and_report(kafka_out: Path) -> None:
    storms = pd.read_csv(kafka_out / "storms.csv")
    # the scripts rebalance each group every few seconds: storms at 5 in 60 s
    assert set(storms["group"]) == {"orders-app", "billing-app"}
    assert (storms["rebalances"] >= 5).all()
    index = (kafka_out / "report" / "index.html").read_text()
    for name in ("timeline", "durations", "reasons", "rebalances_per_hour"):
        assert f'src="{name}.png"' in index
        assert (kafka_out / "report" / f"{name}.png").stat().st_size > 1000
    assert "http://" not in index and "https://" not in index
