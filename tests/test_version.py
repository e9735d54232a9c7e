"""`groupcoord --version` and `groupcoord.__version__` say the version the package is built as."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import groupcoord

ROOT = Path(__file__).resolve().parents[1]


def test_version_matches_pyproject_and_cargo() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    assert groupcoord.__version__ == pyproject["project"]["version"]
    assert groupcoord.__version__ == cargo["package"]["version"]


def test_cli_prints_the_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"groupcoord {groupcoord.__version__}\n"
