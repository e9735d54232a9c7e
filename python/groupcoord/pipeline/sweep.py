"""``groupcoord sweep``: run every (axes combination, seed) of a grid on Spark and write Parquet.

How it runs. The driver reads and checks the grid (:mod:`groupcoord.pipeline.grid`), drops the
runs already in ``OUT/runs/`` (resume), shuffles the rest (a fixed order, so heavy and light
runs mix in every task) and submits them in *chunks*. A chunk is a DataFrame of runs
(``run_id``, ``seed``, the overrides as JSON) whose tasks call :func:`groupcoord.sim.run` through
``mapInArrow`` (the simulation runs in the executors' Python workers, one Arrow batch per run;
nothing runs per row on the driver). Each chunk's result is cached and written as three
Parquet datasets, in this order:

- ``OUT/events/`` and ``OUT/rebalances/``: partitioned by ``run_id`` (a ``run_id=...``
  directory per run; reading the dataset gives a ``run_id`` column), written with dynamic
  partition overwrite, so a chunk that is written again replaces its runs' partitions and
  never duplicates them;
- ``OUT/runs/``: one row per run, appended last. A run is *done* when its row is in runs/.

A sweep that is interrupted (Ctrl-C, a crash, a lost driver) keeps every chunk it finished;
running it again with the same ``--out`` reads the ``run_id`` column of ``runs/``, skips
those runs and runs the others. A run interrupted after its events were written but before
its row was is run again, and its partitions are replaced. One sweep at a time per ``OUT``.

Chunks are sized by time: the first is small (two runs per core) to measure the speed, the
next ones aim at :data:`CHUNK_S` seconds of wall time each (60 s; at least four runs per
core, so one slow run does not leave cores idle), so the progress bar moves and an
interruption loses at most about a minute, while the fixed cost of the Spark jobs of a chunk
(a second or two here) stays a small part of the sweep.

``OUT/runs/`` columns: ``run_id``, ``seed``, one column per axis named by its dotted key
(ints as int64, numbers as float64, booleans, strings; lists, tables and axes of mixed
types as the canonical JSON text of each value: sorted keys, no spaces), every key of the
simulator's ``summary.json`` under the same name (see :data:`SUMMARY_COLUMNS`; null when the
run raised), ``error`` (null, or the exception's type and message) and ``wall_s`` (seconds
the run took in its task). ``OUT/sweep.json`` records the grid; a resumed sweep must have the
same base scenario and the same axes (values and seeds may be added).
"""

from __future__ import annotations

import json
import random
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from groupcoord.pipeline.grid import Grid, Run, canonical_json, column_value
from groupcoord.pipeline.session import PipelineError, spark_session
from groupcoord.sim import Scenario, SimResult
from groupcoord.sim.result import EVENT_COLUMNS, REBALANCE_COLUMNS

#: what a run executes: ``simulate(scenario, seed) -> SimResult``
Simulate = Callable[[Scenario, int], SimResult]

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["SUMMARY_COLUMNS", "SweepResult", "run_sweep", "runs_schema"]

#: every key of ``summary.json`` (:mod:`groupcoord.sim.result`) with its column type
SUMMARY_COLUMNS: Final[Mapping[str, str]] = {
    "rebalances": "int64",
    "generations": "int64",
    "members_expired_session": "int64",
    "members_expired_poll": "int64",
    "members_left": "int64",
    "members_not_rejoined": "int64",
    "unavailable_partition_seconds": "float64",
    "duplicates": "int64",
    "stop_the_world_ms": "int64",
    "time_to_stable_ms": "int64",
    "p50_lag_ms": "int64",
    "p99_lag_ms": "int64",
    "max_lag_ms": "int64",
    "simulated_heartbeats": "int64",
    "requests": "int64",
    "records_arrived": "int64",
    "records_processed": "int64",
    "final_generation": "int64",
    "members_running": "int64",
    "duration_s": "float64",
}

