"""The README's simulator section: its Python example runs as written and its shell commands
name files that exist."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Simulator\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_python_example_runs_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", section(), re.S)
    assert blocks, "the Simulator section has a Python example"
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        # 500 records per poll rebalance and time out; 50 do not
        big, small = (line.split() for line in lines[:2])
        assert big[0] == "500" and int(big[1]) > 1 and int(big[2]) > 0
        assert small == ["50", "1", "0"]


def test_shell_examples_name_existing_scenarios() -> None:
    for path in re.findall(r"groupcoord simulate (\S+\.toml)", section()):
        assert (ROOT / path).is_file(), path
