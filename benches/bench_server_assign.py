"""pytest-benchmark: the server-side (KIP-848) assignors, Rust vs the Python reference.

Shapes and phases as tools/server_assignor_bench.py (which also times Kafka's own Java
assignors and writes the table in benches/results/assignors.md):
``GROUPCOORD_SERVER_BENCH_SHAPES`` (comma-separated, e.g. ``10000x1M,10000x1M-hetero``);
without it, small shapes, so that the CI run (``--benchmark-disable``) stays quick.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from server_assignor_bench import ASSIGNORS, group, parse_shape

SHAPES = os.environ.get("GROUPCOORD_SERVER_BENCH_SHAPES", "100x10k,100x10k-hetero").split(",")


def _collect() -> None:
    # before each round, outside its timing (returns None: pedantic's setup may not return)
    gc.collect()


@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize("phase", ["fresh", "leave"])
@pytest.mark.parametrize("assignor", sorted(ASSIGNORS))
@pytest.mark.parametrize("shape", SHAPES)
def test_server_assign(benchmark: Any, shape: str, assignor: str, phase: str, backend: str) -> None:
    members, topics = group(*parse_shape(shape))
    cls = ASSIGNORS[assignor]
    current = None
    if phase == "leave":
        fresh = cls(backend=backend).assign(members, topics)
        leaver = f"member-{len(members) // 2:05d}"
        members = {m: v for m, v in members.items() if m != leaver}
        current = {m: fresh[m] for m in members}
    benchmark.group = f"server-{shape}-{phase}-{assignor}"
    result = benchmark.pedantic(
        lambda: cls(backend=backend).assign(members, topics, current=current),
        setup=_collect,
        rounds=3,
        iterations=1,
    )
    assert set(result) == set(members)