#: first chunk: runs per executor core (to measure the speed before sizing the others)
FIRST_CHUNK_PER_CORE: Final = 2
#: tasks per executor core in a chunk (more tasks balance uneven runs, each costs ~10 ms)
TASKS_PER_CORE: Final = 4
_DATASETS: Final = ("events", "rebalances", "runs")
#: the task schema's list columns that carry a run's rebalances/ and events/ rows
_NESTED: Final = {"rebalances": "_rebalance_rows", "events": "_event_rows"}


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What :func:`run_sweep` did."""

    out: Path
    total: int  #: runs in the grid
    skipped: int  #: already in OUT/runs/ when the sweep started
    ran: int  #: run by this call
    failed: int  #: of those, runs that raised (recorded with their error)
    wall_s: float
    report: Path | None = None


# ---------------------------------------------------------------------- schemas


def _arrow_type(kind: str) -> pa.DataType:
    import pyarrow as pa

    types: dict[str, pa.DataType] = {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "float64": pa.float64(),
        "string": pa.string(),
        "bool": pa.bool_(),
        "int": pa.int64(),
        "float": pa.float64(),
        "json": pa.string(),
    }
    return types[kind]


def runs_schema(axis_kinds: Mapping[str, str]) -> pa.Schema:
    """The columns of ``OUT/runs/`` for a grid whose axes have ``axis_kinds``."""
    import pyarrow as pa

    fields = [pa.field("run_id", pa.string(), nullable=False), pa.field("seed", pa.int64())]
    fields += [
        pa.field(key, _arrow_type(kind))
        for key, kind in axis_kinds.items()
        if key not in SUMMARY_COLUMNS
    ]
    fields += [pa.field(key, _arrow_type(kind)) for key, kind in SUMMARY_COLUMNS.items()]
    fields += [pa.field("error", pa.string()), pa.field("wall_s", pa.float64())]
    return pa.schema(fields)


def _struct(columns: tuple[tuple[str, str, str], ...]) -> pa.DataType:
    import pyarrow as pa

    return pa.struct([pa.field(name, _arrow_type(kind)) for name, kind, _ in columns])


def _task_schema(axis_kinds: Mapping[str, str]) -> pa.Schema:
    """What the tasks return: a runs/ row plus the run's rebalances and events as lists."""
    import pyarrow as pa

    schema = runs_schema(axis_kinds)
    schema = schema.append(pa.field(_NESTED["rebalances"], pa.list_(_struct(REBALANCE_COLUMNS))))
    return schema.append(pa.field(_NESTED["events"], pa.list_(_struct(EVENT_COLUMNS))))


# ---------------------------------------------------------------------- in the tasks


