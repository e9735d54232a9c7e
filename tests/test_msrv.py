"""Cargo.toml's ``rust-version`` is the real minimum: the highest ``rust-version`` any package
in Cargo.lock declares (derived with ``cargo metadata``, since older toolchains are not
installed here to try), and the README's set-up says the same."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cargo() -> str:
    # .ci/run puts rustup's ~/.cargo/bin on PATH when cargo is not already there
    found = shutil.which("cargo") or shutil.which("cargo", path=os.path.expanduser("~/.cargo/bin"))
    if found is None:
        pytest.skip("no cargo on PATH or in ~/.cargo/bin (the Rust toolchain builds the core)")
    return found


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def locked_packages() -> list[dict[str, object]]:
    done = subprocess.run(
        [_cargo(), "metadata", "--format-version", "1", "--locked", "--offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    packages: list[dict[str, object]] = json.loads(done.stdout)["packages"]
    return packages


def declared() -> str:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    version: str = cargo["package"]["rust-version"]
    return version


def test_rust_version_is_the_highest_a_locked_package_needs() -> None:
    needs = {
        f"{p['name']} {p['version']}": str(p["rust_version"])
        for p in locked_packages()
        if p["source"] is not None and p["rust_version"]
    }
    highest = max(needs.values(), key=_version)
    too_new = {name: v for name, v in needs.items() if _version(v) > _version(declared())}
    assert not too_new, f"Cargo.toml says rust-version {declared()}, but these need more: {too_new}"
    assert _version(declared()) == _version(highest), (
        f"Cargo.toml says {declared()}; the locked packages need only {highest}"
    )


def test_the_readme_states_the_same_minimum() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = re.findall(r"Rust\s+toolchain\s+\(>= ([0-9.]+)\)", readme)
    assert stated == [declared()]
