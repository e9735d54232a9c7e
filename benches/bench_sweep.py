"""Benchmark: ``groupcoord sweep`` on Spark against a plain loop and ``multiprocessing.Pool(2)``.

The same grid for all, on the same machine, each producing the same outputs: every run's
summary row, events and rebalances, written as Parquet (Spark: the sweep's three datasets;
the loop and the Pool: one Parquet file each, written at the end). Reported: runs per minute
and the ratio to the Pool (the target: Spark within 1.3x of the Pool at 200+ runs), and
Spark with one executor core against two (near-linear is the target). "CPU s" is the CPU
time (user + system) the variant used on every process it ran: the loop's own process, the
Pool's parent and workers, Spark's driver, JVM and Python workers (read from /proc), so a
variant that is slower because it works more is told from one that waits.

Spark runs in a child process per master (``local[1]``, ``local[2]``: one SparkContext per
process), timed from inside: the session's start is reported apart from the sweep itself
(wall and CPU).

Sizes: ``GROUPCOORD_BENCH_SCALE=full`` runs the 200-run grid (examples/sweeps/membership-base
with 10-100 members, eager/cooperative, dynamic/static, 10 seeds; ~0.1-0.9 s a run) with
every variant, a few minutes; otherwise (the CI smoke run under ``--benchmark-disable``) a
4-run grid of a tiny scenario, the loop, the Pool and Spark ``local[2]`` in the test
session's own SparkSession if one is active. The full measurement:

    GROUPCOORD_BENCH_SCALE=full pytest benches/bench_sweep.py --benchmark-only -s

prints the table that benches/results/sweep.md records.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="the sweep benchmark needs PySpark (the pipeline extra)")

import pyarrow as pa
import pyarrow.parquet as pq

from groupcoord.pipeline.grid import Grid, Run
from groupcoord.sim import Scenario, run

REPO = Path(__file__).resolve().parents[1]
FULL_GRID = """\
scenario = "{base}"
seeds = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
[axes]
"group.members" = [10, 25, 50, 75, 100]
"group.assignors" = [["range"], ["cooperative-sticky"]]
"group.static" = [false, true]
"""
TINY_BASE = """\
duration_s = 30
[group]
members = 3
topics = { events = 6 }
[consumer]
session_timeout_ms = 10_000
heartbeat_interval_ms = 3_000
"""
TINY_GRID = """\
scenario = "tiny-base.toml"
seeds = [1, 2]
[axes]
"group.members" = [3, 4]
"""

#: variant -> measured figures, printed by test_summary
RESULTS: dict[str, dict[str, float]] = {}


def tree_cpu_s(root: int) -> float:
    """CPU seconds (user + system) of process ``root`` and every live descendant, including
    what each has reaped from its exited children (Linux /proc): for Spark, the driver's
    Python, the JVM and its Python workers."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # exited meanwhile
            continue
        # after the ")" closing the command: state ppid ... utime(12) stime cutime cstime
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(f) for f in fields[11:15]) / ticks
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(child for child, parent in parents.items() if parent == pid)
    return total