def simulate_batches(
    batches: Iterator[pa.RecordBatch],
    *,
    base: Mapping[str, Any],
    axis_kinds: Mapping[str, str],
    simulate: Simulate | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: for each input row (``run_id``, ``seed``, ``overrides``),
    run the simulation and yield one batch of the task schema. A run that raises yields its
    row with ``error`` set and the summary columns null."""
    from groupcoord.sim import Scenario

    scenario = Scenario.from_dict(base)
    schema = _task_schema(axis_kinds)
    for batch in batches:
        for row in batch.to_pylist():
            overrides = json.loads(row["overrides"])
            yield _simulate_one(
                scenario, row["run_id"], row["seed"], overrides, axis_kinds, schema, simulate
            )


def _simulate_one(
    scenario: Any,
    run_id: str,
    seed: int,
    overrides: Mapping[str, Any],
    axis_kinds: Mapping[str, str],
    schema: pa.Schema,
    simulate: Simulate | None = None,
) -> pa.RecordBatch:
    import pyarrow as pa

    from groupcoord.sim import run

    simulate = run if simulate is None else simulate

    out: dict[str, Any] = {"run_id": run_id, "seed": seed}
    for key, kind in axis_kinds.items():
        if key not in SUMMARY_COLUMNS:
            out[key] = column_value(kind, overrides[key])
    tables: dict[str, pa.Table | None] = {"rebalances": None, "events": None}
    started = time.perf_counter()
    try:
        result = simulate(scenario.replace(**overrides), seed)
    except Exception as exc:  # a run that raises is recorded, it does not stop the sweep
        out["error"] = _error_text(exc)
    else:
        for key in SUMMARY_COLUMNS:
            out[key] = result.summary[key]
        out["error"] = None
        tables = {"rebalances": result.rebalances, "events": result.events}
    out["wall_s"] = round(time.perf_counter() - started, 6)
    arrays = []
    for field in schema:
        if field.name in (_NESTED["rebalances"], _NESTED["events"]):
            name = "rebalances" if field.name == _NESTED["rebalances"] else "events"
            arrays.append(_one_list(tables[name], field.type))
        else:
            arrays.append(pa.array([out.get(field.name)], type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _one_list(table: pa.Table | None, list_type: pa.DataType) -> pa.Array:
    """A one-row list<struct> column holding ``table``'s rows (Arrow to Arrow, no Python
    object per row: a run can have tens of thousands of events)."""
    import pyarrow as pa

    struct_type = list_type.value_type
    if table is None:
        rows = pa.array([], type=struct_type)
    else:
        rows = pa.StructArray.from_arrays(
            [table.column(f.name).combine_chunks().cast(f.type) for f in struct_type],
            fields=list(struct_type),
        )
    offsets = pa.array([0, len(rows)], type=pa.int32())
    return pa.ListArray.from_arrays(offsets, rows, type=list_type)


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {Path(frame[0].filename).name}:{frame[0].lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


# ---------------------------------------------------------------------- on the driver


def _read_done(out: Path) -> set[str]:
    """run_ids already in OUT/runs/ (files of unfinished Spark jobs are in ``_temporary``
    or hidden directories, which readers skip)."""
    import pyarrow.dataset as ds

    runs = out / "runs"
    if not runs.is_dir():
        return set()
    dataset = ds.dataset(runs, format="parquet")
    return set(dataset.to_table(columns=["run_id"]).column("run_id").to_pylist())


def _clean_unfinished(out: Path) -> None:
    """Remove what an interrupted Spark job left: its ``_temporary`` directory would be
    committed by the next append to the same dataset (duplicating its rows)."""
    import shutil

    for name in _DATASETS:
        for leftover in [out / name / "_temporary", *(out / name).glob(".spark-staging-*")]:
            if leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)


def _check_manifest(out: Path, grid: Grid) -> None:
    """``OUT/sweep.json``: the grid a sweep in OUT ran; a resumed one must fit it."""
    manifest = out / "sweep.json"
    kinds = grid.axis_kinds()
    current = {
        "grid": str(grid.path) if grid.path else None,
        "scenario_file": str(grid.scenario_path),
        "scenario": json.loads(grid.fingerprint()),
        "seeds": list(grid.seeds),
        "axes": {k: list(v) for k, v in grid.axes.items()},
        "axis_kinds": kinds,
    }
    if manifest.exists():
        try:
            before = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise PipelineError(f"{manifest} is unreadable ({exc}); use a new --out") from None
        if canonical_json(before.get("scenario")) != grid.fingerprint():
            raise PipelineError(
                f"{out} holds a sweep of a different base scenario; use a new --out "
                "(or the scenario it was run with)"
            )
        if before.get("axis_kinds") != kinds:
            raise PipelineError(
                f"{out} holds a sweep over other axes ({', '.join(before.get('axis_kinds', {}))})"
                f" or other value types; use a new --out"
            )
    out.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _slots(spark: SparkSession) -> int:
    """Executor cores the job can use at once."""
    return max(1, int(spark.sparkContext.defaultParallelism))


def _chunks(
    runs: list[Run], *, slots: int, chunk_runs: int | None, rate: Callable[[], float | None]
) -> Iterator[list[Run]]:
    """Consecutive chunks of ``runs``: ``chunk_runs`` each if given; else a first chunk of
    :data:`FIRST_CHUNK_PER_CORE` runs per core, then ``CHUNK_S`` seconds' worth at the
    speed measured so far (``rate()``: runs/s, Spark's per-job cost included)."""
    start = 0
    while start < len(runs):
        measured = rate()
        if chunk_runs is not None:
            size = chunk_runs
        elif measured is None:
            size = FIRST_CHUNK_PER_CORE * slots
        else:
            # at least a few runs per core, so that one slow run does not leave cores idle
            size = max(slots * TASKS_PER_CORE, int(measured * CHUNK_S))
        yield runs[start : start + size]
        start += size


#: wall seconds a chunk aims at (after the first)
CHUNK_S: Final = 60.0


class _Progress:
    """runs done / total with an ETA on stderr: a rich bar on a terminal, else a line per
    chunk (CI logs)."""

    def __init__(self, total: int, done: int, *, enabled: bool) -> None:
        self.total, self.done = total, done
        self._enabled = enabled
        self._started = time.monotonic()
        self._first_done = done
        self._bar: Any = None
        self._task: Any = None
        if enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("sweep"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("runs"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                transient=False,
            )
            self._bar.start()
            self._task = self._bar.add_task("sweep", total=total, completed=done)

    def eta_s(self) -> float | None:
        ran = self.done - self._first_done
        if ran <= 0:
            return None
        elapsed = time.monotonic() - self._started
        return elapsed / ran * (self.total - self.done)

    def advance(self, runs: int) -> None:
        self.done += runs
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self._enabled:
            eta = self.eta_s()
            left = "" if eta is None else f", ETA {_duration(eta)}"
            elapsed = _duration(time.monotonic() - self._started)
            print(f"sweep: {self.done}/{self.total} runs, {elapsed}{left}", file=sys.stderr)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


def _runs_frame(spark: SparkSession, chunk: Sequence[Run], slots: int) -> DataFrame:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType(
        [
            StructField("run_id", StringType(), False),
            StructField("seed", LongType(), False),
            StructField("overrides", StringType(), False),
        ]
    )
    rows = [(r.run_id, r.seed, r.overrides_json) for r in chunk]
    tasks = max(1, min(len(rows), slots * TASKS_PER_CORE))
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, tasks), schema)


