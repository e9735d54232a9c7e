"""The one place a pipeline job gets its SparkSession.

The master is, in order: the ``master`` argument (``--master``), the ``SPARK_MASTER``
environment variable, else ``local[*]`` (every core of this machine). Sessions are quiet
(Spark's own log at WARN) and keep shuffles small, since the jobs' data is modest and
their cost is in the Python tasks.

Local sessions start their JVMs with ``-XX:-DontCompileHugeMethods`` (:data:`LOCAL_JVM_OPTIONS`):
HotSpot leaves a method of more than 8,000 bytes of bytecode to its interpreter, and the
method Spark generates for the per-line parse of ``groupcoord analyze`` is larger (about
11,500 bytes), so without the flag every log line runs interpreted (2x the CPU time, see
benches/results/analyze.md). On a cluster the executors are started by the cluster manager:
pass ``--conf spark.executor.extraJavaOptions=-XX:-DontCompileHugeMethods`` there.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "LOCAL_JVM_OPTIONS",
    "PipelineError",
    "jvm_config",
    "master_url",
    "spark_session",
]

DEFAULT_MASTER: Final = "local[*]"

#: JVM options of the driver (and of local-cluster executors) in local mode: compile the
#: generated methods above HotSpot's 8,000-byte limit too (see the module's docstring)
LOCAL_JVM_OPTIONS: Final = "-XX:-DontCompileHugeMethods"

_JAVA_OPTIONS_KEYS: Final = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")


class PipelineError(RuntimeError):
    """A pipeline job cannot run (missing Java or PySpark, bad input); the message says why."""


def master_url(master: str | None = None) -> str:
    """The Spark master a job uses: ``master``, else ``$SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


def jvm_config(url: str, config: Mapping[str, str] | None = None) -> dict[str, str]:
    """``config`` with :data:`LOCAL_JVM_OPTIONS` added to the driver's and the executors'
    ``extraJavaOptions`` when ``url`` is a local master (``local``, ``local[N]``,
    ``local-cluster[...]``), after any options ``config`` already gives; unchanged
    otherwise."""
    merged = dict(config or {})
    if not url.startswith("local"):
        return merged
    for key in _JAVA_OPTIONS_KEYS:
        given = merged.get(key, "")
        if LOCAL_JVM_OPTIONS not in given.split():
            merged[key] = f"{given} {LOCAL_JVM_OPTIONS}".strip()
    return merged


def spark_session(
    app_name: str,
    *,
    master: str | None = None,
    parallelism: int | None = None,
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for ``app_name`` (created, or the active one if it has the same master).

    ``config``: more Spark settings for a new session (``{"spark.ui.showConsoleProgress":
    "false"}``). JVM options take effect only when this call starts the JVM (the first
    session of a Python process); a local master adds :data:`LOCAL_JVM_OPTIONS` to them.

    Raises :class:`PipelineError` when PySpark is not installed or Java cannot be found.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise PipelineError(
            "the pipeline needs PySpark: pip install 'groupcoord[pipeline]'"
        ) from None
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        raise PipelineError(
            "Spark needs Java 17 or later and none was found (no JAVA_HOME, no java on PATH); "
            "on Debian: apt-get install openjdk-17-jre-headless"
        )
    url = master_url(master)
    if url.startswith("local"):
        # local workers run this interpreter (the one with groupcoord and pyarrow), not
        # whatever "python3" is first on PATH; on a cluster PYSPARK_PYTHON or
        # spark.archives (a packed venv) say which Python the executors run
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName(app_name)
        .master(url)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(parallelism or 8))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.python.worker.reuse", "true")
    )
    if parallelism is not None:
        builder = builder.config("spark.default.parallelism", str(parallelism))
    for key, value in jvm_config(url, config).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
