"""``groupcoord sweep``: run every (axes combination, seed) of a grid on Spark and write Parquet.

How it runs. The driver reads and checks the grid (:mod:`groupcoord.pipeline.grid`), drops the
runs already in ``OUT/runs/`` (resume), shuffles the rest (a fixed order, so heavy and light
runs mix in every task) and submits them in *chunks*. A chunk is a DataFrame of runs
(``run_id``, ``seed``, the overrides as JSON) whose tasks call :func:`groupcoord.sim.run` through
``mapInArrow`` (the simulation runs in the executors' Python workers; nothing runs per row
on the driver). Three Parquet datasets come out:

- ``OUT/events/`` and ``OUT/rebalances/``: partitioned by ``run_id`` (a ``run_id=...``
  directory per run, as Spark's ``partitionBy`` lays it out; reading the dataset with Spark
  or pyarrow gives a ``run_id`` column). The *task* that ran a run writes its two files
  itself with pyarrow (:data:`RUN_FILE` in the run's directory, written under a hidden
  temporary name and renamed) and sends only the run's summary row on to Spark. A run's
  thousands of event rows thus never cross into the JVM (converting, caching and writing
  them there cost the sweep about a third of its speed on two cores; benches/results/
  sweep.md). The file name is the same for every attempt at a run, so a task that Spark
  retries (or runs twice, speculatively) replaces the file instead of adding a second.
- ``OUT/runs/``: one row per run. The rows of a chunk come back to the driver as the result
  of the chunk's one Spark job (``toArrow``) and the driver adds them as one Parquet file
  (hidden temporary name, then rename: a chunk's rows appear all at once or not at all).
  A run is *done* when its row is in runs/.

A sweep that is interrupted (Ctrl-C, a crash, a lost driver) keeps every chunk it finished;
running it again with the same ``--out`` reads the ``run_id`` column of ``runs/``, removes
the events/ and rebalances/ directories of every run that is not in it (files of a chunk
that did not finish) and runs those runs again. One sweep at a time per ``OUT``.

Where ``OUT`` is. The tasks write to the path the driver names, so every executor must see
it: any local path works on ``local[*]`` and ``local-cluster`` (a relative one is made
absolute on the driver first: the executors do not run in its working directory); on a real
cluster ``--out`` must be a shared filesystem, as a path mounted alike on every node or as a
URI that both Spark (Hadoop) and :func:`pyarrow.fs.FileSystem.from_uri` open under the same
name, e.g. ``hdfs://namenode:8020/sweeps/x`` (not S3: Hadoop calls it ``s3a://``, pyarrow
``s3://``).

Chunks are sized by time: the first two are small (two runs per core) to measure the speed,
the next ones aim at :data:`CHUNK_S` seconds of wall time each (60 s; at least four runs per
core), so the progress bar moves and an interruption loses at most about a minute. Two
chunks are in flight at a time (:data:`IN_FLIGHT`, a driver thread each): Spark's FIFO
scheduler gives the older chunk's tasks the cores first and the newer one's fill the cores
that the older chunk's last, slow tasks leave idle, so the end of a chunk (its slowest
task, then the driver's bookkeeping and the next job's start) costs no core time.

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
import uuid
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
    import pyarrow.fs as pafs
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "RUN_FILE",
    "SUMMARY_COLUMNS",
    "SweepResult",
    "out_filesystem",
    "out_location",
    "read_runs",
    "run_sweep",
    "runs_schema",
]

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

#: first chunks: runs per executor core (to measure the speed before sizing the others)
FIRST_CHUNK_PER_CORE: Final = 2
#: chunks whose Spark jobs run at once (the second fills the cores the first leaves idle)
IN_FLIGHT: Final = 2
#: tasks per executor core in a chunk (more tasks balance uneven runs, each costs ~10 ms)
TASKS_PER_CORE: Final = 4
_DATASETS: Final = ("events", "rebalances", "runs")
#: the datasets whose files the tasks write, one directory per run, and their columns
_RUN_DATASETS: Final = {"events": EVENT_COLUMNS, "rebalances": REBALANCE_COLUMNS}
#: the one file of a run in its events/ and rebalances/ directory (``run_id=<id>/``)
RUN_FILE: Final = "part-00000.parquet"


@dataclass(frozen=True, slots=True)
class SweepResult:
    """What :func:`run_sweep` did."""

    out: Path | str  #: as given: a local directory (a Path) or a URI
    total: int  #: runs in the grid
    skipped: int  #: already in OUT/runs/ when the sweep started
    ran: int  #: run by this call
    failed: int  #: of those, runs that raised (recorded with their error)
    wall_s: float
    report: Path | str | None = None  #: its index.html (a URI when ``out`` is one)


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


def _columns_schema(columns: tuple[tuple[str, str, str], ...]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(kind)) for name, kind, _ in columns])


# ---------------------------------------------------------------------- where OUT is


def _is_uri(out: str) -> bool:
    return "://" in out


def out_location(out: str | Path) -> str:
    """``out`` as the driver hands it to Spark and to the tasks: a URI as given, a local path
    made absolute (the executors' Python workers do not run in the driver's directory)."""
    text = str(out)
    if _is_uri(text):
        return text.rstrip("/")
    return str(Path(text).absolute())


def out_filesystem(location: str) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem and path of an :func:`out_location` (local, or any URI
    :func:`pyarrow.fs.FileSystem.from_uri` opens: file://, hdfs://, ...)."""
    import pyarrow.fs as pafs

    if not _is_uri(location):
        return pafs.LocalFileSystem(), location
    try:
        fs, path = pafs.FileSystem.from_uri(location)
    except (ValueError, OSError) as exc:  # ArrowInvalid is a ValueError, ArrowIOError an OSError
        raise PipelineError(f"--out {location}: pyarrow cannot open this URI ({exc})") from None
    return fs, path.rstrip("/")