def _write_chunk(
    spark: SparkSession,
    frame: DataFrame,
    out: Path,
    index: int,
    on_write: Callable[[str, int], None] | None,
) -> int:
    """Write a chunk's three datasets (events, rebalances, then runs); return its errors."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        failed = frame.filter(F.col("error").isNotNull()).count()  # runs the simulations
        for name in ("events", "rebalances"):
            (
                frame.select("run_id", F.inline(_NESTED[name]))
                .write.mode("overwrite")
                .option("partitionOverwriteMode", "dynamic")
                .partitionBy("run_id")
                .parquet(str(out / name))
            )
            if on_write is not None:
                on_write(name, index)
        frame.drop(*_NESTED.values()).coalesce(1).write.mode("append").parquet(str(out / "runs"))
        if on_write is not None:
            on_write("runs", index)
    finally:
        frame.unpersist()
    return int(failed)


def run_sweep(
    grid: Grid,
    out: str | Path,
    *,
    spark: SparkSession | None = None,
    master: str | None = None,
    parallelism: int | None = None,
    chunk_runs: int | None = None,
    progress: bool = True,
    on_write: Callable[[str, int], None] | None = None,
    report: bool = True,
    heatmap_axes: tuple[str, str] | None = None,
    simulate: Simulate | None = None,
) -> SweepResult:
    """Run ``grid`` into ``out`` (resuming what is there) and write the report.

    ``spark``: a session to use (else one is made from ``master``/``parallelism``).
    ``chunk_runs``: a fixed chunk size instead of time-sized chunks. ``on_write(dataset,
    chunk)`` is called after each dataset of a chunk is written (for tools and tests).
    ``heatmap_axes``: the report's two heatmap axes (default: the two with most values).
    ``simulate(scenario, seed)``: what each run executes (default :func:`groupcoord.sim.run`;
    it is shipped to the executors, so a wrapper must be picklable by cloudpickle).
    """
    started = time.monotonic()
    out = Path(out)
    if heatmap_axes is not None:
        for axis in heatmap_axes:
            if axis not in grid.axes:
                raise PipelineError(
                    f"--heatmap-axes: {axis!r} is not an axis of the grid"
                    f" ({', '.join(grid.axes) or 'it has none'})"
                )
    _check_manifest(out, grid)
    _clean_unfinished(out)
    runs = grid.runs()
    done = _read_done(out)
    todo = [r for r in runs if r.run_id not in done]
    random.Random(0).shuffle(todo)  # heavy and light runs mixed in every chunk
    skipped = len(runs) - len(todo)
    failed = 0
    owned = None
    if todo:
        if spark is None:
            from pyspark.sql import SparkSession

            fresh = SparkSession.getActiveSession() is None
            spark = spark_session(
                "groupcoord-sweep",
                master=master,
                parallelism=parallelism,
                config={
                    "spark.ui.showConsoleProgress": "false",
                    "spark.sql.debug.maxToStringFields": "1000",
                },
            )
            owned = spark if fresh else None  # made here: stopped here
        slots = parallelism or _slots(spark)
        # a task writes the partitions of its few runs with one open writer each instead of
        # sorting its rows by run_id first (a sort of every event of the chunk)
        spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", "256")
        schema = _task_schema(grid.axis_kinds())
        task = partial(
            simulate_batches,
            base=dict(grid.scenario.raw),
            axis_kinds=grid.axis_kinds(),
            simulate=simulate,
        )
        bar = _Progress(len(runs), skipped, enabled=progress)
        timing: list[tuple[int, float]] = []

        def rate() -> float | None:
            # the last chunk's speed: the first one also pays for starting the workers
            if not timing:
                return None
            ran, seconds = timing[-1]
            return ran / seconds if seconds > 0 else None

        try:
            for index, chunk in enumerate(
                _chunks(todo, slots=slots, chunk_runs=chunk_runs, rate=rate)
            ):
                chunk_started = time.monotonic()
                frame = _runs_frame(spark, chunk, slots).mapInArrow(task, _spark_schema(schema))
                failed += _write_chunk(spark, frame, out, index, on_write)
                timing.append((len(chunk), time.monotonic() - chunk_started))
                bar.advance(len(chunk))
        finally:
            bar.close()
            if owned is not None:
                owned.stop()
    report_path = None
    if report:
        from groupcoord.pipeline.sweep_report import write_sweep_report

        report_path = write_sweep_report(out, grid, heatmap_axes=heatmap_axes)
    return SweepResult(
        out=out,
        total=len(runs),
        skipped=skipped,
        ran=len(todo),
        failed=failed,
        wall_s=time.monotonic() - started,
        report=report_path,
    )


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def read_runs(out: str | Path, grid: Grid | None = None) -> pa.Table:
    """``OUT/runs/`` as one table (only the grid's runs when ``grid`` is given), by run_id."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    table = ds.dataset(Path(out) / "runs", format="parquet").to_table()
    if grid is not None:
        wanted = [r.run_id for r in grid.runs()]
        table = table.filter(pc.is_in(table.column("run_id"), value_set=_pa_strings(wanted)))
    return table.sort_by("run_id")


def _pa_strings(values: list[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, type=pa.string())
