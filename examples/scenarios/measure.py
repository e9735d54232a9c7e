"""Run every example scenario and each variant its header documents; print the README's table.

    PYTHONPATH=python python examples/scenarios/measure.py

The variants are the ``groupcoord simulate ... --set key=value`` commands in each file's
header comments (tests/sim/test_examples.py checks they are the ones it runs). Wall time is
one run without the invariant checks, on whatever machine runs this.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from groupcoord.sim import Scenario, run

HERE = Path(__file__).resolve().parent
SEED = 1

COLUMNS = (
    "scenario",
    "variant",
    "rebalances",
    "expired (session)",
    "expired (poll)",
    "unavailable partition-s",
    "duplicates",
    "stop-the-world ms",
    "p99 lag ms",
    "moved / revoked / lost",
    "wall s",
)


def variants(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(label, overrides) of each ``groupcoord simulate`` command in the header."""
    header: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("#").strip())
    text = re.sub(r"\\\n\s*", " ", "\n".join(header))
    out: list[tuple[str, dict[str, Any]]] = []
    for line in text.splitlines():
        if not line.startswith("groupcoord simulate "):
            continue
        words = shlex.split(line)
        sets = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
        overrides = {}
        for item in sets:
            key, _, value = item.partition("=")
            overrides[key] = tomllib.loads(f"v = {value}")["v"]
        out.append((", ".join(f"`{s}`" for s in sets) or "as is", overrides))
    return out


def main() -> None:
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "|".join("---" for _ in COLUMNS) + "|")
    for path in sorted(HERE.glob("*.toml")):
        base = Scenario.from_toml(path)
        for label, overrides in variants(path):
            scenario = base.replace(**overrides) if overrides else base
            started = time.perf_counter()
            result = run(scenario, SEED)
            wall = time.perf_counter() - started
            s = result.summary
            rows = result.rebalances.to_pylist()[1:]
            moved = sum(r["partitions_moved"] for r in rows)
            revoked = sum(r["partitions_revoked"] for r in rows)
            lost = sum(r["partitions_lost"] for r in rows)
            cells = (
                path.stem,
                label,
                s["rebalances"],
                s["members_expired_session"],
                s["members_expired_poll"],
                f"{s['unavailable_partition_seconds']:.1f}",
                s["duplicates"],
                s["stop_the_world_ms"],
                s["p99_lag_ms"],
                f"{moved} / {revoked} / {lost}",
                f"{wall:.2f}",
            )
            print("| " + " | ".join(str(c) for c in cells) + " |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
