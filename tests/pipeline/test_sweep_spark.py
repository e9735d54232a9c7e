"""The sweep on local Spark (the session-wide ``spark`` fixture): runs/ rows equal the
simulator's own results, resume after an interruption, runs that raise, the report, the CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the pipeline tests need PySpark (the test extra)")

import pyarrow as pa
import pyarrow.dataset as ds
from typer.testing import CliRunner

from groupcoord.cli import app
from groupcoord.pipeline.grid import Grid, column_value
from groupcoord.pipeline.sweep import (
    RUN_FILE,
    SUMMARY_COLUMNS,
    read_runs,
    run_sweep,
    runs_schema,
    simulate_batches,
)
from groupcoord.sim import run

# a small, fast scenario (~20 ms a run) whose settings matter: a member's batch of
# max_poll_records x ~100 ms against a 20 s max.poll.interval.ms
BASE = """\
duration_s = 90
seed = 1
[group]
members = 3
topics = { events = 6 }
assignors = ["range"]
[consumer]
session_timeout_ms = 10_000
heartbeat_interval_ms = 3_000
max_poll_interval_ms = 20_000
max_poll_records = 50
[workload]
records_per_second_per_partition = 4.0
record_time_ms = { dist = "uniform", low = 80, high = 120 }
[[timeline]]
at_s = 30
action = "restart"
count = 1
downtime_s = 5
"""

AXES = """\
[axes]
"consumer.max_poll_records" = [10, 400]
"group.assignors" = [["range"], ["cooperative-sticky"]]
"""


def make_grid(tmp_path: Path, axes: str = AXES, seeds: str = "[1, 2]") -> Grid:
    (tmp_path / "base.toml").write_text(BASE)
    path = tmp_path / "grid.toml"
    path.write_text(f'scenario = "base.toml"\nseeds = {seeds}\n{axes}')
    return Grid.from_toml(path)


def partitioned(out: Path, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = (
        ds.dataset(out / name, format="parquet", partitioning="hive").to_table().to_pylist()
    )
    return rows


def as_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted((k, v) for k, v in row.items() if k != "run_id"))


def test_runs_rows_equal_the_simulator(spark: Any, tmp_path: Path) -> None:
    grid = make_grid(tmp_path)
    out = tmp_path / "out"
    result = run_sweep(grid, out, spark=spark, progress=False, report=False)
    assert (result.total, result.ran, result.skipped, result.failed) == (8, 8, 0, 0)
    rows = read_runs(out).to_pylist()
    assert sorted(r["run_id"] for r in rows) == sorted(r.run_id for r in grid.runs())
    events = partitioned(out, "events")
    rebalances = partitioned(out, "rebalances")
    kinds = grid.axis_kinds()
    by_id = {r.run_id: r for r in grid.runs()}
    for row in rows:
        spec = by_id[row["run_id"]]
        assert row["seed"] == spec.seed
        assert row["error"] is None
        assert row["wall_s"] > 0
        for key, value in spec.overrides.items():
            assert row[key] == column_value(kinds[key], value)
        expected = run(grid.scenario.replace(**spec.overrides), spec.seed)
        assert set(expected.summary) == set(SUMMARY_COLUMNS) | {"seed"}
        for key, value in expected.summary.items():
            assert row[key] == value, (row["run_id"], key)
            assert type(row[key]) is type(value) or value is None, key
        # the run's rebalances/ and events/ partitions hold exactly its tables
        mine = Counter(as_key(e) for e in events if e["run_id"] == spec.run_id)
        assert mine == Counter(as_key(e) for e in expected.events.to_pylist())
        mine = Counter(as_key(e) for e in rebalances if e["run_id"] == spec.run_id)
        assert mine == Counter(as_key(e) for e in expected.rebalances.to_pylist())
    # runs/ has the documented columns, in order
    names = read_runs(out).column_names
    assert names[:2] == ["run_id", "seed"]
    assert names[2:4] == list(grid.axes)
    assert names[-2:] == ["error", "wall_s"]
    assert set(names) == {"run_id", "seed", *grid.axes, *SUMMARY_COLUMNS, "error", "wall_s"}


def test_a_row_equals_groupcoord_simulate(spark: Any, tmp_path: Path) -> None:
    """The contract: a run's row equals `groupcoord simulate` of the same scenario, overrides
    and seed (summary.json, key by key)."""
    grid = make_grid(tmp_path, seeds="[3]")
    out = tmp_path / "out"
    run_sweep(grid, out, spark=spark, progress=False, report=False)
    row = next(
        r
        for r in read_runs(out).to_pylist()
        if r["consumer.max_poll_records"] == 400
        and r["group.assignors"] == '["cooperative-sticky"]'
    )
    sim_out = tmp_path / "sim"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "simulate",
            str(tmp_path / "base.toml"),
            "--seed",
            "3",
            "--out",
            str(sim_out),
            "--no-progress",
            "--set",
            "consumer.max_poll_records=400",
            "--set",
            'group.assignors=["cooperative-sticky"]',
        ],
        check=True,
        capture_output=True,
    )
    summary = json.loads((sim_out / "summary.json").read_text())
    assert summary["rebalances"] > 1  # a run where the settings matter
    for key, value in summary.items():
        assert row[key] == value, key


def test_resume_after_an_interruption(spark: Any, tmp_path: Path) -> None:
    grid = make_grid(tmp_path)
    out = tmp_path / "out"
    writes: list[tuple[str, int]] = []

    def interrupt(name: str, chunk: int) -> None:
        writes.append((name, chunk))
        # chunk 1 has written its events and rebalances, not its runs/ rows
        if (name, chunk) == ("rebalances", 1):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(
            grid, out, spark=spark, progress=False, report=False, chunk_runs=3, on_write=interrupt
        )
    # chunks of 3, 3 and 2 runs; two run at once, so chunk 0 (and maybe chunk 2, before it
    # was cancelled) finished: each chunk's datasets in their order, runs/ last
    for chunk in (0, 1, 2):
        mine = [name for name, index in writes if index == chunk]
        assert mine == ["events", "rebalances", "runs"][: len(mine)], (chunk, writes)
    assert ("runs", 0) in writes and ("runs", 1) not in writes
    finished_chunks = [chunk for name, chunk in writes if name == "runs"]
    done = set(read_runs(out).column("run_id").to_pylist())
    assert len(done) == sum((3, 3, 2)[chunk] for chunk in finished_chunks)
    # the interrupted chunk's tasks wrote their runs' files before any row reached runs/
    unfinished = {p.name.removeprefix("run_id=") for p in (out / "events").iterdir()} - done
    assert len(unfinished) >= 3
    # what an attempt that died mid-way leaves: a stray file in an unfinished run's
    # directory (a resume must not keep it: its rows would be counted twice), and a
    # task's temporary file in a finished run's directory
    stray = out / "events" / f"run_id={sorted(unfinished)[0]}" / "part-stray.parquet"
    (out / "events" / f"run_id={sorted(unfinished)[0]}" / RUN_FILE).rename(stray)
    finished = out / "rebalances" / f"run_id={sorted(done)[0]}"
    (finished / ".0123abcd.tmp").write_bytes(b"half a file")
    (out / "runs" / ".4567cdef.tmp").write_bytes(b"half a chunk's rows")
    result = run_sweep(grid, out, spark=spark, progress=False, report=False, chunk_runs=3)
    assert (result.skipped, result.ran) == (len(done), 8 - len(done))
    assert not stray.exists()
    assert not (out / "runs" / ".4567cdef.tmp").exists()
    assert sorted(p.name for p in finished.iterdir()) == [RUN_FILE]
    ids = read_runs(out).column("run_id").to_pylist()
    assert sorted(ids) == sorted(r.run_id for r in grid.runs())  # no duplicate, none lost
    # the interrupted chunk's partitions were replaced, not appended to
    counts = Counter(e["run_id"] for e in partitioned(out, "events"))
    for spec in grid.runs():
        expected = run(grid.scenario.replace(**spec.overrides), spec.seed)
        assert counts[spec.run_id] == expected.events.num_rows, spec.run_id
    rebalance_counts = Counter(r["run_id"] for r in partitioned(out, "rebalances"))
    assert sum(rebalance_counts.values()) == sum(
        run(grid.scenario.replace(**s.overrides), s.seed).rebalances.num_rows for s in grid.runs()
    )
    # a third call has nothing left to do (and needs no Spark job)
    again = run_sweep(grid, out, spark=spark, progress=False, report=False)
    assert (again.skipped, again.ran) == (8, 0)
    assert read_runs(out).num_rows == 8


def test_events_and_rebalances_are_laid_out_as_spark_writes_them(
    spark: Any, tmp_path: Path
) -> None:
    """The tasks write events/ and rebalances/ with pyarrow; readers see what Spark's own
    partitioned writer (which the sweep used before) makes of the same runs: the same
    schema through Spark and through pyarrow, the same rows."""
    grid = make_grid(tmp_path)
    out = tmp_path / "out"
    run_sweep(grid, out, spark=spark, progress=False, report=False)
    reference = tmp_path / "reference"
    for name in ("events", "rebalances"):
        tables = []
        for spec in grid.runs():
            table = getattr(run(grid.scenario.replace(**spec.overrides), spec.seed), name)
            ids = pa.array([spec.run_id] * table.num_rows, pa.string())
            tables.append(table.append_column("run_id", ids))
        frame = spark.createDataFrame(pa.concat_tables(tables))
        frame.write.partitionBy("run_id").parquet(str(reference / name))

        ours, theirs = (
            spark.read.parquet(str(out / name)),
            spark.read.parquet(str(reference / name)),
        )
        assert ours.schema == theirs.schema, name
        assert ours.schema.names[-1] == "run_id"
        assert Counter(map(tuple, ours.collect())) == Counter(map(tuple, theirs.collect()))
        ours_pa = ds.dataset(out / name, format="parquet", partitioning="hive")
        theirs_pa = ds.dataset(reference / name, format="parquet", partitioning="hive")
        assert ours_pa.schema.remove_metadata() == theirs_pa.schema.remove_metadata(), name
        assert sorted(p.name for p in (out / name).iterdir()) == sorted(
            p.name for p in (reference / name).iterdir() if p.name.startswith("run_id=")
        )
    # runs/ (written by the driver from the rows Spark returns): the documented schema
    runs = ds.dataset(out / "runs", format="parquet").schema.remove_metadata()
    assert runs == runs_schema(grid.axis_kinds())


def test_a_retried_task_replaces_its_runs_files(tmp_path: Path) -> None:
    """Spark runs a task again after a failure (or twice, speculatively): the run's files
    are replaced, not added to; no temporary file is left."""
    grid = make_grid(tmp_path, seeds="[1]")
    spec = grid.runs()[0]
    rows = pa.RecordBatch.from_pylist(
        [{"run_id": spec.run_id, "seed": spec.seed, "overrides": spec.overrides_json}]
    )
    out = str(tmp_path / "out")
    task = {"base": dict(grid.scenario.raw), "axis_kinds": grid.axis_kinds(), "out": out}
    first = list(simulate_batches(iter([rows]), **task))
    second = list(simulate_batches(iter([rows]), **task))
    assert first[0].column("rebalances") == second[0].column("rebalances")
    expected = run(grid.scenario.replace(**spec.overrides), spec.seed)
    for name in ("events", "rebalances"):
        directory = tmp_path / "out" / name / f"run_id={spec.run_id}"
        assert sorted(p.name for p in directory.iterdir()) == [RUN_FILE]
        table = ds.dataset(directory, format="parquet").to_table()
        assert table == getattr(expected, name)


def test_out_as_a_file_uri(spark: Any, tmp_path: Path) -> None:
    """--out as a URI (what a cluster's shared filesystem is named by): the tasks, the
    resume and the report go through pyarrow.fs.FileSystem.from_uri."""
    grid = make_grid(tmp_path, seeds="[1]")
    uri = (tmp_path / "out").as_uri()
    result = run_sweep(grid, uri + "/", spark=spark, progress=False, chunk_runs=2)
    assert (result.ran, result.out, result.report) == (4, uri, uri + "/report/index.html")
    out = tmp_path / "out"
    assert read_runs(uri, grid).num_rows == read_runs(out).num_rows == 4
    assert len(list((out / "events").iterdir())) == 4
    assert (out / "report" / "heatmap_unavailable.png").stat().st_size > 1000
    assert run_sweep(grid, uri, spark=spark, progress=False, report=False).skipped == 4


def test_a_bigger_grid_resumes_into_the_same_out(spark: Any, tmp_path: Path) -> None:
    small = make_grid(tmp_path, axes='[axes]\n"consumer.max_poll_records" = [10]\n', seeds="[1]")
    out = tmp_path / "out"
    run_sweep(small, out, spark=spark, progress=False, report=False)
    big = make_grid(tmp_path, axes='[axes]\n"consumer.max_poll_records" = [10, 20]\n')
    result = run_sweep(big, out, spark=spark, progress=False, report=False)
    assert (result.skipped, result.ran) == (1, 3)
    assert read_runs(out, big).num_rows == 4
    # another base scenario or other axes: refused, before any run
    other = make_grid(tmp_path, axes='[axes]\n"consumer.session_timeout_ms" = [10000]\n')
    with pytest.raises(Exception, match="other axes"):
        run_sweep(other, out, spark=spark, progress=False, report=False)
    (tmp_path / "base.toml").write_text(BASE.replace("members = 3", "members = 4"))
    changed = Grid.from_toml(tmp_path / "grid.toml")
    with pytest.raises(Exception, match="different base scenario"):
        run_sweep(changed, out, spark=spark, progress=False, report=False)


def test_a_run_that_raises_is_recorded(spark: Any, tmp_path: Path) -> None:
    def simulate(scenario: Any, seed: int) -> Any:
        # runs in the executors (shipped by value: a nested function)
        if scenario.workload.records_per_second_per_partition > 1:
            raise OverflowError("the simulation failed at run time")
        from groupcoord.sim import run

        return run(scenario, seed)

    grid = make_grid(
        tmp_path,
        axes='[axes]\n"workload.records_per_second_per_partition" = [1.0, 2.0]\n',
        seeds="[1]",
    )
    out = tmp_path / "out"
    result = run_sweep(grid, out, spark=spark, progress=False, simulate=simulate)
    assert (result.ran, result.failed) == (2, 1)
    rows = {r["workload.records_per_second_per_partition"]: r for r in read_runs(out).to_pylist()}
    bad, good = rows[2.0], rows[1.0]
    assert bad["error"] is not None and bad["error"].startswith("OverflowError:")
    assert all(bad[k] is None for k in SUMMARY_COLUMNS)
    assert good["error"] is None and good["rebalances"] >= 1
    assert not any(e["run_id"] == bad["run_id"] for e in partitioned(out, "events"))
    # recorded means done: a resume does not retry it
    assert run_sweep(grid, out, spark=spark, progress=False, report=False).ran == 0
    page = (out / "report" / "index.html").read_text()
    assert "Runs that raised" in page and "OverflowError" in page


def test_the_report_references_pngs_that_exist(spark: Any, tmp_path: Path) -> None:
    grid = make_grid(
        tmp_path,
        axes=AXES + '"group.static" = [false, true]\n"group.members" = [3, 4]\n',
        seeds="[1]",
    )
    out = tmp_path / "out"
    result = run_sweep(grid, out, spark=spark, progress=False)
    assert result.report == out / "report" / "index.html"
    page = result.report.read_text()
    images = re.findall(r'<img src="([^"]+)"', page)
    assert {
        "heatmap_unwanted_rebalances_per_hour.png",
        "heatmap_unavailable.png",
        "membership.png",
        "lag.png",
    } <= set(images)
    for name in images:
        assert (out / "report" / name).stat().st_size > 1000, name
    for name in re.findall(r'<a href="([^"]+)"', page):
        assert (out / "report" / name).exists(), name
    assert "http://" not in page and "https://" not in page and "<script" not in page
    recommendations = (out / "report" / "recommendations.csv").read_text().splitlines()
    assert recommendations[0].startswith("group.members,")
    assert len(recommendations) == 3  # header + one row per workload (members 3, 4)


def test_cli_sweep(spark: Any, tmp_path: Path) -> None:
    make_grid(tmp_path, seeds="[1]")
    out = tmp_path / "out"
    runner = CliRunner()
    args = [
        "sweep",
        str(tmp_path / "grid.toml"),
        "--out",
        str(out),
        "--no-progress",
        "--heatmap-axes",
        "group.assignors,consumer.max_poll_records",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "4 runs: 4 run now, 0 already in" in result.output
    assert "report:" in result.output
    result = runner.invoke(app, args)
    assert "0 run now, 4 already in" in result.output
    assert spark.sparkContext._jsc is not None  # the shared session was not stopped


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--heatmap-axes", "a"], "--heatmap-axes takes two axes"),
        (["--heatmap-axes", "group.assignors,nope"], "'nope' is not an axis of the grid"),
        (
            ["--out", "nosuch://host/sweep"],
            "--out nosuch://host/sweep: pyarrow cannot open this URI"
            " (Unrecognized filesystem type in URI: nosuch://host/sweep)",
        ),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    make_grid(tmp_path)
    result = CliRunner().invoke(
        app, ["sweep", str(tmp_path / "grid.toml"), "--out", str(tmp_path / "o"), *extra]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.output
    assert "Traceback" not in result.output


def test_cli_bad_grid_fails_before_spark(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE)
    (tmp_path / "grid.toml").write_text(
        'scenario = "base.toml"\n[axes]\n"consumer.max_pol_records" = [1]\n'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "sweep",
            str(tmp_path / "grid.toml"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("groupcoord: error: ")
    assert "unknown key consumer.max_pol_records" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
