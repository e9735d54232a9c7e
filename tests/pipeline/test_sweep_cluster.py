"""The sweep on ``local-cluster[2,1,1024]``: two worker JVMs, each with its own executor and
Python workers, as on a real cluster (the closure, the base scenario and the package must
reach processes that share nothing with the driver but the files; the tasks write each run's
events/ and rebalances/ files into the directory the driver names, which is relative here:
the executors run in directories of their own). Run through the CLI in a
child process: a process has one SparkContext, and the test session's is ``local[2]``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="the pipeline tests need PySpark (the test extra)")

import pyarrow.dataset as ds

from groupcoord.pipeline.grid import Grid
from groupcoord.sim import run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    not os.environ.get("JAVA_HOME") and shutil.which("java") is None,
    reason="Spark needs Java 17+",
)
def test_sweep_on_a_local_cluster(tmp_path: Path) -> None:
    (tmp_path / "grid.toml").write_text(
        f'scenario = "{(REPO / "examples/scenarios/kip62-heartbeat-thread.toml").as_posix()}"\n'
        "seeds = [1, 2]\n"
        '[axes]\n"consumer.heartbeat_thread" = [true, false]\n'
    )
    env = dict(os.environ)
    # the executors' Python workers import groupcoord from the same place as this process
    package_root = str(Path(__import__("groupcoord").__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    env["PYSPARK_PYTHON"] = sys.executable
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable, "-m", "groupcoord", "sweep", "grid.toml",
            "--out", "out", "--master", "local-cluster[2,1,1024]", "--no-progress",
        ],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 runs: 4 run now" in done.stdout
    grid = Grid.from_toml(tmp_path / "grid.toml")
    rows = ds.dataset(out / "runs", format="parquet").to_table().to_pylist()
    assert len(rows) == 4
    events = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    for row in rows:
        spec = next(r for r in grid.runs() if r.run_id == row["run_id"])
        expected = run(grid.scenario.replace(**spec.overrides), spec.seed)
        assert {k: row[k] for k in expected.summary} == expected.summary
        # written by the executors' tasks, under the driver's out/, not their own directories
        mine = events.filter(ds.field("run_id") == row["run_id"])
        assert mine.num_rows == expected.events.num_rows > 0, row["run_id"]
    assert (out / "report" / "index.html").exists()