# ---------------------------------------------------------------------- in the tasks


def simulate_batches(
    batches: Iterator[pa.RecordBatch],
    *,
    base: Mapping[str, Any],
    axis_kinds: Mapping[str, str],
    out: str,
    simulate: Simulate | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: for each input row (``run_id``, ``seed``, ``overrides``),
    run the simulation, write its events/ and rebalances/ files under ``out`` (an
    :func:`out_location`) and yield its runs/ row (a batch of :func:`runs_schema`). A run
    that raises yields its row with ``error`` set and the summary columns null, and writes
    no file. A file that cannot be written fails the task (Spark retries it, then fails
    the sweep with the error): that is the storage's problem, not the run's."""
    from groupcoord.sim import Scenario

    scenario = Scenario.from_dict(base)
    schema = runs_schema(axis_kinds)
    files = _RunFiles(out)
    for batch in batches:
        for row in batch.to_pylist():
            overrides = json.loads(row["overrides"])
            yield _simulate_one(
                scenario, row["run_id"], row["seed"], overrides, axis_kinds, schema, files, simulate
            )


class _RunFiles:
    """Writes a run's events/ and rebalances/ files, in a task (see the module's doc)."""

    def __init__(self, out: str) -> None:
        self.fs, self.base = out_filesystem(out)
        self.schemas = {name: _columns_schema(cols) for name, cols in _RUN_DATASETS.items()}

    def write(self, run_id: str, tables: Mapping[str, pa.Table]) -> None:
        import pyarrow.parquet as pq

        for name, table in tables.items():
            if table.num_rows == 0:  # as Spark's partitionBy: no rows, no directory
                continue
            schema = self.schemas[name]
            table = table.select(schema.names).cast(schema)
            # run ids are "r" + hex digits: nothing that Spark would escape in a directory name
            directory = f"{self.base}/{name}/run_id={run_id}"
            self.fs.create_dir(directory, recursive=True)
            # a hidden name (Spark and pyarrow skip names starting with "." or "_") that is
            # unique per attempt: a reader never sees half a file, and two attempts at the
            # same run do not write into each other's file
            temp = f"{directory}/.{uuid.uuid4().hex}.tmp"
            final = f"{directory}/{RUN_FILE}"
            pq.write_table(table, temp, filesystem=self.fs)
            try:
                self.fs.move(temp, final)  # replaces an earlier attempt's (POSIX rename)
            except OSError:
                # HDFS's rename does not replace an existing file (an earlier attempt's)
                self.fs.delete_file(final)
                self.fs.move(temp, final)


def _simulate_one(
    scenario: Any,
    run_id: str,
    seed: int,
    overrides: Mapping[str, Any],
    axis_kinds: Mapping[str, str],
    schema: pa.Schema,
    files: _RunFiles,
    simulate: Simulate | None = None,
) -> pa.RecordBatch:
    import pyarrow as pa

    from groupcoord.sim import run

    simulate = run if simulate is None else simulate

    out: dict[str, Any] = {"run_id": run_id, "seed": seed}
    for key, kind in axis_kinds.items():
        if key not in SUMMARY_COLUMNS:
            out[key] = column_value(kind, overrides[key])
    started = time.perf_counter()
    try:
        result = simulate(scenario.replace(**overrides), seed)
    except Exception as exc:  # a run that raises is recorded, it does not stop the sweep
        out["wall_s"] = round(time.perf_counter() - started, 6)
        out["error"] = _error_text(exc)
    else:
        out["wall_s"] = round(time.perf_counter() - started, 6)  # the simulation's own time
        for key in SUMMARY_COLUMNS:
            out[key] = result.summary[key]
        out["error"] = None
        # before the row is yielded: a row in runs/ means these files are complete
        files.write(run_id, {"events": result.events, "rebalances": result.rebalances})
    arrays = [pa.array([out.get(field.name)], type=field.type) for field in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _error_text(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {Path(frame[0].filename).name}:{frame[0].lineno})" if frame else ""
    return f"{type(exc).__name__}: {exc}{where}"


# ---------------------------------------------------------------------- on the driver


def _read_done(fs: pafs.FileSystem, base: str) -> set[str]:
    """run_ids already in OUT/runs/ (unfinished files are hidden or in ``_temporary``,
    which readers skip)."""
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    runs = f"{base}/runs"
    if fs.get_file_info(runs).type != pafs.FileType.Directory:
        return set()
    dataset = ds.dataset(runs, format="parquet", filesystem=fs)
    return set(dataset.to_table(columns=["run_id"]).column("run_id").to_pylist())


def _clean_unfinished(fs: pafs.FileSystem, base: str, done: set[str]) -> None:
    """Remove what an interrupted sweep left, before its runs are run again:

    - the events/ and rebalances/ directories of runs that are not ``done`` (not in runs/):
      the files of a chunk whose rows never reached runs/; the runs are run again;
    - hidden temporary files (``.*.tmp``) of the tasks and of the driver (an attempt or a
      driver that died while writing);
    - ``_temporary`` and ``.spark-staging-*`` of a Spark write that did not commit (sweeps
      made before the tasks wrote their files wrote all three datasets with Spark): the next
      Spark append to the same dataset would commit them.
    """
    import pyarrow.fs as pafs

    def is_temp(info: pafs.FileInfo) -> bool:
        leaf: str = info.base_name
        return leaf.startswith(".") and leaf.endswith(".tmp")

    for name in _DATASETS:
        root = f"{base}/{name}"
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            continue
        for entry in fs.get_file_info(pafs.FileSelector(root)):
            leaf = entry.base_name
            if leaf == "_temporary" or leaf.startswith(".spark-staging-"):
                fs.delete_dir(entry.path)
            elif is_temp(entry):
                fs.delete_file(entry.path)
            elif name in _RUN_DATASETS and leaf.startswith("run_id="):
                if leaf.removeprefix("run_id=") not in done:
                    fs.delete_dir(entry.path)
                    continue
                for inner in fs.get_file_info(pafs.FileSelector(entry.path)):
                    if is_temp(inner):
                        fs.delete_file(inner.path)


def _check_manifest(fs: pafs.FileSystem, base: str, location: str, grid: Grid) -> None:
    """``OUT/sweep.json``: the grid a sweep in OUT ran; a resumed one must fit it."""
    import pyarrow.fs as pafs

    manifest = f"{base}/sweep.json"
    kinds = grid.axis_kinds()
    current = {
        "grid": str(grid.path) if grid.path else None,
        "scenario_file": str(grid.scenario_path),
        "scenario": json.loads(grid.fingerprint()),
        "seeds": list(grid.seeds),
        "axes": {k: list(v) for k, v in grid.axes.items()},
        "axis_kinds": kinds,
    }
    if fs.get_file_info(manifest).type != pafs.FileType.NotFound:
        try:
            with fs.open_input_stream(manifest) as stream:
                before = json.loads(stream.read().decode("utf-8"))
        except (OSError, ValueError) as exc:
            raise PipelineError(
                f"{location}/sweep.json is unreadable ({exc}); use a new --out"
            ) from None
        if canonical_json(before.get("scenario")) != grid.fingerprint():
            raise PipelineError(
                f"{location} holds a sweep of a different base scenario; use a new --out "
                "(or the scenario it was run with)"
            )
        if before.get("axis_kinds") != kinds:
            raise PipelineError(
                f"{location} holds a sweep over other axes"
                f" ({', '.join(before.get('axis_kinds', {}))}) or other value types;"
                " use a new --out"
            )
    fs.create_dir(base, recursive=True)
    text = json.dumps(current, indent=2, sort_keys=True) + "\n"
    with fs.open_output_stream(manifest) as stream:
        stream.write(text.encode("utf-8"))


def _slots(spark: SparkSession) -> int:
    """Executor cores the job can use at once."""
    return max(1, int(spark.sparkContext.defaultParallelism))


def _chunks(
    runs: list[Run], *, slots: int, chunk_runs: int | None, rate: Callable[[], float | None]
) -> Iterator[list[Run]]:
    """Consecutive chunks of ``runs``: ``chunk_runs`` each if given; else chunks of
    :data:`FIRST_CHUNK_PER_CORE` runs per core until a speed is measured, then ``CHUNK_S``
    seconds' worth at the speed measured so far (``rate()``: runs/s, Spark's per-job cost
    included)."""
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


#: wall seconds a chunk aims at (once a speed is measured)
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


def _run_chunk(
    frame: DataFrame,
    schema: pa.Schema,
    fs: pafs.FileSystem,
    base: str,
    index: int,
    on_write: Callable[[str, int], None] | None,
) -> int:
    """Run a chunk (its tasks write events/ and rebalances/), then add its rows to runs/;
    return how many of its runs raised."""
    import pyarrow.compute as pc

    # the chunk's one Spark job: runs the simulations. Cast back to the runs/ schema, which
    # the trip through Spark loosens (run_id not null; strings may come back large)
    rows = frame.toArrow().select(schema.names).cast(schema)
    if on_write is not None:  # the tasks have written both
        on_write("events", index)
        on_write("rebalances", index)
    _add_runs(fs, base, rows)
    if on_write is not None:
        on_write("runs", index)
    return int(pc.sum(pc.is_valid(rows.column("error"))).as_py() or 0)


def _add_runs(fs: pafs.FileSystem, base: str, rows: pa.Table) -> None:
    """``rows`` as one new file of ``OUT/runs/``, appearing at once (rename)."""
    import pyarrow.parquet as pq

    directory = f"{base}/runs"
    fs.create_dir(directory, recursive=True)
    name = uuid.uuid4().hex
    temp, final = f"{directory}/.{name}.tmp", f"{directory}/part-{name}.parquet"
    pq.write_table(rows, temp, filesystem=fs)
    fs.move(temp, final)


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
    location = out_location(out)
    fs, base = out_filesystem(location)
    if heatmap_axes is not None:
        for axis in heatmap_axes:
            if axis not in grid.axes:
                raise PipelineError(
                    f"--heatmap-axes: {axis!r} is not an axis of the grid"
                    f" ({', '.join(grid.axes) or 'it has none'})"
                )
    _check_manifest(fs, base, location, grid)
    done = _read_done(fs, base)
    _clean_unfinished(fs, base, done)
    runs = grid.runs()
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
        schema = runs_schema(grid.axis_kinds())
        spark_schema = _spark_schema(schema)
        task = partial(
            simulate_batches,
            base=dict(grid.scenario.raw),
            axis_kinds=grid.axis_kinds(),
            out=location,
            simulate=simulate,
        )
        bar = _Progress(len(runs), skipped, enabled=progress)
        sweep_started = time.monotonic()
        ran_so_far = 0

        def rate() -> float | None:
            # runs/s since the start: the first chunks also pay for starting the workers
            elapsed = time.monotonic() - sweep_started
            return ran_so_far / elapsed if ran_so_far and elapsed > 0 else None

        # every job of this sweep is in one job group: an interruption cancels them all
        group = f"groupcoord-sweep-{uuid.uuid4().hex}"
        context = spark.sparkContext

        def one_chunk(index: int, chunk: list[Run]) -> tuple[int, int]:
            assert spark is not None
            context.setJobGroup(group, f"groupcoord sweep, chunk {index}", True)
            frame = _runs_frame(spark, chunk, slots).mapInArrow(task, spark_schema)
            return len(chunk), _run_chunk(frame, schema, fs, base, index, on_write)

        from concurrent.futures import Future, ThreadPoolExecutor, wait

        in_flight: list[Future[tuple[int, int]]] = []

        def finish_oldest() -> None:
            nonlocal ran_so_far, failed
            ran, raised = in_flight[0].result()  # popped once done: a Ctrl-C here waits for it
            in_flight.pop(0)
            ran_so_far += ran
            failed += raised
            bar.advance(ran)

        try:
            with ThreadPoolExecutor(IN_FLIGHT, thread_name_prefix="sweep-chunk") as pool:
                try:
                    chunks = _chunks(todo, slots=slots, chunk_runs=chunk_runs, rate=rate)
                    for index, chunk in enumerate(chunks):
                        if len(in_flight) == IN_FLIGHT:
                            finish_oldest()
                        in_flight.append(pool.submit(one_chunk, index, chunk))
                    while in_flight:
                        finish_oldest()
                except BaseException:
                    # Ctrl-C or a failed chunk: stop the other chunk's job too, and wait for
                    # its thread (what it wrote without its runs/ row is removed on resume)
                    context.cancelJobGroup(group)
                    wait(in_flight)
                    raise
        finally:
            bar.close()
            if owned is not None:
                owned.stop()
    report_path = None
    if report:
        from groupcoord.pipeline.sweep_report import write_sweep_report

        report_path = write_sweep_report(out, grid, heatmap_axes=heatmap_axes)
    return SweepResult(
        out=location if _is_uri(location) else Path(out),
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

    fs, base = out_filesystem(out_location(out))
    table = ds.dataset(f"{base}/runs", format="parquet", filesystem=fs).to_table()
    if grid is not None:
        wanted = [r.run_id for r in grid.runs()]
        table = table.filter(pc.is_in(table.column("run_id"), value_set=_pa_strings(wanted)))
    return table.sort_by("run_id")


def _pa_strings(values: list[str]) -> pa.Array:
    import pyarrow as pa

    return pa.array(values, type=pa.string())
