"""pytest-benchmark: ``groupcoord analyze`` throughput on a generated broker log.

- ``test_bench_analyze_builtin``: parse (Spark SQL ``regexp_extract``/``to_timestamp``,
  :func:`groupcoord.pipeline.logs.parse_lines`) and aggregate per group (completed
  rebalances, expired and departed members, max generation), collected to the driver.
- ``test_bench_analyze_python_udf``: the same job with the parse in a Python UDF (``re``
  per line, the row-by-row alternative), for comparison.
- ``test_bench_analyze_end_to_end``: the whole ``analyze`` (events Parquet, rebalances
  with their start, storms, tables, report).

Each prints MB/s and MB/s per core (the log's bytes / wall time / the cores of
``local[*]``). The log comes from ``tools/gen_broker_log.py`` (4.x lines, 2,000 groups) and
is cached in ``$TMPDIR/groupcoord-bench/``. Sizes: ``GROUPCOORD_BENCH_SCALE=full`` (or
``all``): 1 GB; a number: that many MB; otherwise (the CI smoke run) 2 MB. The figures in
benches/results/analyze.md come from:

    GROUPCOORD_BENCH_SCALE=full pytest benches/bench_analyze.py -s
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.logs import KAFKA_LINE, KAFKA_PATTERNS, parse_lines, read_lines

pytest.importorskip("pyspark")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from gen_broker_log import generate


def _size_mb() -> float:
    scale = os.environ.get("GROUPCOORD_BENCH_SCALE", "").lower()
    if scale in ("full", "all"):
        return 1024
    try:
        return float(scale)
    except ValueError:
        return 2


@pytest.fixture(scope="module")
def log_file() -> Path:
    mb = _size_mb()
    directory = Path(tempfile.gettempdir()) / "groupcoord-bench"
    directory.mkdir(exist_ok=True)
    path = directory / f"broker-{mb:g}mb.log"
    if not path.exists():
        partial = path.with_suffix(".partial")
        generate(partial, mb)
        partial.rename(path)
    return path


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from groupcoord.pipeline.session import spark_session

    session = spark_session("groupcoord-bench-analyze")
    _JVM_PID[:] = [int(session.sparkContext._jvm.ProcessHandle.current().pid())]  # type: ignore[union-attr]
    yield session


def _cores(spark: Any) -> int:
    return int(spark.sparkContext.defaultParallelism)


def _report(name: str, path: Path, seconds: float, cores: int) -> None:
    """Wall-clock MB/s (and per core of local[*]) and MB per CPU-second of the Spark JVM
    and its Python workers: the per-core figure that does not depend on what else runs."""
    mb = path.stat().st_size / 1e6
    cpu = _LAST_CPU[0]
    print(
        f"\n{name}: {mb:,.1f} MB in {seconds:.1f} s = {mb / seconds:,.1f} MB/s wall, "
        f"{mb / seconds / cores:,.1f} MB/s per core of {cores}; {cpu:,.1f} CPU-s = "
        f"{mb / cpu:,.1f} MB per CPU-second; load average {os.getloadavg()[0]:.1f}"
    )


def _aggregate(events: Any) -> list[Any]:
    from pyspark.sql import functions as F

    return (
        events.where(F.col("event").isNotNull())
        .groupBy("group")
        .agg(
            F.sum((F.col("event") == "rebalance_completed").cast("int")).alias("rebalances"),
            F.max(F.when(F.col("event") == "rebalance_completed", F.col("generation"))).alias(
                "max_generation"
            ),
            F.sum((F.col("cause") == "session_timeout").cast("int")).alias("expired"),
            F.sum(F.col("cause").isin("left", "poll_timeout").cast("int")).alias("left"),
        )
        .collect()
    )


def _tree_cpu_s(root: int) -> float:
    """User + system CPU seconds of process ``root`` and its live descendants (the Spark
    JVM and its Python workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry))
        cpu[int(entry)] = (int(fields[11]) + int(fields[12])) / ticks
    total, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        total += cpu.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return total