def children_cpu_s() -> float:
    """CPU seconds of this process's exited, reaped children (the Pool's workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def full_scale() -> bool:
    return (os.environ.get("GROUPCOORD_BENCH_SCALE") or "").lower() in ("full", "all")


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Grid:
    directory = tmp_path_factory.mktemp("bench-sweep")
    if full_scale():
        base = REPO / "examples" / "sweeps" / "membership-base.toml"
        (directory / "grid.toml").write_text(FULL_GRID.format(base=base.as_posix()))
    else:
        (directory / "tiny-base.toml").write_text(TINY_BASE)
        (directory / "grid.toml").write_text(TINY_GRID)
    return Grid.from_toml(directory / "grid.toml")


# ---------------------------------------------------------------------- loop and Pool


def _one(job: tuple[dict[str, Any], Run]) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    base, spec = job
    started = time.perf_counter()
    result = run(Scenario.from_dict(base).replace(**spec.overrides), spec.seed)
    row = {"run_id": spec.run_id, **result.summary, "wall_s": time.perf_counter() - started}
    ids = pa.array([spec.run_id] * result.events.num_rows, pa.string())
    events = result.events.append_column("run_id", ids)
    ids = pa.array([spec.run_id] * result.rebalances.num_rows, pa.string())
    rebalances = result.rebalances.append_column("run_id", ids)
    return row, events, rebalances


def _write(out: Path, results: Iterator[tuple[dict[str, Any], pa.Table, pa.Table]]) -> int:
    rows, events, rebalances = [], [], []
    for row, ev, rb in results:
        rows.append(row)
        events.append(ev)
        rebalances.append(rb)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), out / "runs.parquet")
    pq.write_table(pa.concat_tables(events), out / "events.parquet")
    pq.write_table(pa.concat_tables(rebalances), out / "rebalances.parquet")
    return len(rows)


def plain_loop(grid: Grid, out: Path) -> int:
    base = dict(grid.scenario.raw)
    return _write(out, (_one((base, spec)) for spec in grid.runs()))


def pool(grid: Grid, out: Path, processes: int = 2) -> int:
    base = dict(grid.scenario.raw)
    with multiprocessing.get_context("fork").Pool(processes) as workers:
        jobs = [(base, spec) for spec in grid.runs()]
        return _write(out, workers.imap_unordered(_one, jobs, chunksize=1))


# ---------------------------------------------------------------------- Spark


def spark_child(grid_path: str, out: str, master: str) -> dict[str, float]:
    """In a fresh process: start a session on ``master``, sweep, report the two times."""
    from groupcoord.pipeline.session import spark_session
    from groupcoord.pipeline.sweep import run_sweep

    started = time.perf_counter()
    spark = spark_session(
        "bench-sweep", master=master, config={"spark.ui.showConsoleProgress": "false"}
    )
    spark.range(1).count()  # the JVM side up, as a long sweep has it
    session_s = time.perf_counter() - started
    sweep_started = time.perf_counter()
    cpu_started = tree_cpu_s(os.getpid())
    chunks: list[int] = []
    result = run_sweep(
        Grid.from_toml(grid_path),
        out,
        spark=spark,
        progress=False,
        report=False,
        on_write=lambda name, chunk: chunks.append(chunk) if name == "runs" else None,
    )
    sweep_s = time.perf_counter() - sweep_started
    # before stop(): the Python workers (reused, alive until then) hold most of it
    cpu_s = tree_cpu_s(os.getpid()) - cpu_started
    spark.stop()
    return {
        "runs": result.ran,
        "session_s": session_s,
        "sweep_s": sweep_s,
        "cpu_s": cpu_s,
        "chunks": len(chunks),
    }


def spark_in_child(grid: Grid, out: Path, master: str) -> dict[str, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "python"), *filter(None, [env.get("PYTHONPATH")])]
    )
    done = subprocess.run(
        [sys.executable, __file__, str(grid.path), str(out), master],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def spark_here(grid: Grid, out: Path) -> dict[str, float]:
    """The smoke run: the active session (the tests' one) if any, else a new local[2]."""
    from groupcoord.pipeline.session import spark_session
    from groupcoord.pipeline.sweep import run_sweep

    started = time.perf_counter()
    spark = spark_session(
        "bench-sweep", master="local[2]", config={"spark.ui.showConsoleProgress": "false"}
    )
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    cpu_started = tree_cpu_s(os.getpid())
    chunks: list[int] = []
    result = run_sweep(
        grid,
        out,
        spark=spark,
        progress=False,
        report=False,
        on_write=lambda name, chunk: chunks.append(chunk) if name == "runs" else None,
    )
    return {
        "runs": result.ran,
        "session_s": session_s,
        "sweep_s": time.perf_counter() - started,
        "cpu_s": tree_cpu_s(os.getpid()) - cpu_started,
        "chunks": len(chunks),
    }


# ---------------------------------------------------------------------- the benchmarks


def _record(name: str, runs: int, seconds: float, cpu_s: float, **extra: float) -> None:
    RESULTS[name] = {
        "runs": runs,
        "seconds": seconds,
        "cpu_s": cpu_s,
        "per_min": runs / seconds * 60,
        # the machine is shared: the 1-minute load average when the variant ended
        "load": os.getloadavg()[0],
        **extra,
    }


def test_plain_loop(benchmark: Any, grid: Grid, tmp_path: Path) -> None:
    started, cpu_started = time.perf_counter(), time.process_time()
    runs = benchmark.pedantic(plain_loop, args=(grid, tmp_path / "loop"), rounds=1)
    _record("plain loop", runs, time.perf_counter() - started, time.process_time() - cpu_started)
    assert runs == grid.size


def test_pool2(benchmark: Any, grid: Grid, tmp_path: Path) -> None:
    started = time.perf_counter()
    cpu_started = time.process_time() + children_cpu_s()
    runs = benchmark.pedantic(pool, args=(grid, tmp_path / "pool"), rounds=1)
    cpu_s = time.process_time() + children_cpu_s() - cpu_started  # this process + the workers
    _record("multiprocessing.Pool(2)", runs, time.perf_counter() - started, cpu_s)
    assert runs == grid.size


@pytest.mark.parametrize("master", ["local[2]", "local[1]"])
def test_spark(benchmark: Any, grid: Grid, tmp_path: Path, master: str) -> None:
    if not full_scale():
        if master != "local[2]":
            pytest.skip(
                "local[1] vs local[2] needs its own SparkContext: GROUPCOORD_BENCH_SCALE=full"
            )
        figures = benchmark.pedantic(spark_here, args=(grid, tmp_path / "spark"), rounds=1)
    else:
        figures = benchmark.pedantic(
            spark_in_child, args=(grid, tmp_path / "spark", master), rounds=1
        )
    assert figures["runs"] == grid.size
    _record(
        f"Spark {master}",
        int(figures["runs"]),
        figures["sweep_s"],
        figures["cpu_s"],
        session_s=figures["session_s"],
        chunks=figures["chunks"],
        with_session_per_min=figures["runs"] / (figures["sweep_s"] + figures["session_s"]) * 60,
    )
    benchmark.extra_info.update(figures)


@pytest.fixture(scope="module", autouse=True)
def summary(grid: Grid) -> Iterator[None]:
    """Print the comparison once every variant has run (also under --benchmark-only)."""
    yield
    if not RESULTS:
        return
    pool_rate = RESULTS.get("multiprocessing.Pool(2)", {}).get("per_min")
    lines = [
        f"sweep of {grid.size} runs",
        "| variant | wall s | CPU s | runs/min | time / Pool(2) | with the session's start"
        " | load |",
        "|:--|--:|--:|--:|--:|--:|--:|",
    ]
    for name, r in RESULTS.items():
        ratio = f"{pool_rate / r['per_min']:.2f}x" if pool_rate else "-"
        session = r.get("with_session_per_min")
        lines.append(
            f"| {name} | {r['seconds']:.1f} | {r['cpu_s']:.1f} | {r['per_min']:.0f} | {ratio} | "
            + (
                f"{session:.0f} runs/min (start {r['session_s']:.1f} s, {r['chunks']:.0f} chunks)"
                if session
                else "-"
            )
            + f" | {r['load']:.1f} |"
        )
    one, two = RESULTS.get("Spark local[1]"), RESULTS.get("Spark local[2]")
    if one and two:
        lines.append(f"Spark local[2] / local[1] speed-up: {two['per_min'] / one['per_min']:.2f}x")
    print("\n" + "\n".join(lines))


if __name__ == "__main__":
    # the Spark child: bench_sweep.py GRID OUT MASTER -> one JSON line
    print(json.dumps(spark_child(sys.argv[1], sys.argv[2], sys.argv[3])))
