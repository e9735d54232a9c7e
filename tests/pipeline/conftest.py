"""Fixtures of the pipeline tests: ONE local SparkSession for the whole test session
(starting one takes 10-20 s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.pipeline.session import spark_session


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    yield spark_session("groupcoord-tests", master="local[2]")
