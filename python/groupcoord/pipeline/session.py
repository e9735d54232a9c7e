"""The one place a pipeline job gets its SparkSession.

The master is, in order: the ``master`` argument (``--master``), the ``SPARK_MASTER``
environment variable, else ``local[*]`` (every core of this machine). Sessions are quiet
(Spark's own log at WARN) and keep shuffles small, since the jobs' data is modest and
their cost is in the Python tasks.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ["DEFAULT_MASTER", "PipelineError", "master_url", "spark_session"]

DEFAULT_MASTER: Final = "local[*]"


class PipelineError(RuntimeError):
    """A pipeline job cannot run (missing Java or PySpark, bad input); the message says why."""


def master_url(master: str | None = None) -> str:
    """The Spark master a job uses: ``master``, else ``$SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get("SPARK_MASTER") or DEFAULT_MASTER


def spark_session(
    app_name: str, *, master: str | None = None, parallelism: int | None = None
) -> SparkSession:
    """A SparkSession for ``app_name`` (created, or the active one if it has the same master).

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
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
