"""The same inputs give the same outputs: in one process, and across processes with
different hash seeds (no set or hash order leaks into responses)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from coord_script import run

HERE = Path(__file__).parent


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_inputs_same_outputs(seed: int) -> None:
    first = run(seed)
    assert len(first) > 100
    assert run(seed) == first


def test_same_outputs_whatever_the_hash_seed() -> None:
    outputs = []
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        proc = subprocess.run(
            [sys.executable, str(HERE / "coord_script.py"), "7"],
            capture_output=True,
            text=True,
            env=env,
            cwd=HERE,
            check=True,
        )
        outputs.append(proc.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count("\n") > 100