_JVM_PID: list[int] = []


def _timed(benchmark: Any, job: Any) -> tuple[Any, float]:
    box: dict[str, Any] = {}

    def run() -> None:
        cpu0 = _tree_cpu_s(_JVM_PID[0]) if _JVM_PID else 0.0
        start = time.perf_counter()
        box["result"] = job()
        box["seconds"] = time.perf_counter() - start
        box["cpu"] = (_tree_cpu_s(_JVM_PID[0]) - cpu0) if _JVM_PID else float("nan")

    benchmark.pedantic(run, rounds=1, iterations=1)
    if "seconds" not in box:  # --benchmark-disable still runs it once
        run()
    _LAST_CPU[:] = [box["cpu"]]
    return box["result"], box["seconds"]


_LAST_CPU: list[float] = [float("nan")]


def _expected(path: Path) -> int:
    with path.open(encoding="utf-8") as handle:
        return sum(1 for line in handle if " Stabilized group " in line)


def test_bench_analyze_builtin(benchmark: Any, spark: Any, log_file: Path) -> None:
    def job() -> list[Any]:
        return _aggregate(parse_lines(read_lines(spark, [str(log_file)])))

    rows, seconds = _timed(benchmark, job)
    assert sum(r["rebalances"] for r in rows) == _expected(log_file)
    _report("built-in Spark functions", log_file, seconds, _cores(spark))


def test_bench_analyze_python_udf(benchmark: Any, spark: Any, log_file: Path) -> None:
    from pyspark.sql import functions as F

    header_re = re.compile(KAFKA_LINE)
    stabilized_re = re.compile(KAFKA_PATTERNS["rebalance_completed"])
    expired_re = re.compile(KAFKA_PATTERNS["expired"])
    left4_re = re.compile(KAFKA_PATTERNS["left_4"])
    left3_re = re.compile(KAFKA_PATTERNS["left_3"])

    def udf_parse(line: str) -> tuple[str | None, str | None, int | None, str | None]:
        # defined here so that cloudpickle ships it by value to the Python workers
        header = header_re.match(line)
        if header is None or header.group(4) is None:
            return (None, None, None, None)
        msg = header.group(3)
        if "Stabilized group" in msg:
            m = stabilized_re.search(msg)
            if m:
                return (m.group(1), "rebalance_completed", int(m.group(2)), None)
        elif "has failed, removing it" in msg:
            m = expired_re.search(msg)
            if m:
                return (m.group(2), "member_removed", None, "session_timeout")
        elif "`LeaveGroup`" in msg:
            m4 = left4_re.search(msg)
            if m4:
                return (m4.group(1), "member_removed", None, "left")
            m3 = left3_re.search(msg)
            if m3:
                return (m3.group(3), "member_removed", None, "left")
        return (None, None, None, None)

    parse = F.udf(udf_parse, "struct<group:string,event:string,generation:int,cause:string>")

    def job() -> list[Any]:
        lines = spark.read.text(str(log_file))
        parsed = lines.select(parse("value").alias("e")).select("e.*")
        return _aggregate(parsed)

    rows, seconds = _timed(benchmark, job)
    assert sum(r["rebalances"] for r in rows) == _expected(log_file)
    _report("Python UDF (re per line)", log_file, seconds, _cores(spark))


def test_bench_analyze_end_to_end(benchmark: Any, spark: Any, log_file: Path) -> None:
    from groupcoord.pipeline.analyze import analyze

    out = Path(tempfile.mkdtemp(prefix="bench-analyze-"))
    summary, seconds = _timed(benchmark, lambda: analyze(spark, [str(log_file)], out))
    assert summary["rebalances"] == _expected(log_file)
    assert summary["lines_unparsed"] == 0
    _report("groupcoord analyze end to end", log_file, seconds, _cores(spark))
