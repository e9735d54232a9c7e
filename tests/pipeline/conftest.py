"""Fixtures of the pipeline tests: ``spark``, ONE local SparkSession (``local[2]``) for the
whole test session (starting one takes 10-20 s), shared by every pipeline test.

Skipped, with the reason, where PySpark or Java is missing (CI installs both: the test extra
pulls PySpark, .ci/run a JRE).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the pipeline tests need PySpark (the test extra)")
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.skip("Spark needs Java 17+ (apt-get install openjdk-17-jre-headless)")
    from groupcoord.pipeline.session import spark_session

    session = spark_session(
        "groupcoord-tests", master="local[2]", config={"spark.ui.showConsoleProgress": "false"}
    )
    yield session
    session.stop()
