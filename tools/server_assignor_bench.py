"""Server-side (KIP-848) assignors: groupcoord's Rust core and Python reference against
Kafka's own ``UniformAssignor`` and ``RangeAssignor``, measured in one run on one machine.

    python tools/server_assignor_bench.py                    # 10,000 members x 1M partitions
    python tools/server_assignor_bench.py --shapes 1000x100k --runs 3

Shapes: ``MEMBERSxPARTITIONS`` with 1,000 partitions per topic (1M: 1,000 topics) or, below
100k partitions, 10 topics; ``-hetero``: member ``i`` subscribes to the topics ``t`` with
``t % 4 != i % 4`` (four distinct subscriptions, each member 3/4 of the topics). Phases:
``fresh`` (no current assignment) and ``leave`` (member ``MEMBERS // 2`` left; the others
hold what the same implementation gave them fresh), and ``leave, kept target``: the same
through ``GroupTarget``, which keeps the target inside the extension between calls, as a
coordinator holds its group's target (Kafka's timing is its ``leave`` for both).

groupcoord is timed through its public API (``UniformAssignor().assign(members, topics,
current=...)``): reading the members and the current assignment from Python objects and
building the ``{member: {topic: [partitions]}}`` result are inside the timing. Kafka's
assignors are timed by tools/java/ServerAssignorBench.java (javac against the
kafka-group-coordinator jar Maven resolves, as tools/kafka_broker.py does; JIT warm-up runs
first), with the GroupSpec built outside the timing, as the coordinator builds it.
``--heap server`` times groupcoord in a process that keeps the heap pages it frees, as
``groupcoord serve`` does (:mod:`groupcoord.server.heap`) and as Kafka's JVM keeps its heap;
by default the Python process is left as Python starts it. Prints a markdown table for
benches/results/assignors.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kafka_broker

from groupcoord.assignors.server import (
    GroupTarget,
    RangeAssignor,
    ServerAssignor,
    ServerMember,
    UniformAssignor,
)
from groupcoord.server.heap import keep_freed_heap

KAFKA_VERSION = "4.4.0"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "ServerAssignorBench.java"
ASSIGNORS: dict[str, type[ServerAssignor]] = {"uniform": UniformAssignor, "range": RangeAssignor}
BUCKETS = 4


def parse_shape(name: str) -> tuple[int, int, int, int]:
    """``10000x1M-hetero`` -> (members, topics, partitions per topic, buckets)."""
    base, _, kind = name.partition("-")
    members, partitions = base.split("x")
    total = int(partitions.replace("k", "000").replace("M", "000000"))
    per_topic = 1000 if total >= 100_000 else total // 10
    return int(members), total // per_topic, per_topic, BUCKETS if kind == "hetero" else 0


def group(
    members: int, topics: int, per_topic: int, buckets: int
) -> tuple[dict[str, ServerMember], dict[str, int]]:
    names = [f"topic-{t:04d}" for t in range(topics)]
    # one ServerMember topics object per distinct subscription, as a coordinator interns them
    subscriptions = {
        b: frozenset(n for t, n in enumerate(names) if b < 0 or t % buckets != b)
        for b in (range(buckets) if buckets else [-1])
    }
    return (
        {
            f"member-{m:05d}": ServerMember(subscriptions[m % buckets if buckets else -1])
            for m in range(members)
        },
        dict.fromkeys(names, per_topic),
    )


def timed(call: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1e3)
        gc.unfreeze()
    return out


def run_python(shape: str, assignor: str, backend: str, runs: int) -> dict[str, list[float]]:
    members, topics = group(*parse_shape(shape))
    cls = ASSIGNORS[assignor]
    fresh = cls(backend=backend).assign(members, topics)  # also the warm-up
    results = {"fresh": timed(lambda: cls(backend=backend).assign(members, topics), runs)}
    leaver = f"member-{len(members) // 2:05d}"
    rest = {m: v for m, v in members.items() if m != leaver}
    current = {m: fresh[m] for m in rest}
    results["leave"] = timed(
        lambda: cls(backend=backend).assign(rest, topics, current=current), runs
    )
    if backend == "rust":
        # what a coordinator does: the group's target kept between computations
        kept: list[float] = []
        for _ in range(runs):
            target = GroupTarget(cls(backend=backend))
            target.assign(members, topics)
            kept += timed(lambda t=target: t.assign(rest, topics), 1)  # type: ignore[misc]
        results["leave, kept target"] = kept
    return results


def run_java(
    shape: str, assignor: str, warmup: int, runs: int, build: Path
) -> dict[str, list[float]]:
    classpath = kafka_broker.classpath(KAFKA_VERSION)
    if not (build / "ServerAssignorBench.class").exists():
        subprocess.run(["javac", "-d", str(build), "-cp", classpath, str(JAVA_SOURCE)], check=True)
    members, topics, per_topic, buckets = parse_shape(shape)
    out = subprocess.run(
        [
            "java", "-Xmx6g", "-cp", f"{build}{os.pathsep}{classpath}", "ServerAssignorBench",
            assignor, str(members), str(topics), str(per_topic), str(buckets),
            str(warmup), str(runs),
        ],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return {
        line["phase"]: line["ms"]
        for line in map(json.loads, out.stdout.splitlines())
        if line.get("phase")
    }


def cell(times: list[float] | None) -> str:
    if not times:
        return "—"
    return f"{min(times):,.0f} / {statistics.median(times):,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="10000x1M,10000x1M-hetero")
    parser.add_argument("--assignors", default="uniform,range")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--java-warmup", type=int, default=5)
    parser.add_argument("--reference-runs", type=int, default=1, help="0: skip the reference")
    parser.add_argument("--no-java", action="store_true")
    parser.add_argument(
        "--heap",
        choices=("default", "server"),
        default="default",
        help="server: keep freed heap pages as `groupcoord serve` does (groupcoord.server.heap)",
    )
    args = parser.parse_args()
    if args.heap == "server" and not keep_freed_heap():
        parser.error("--heap server: this C library has no mallopt")
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as build:
        for shape in args.shapes.split(","):
            for assignor in args.assignors.split(","):
                rust = run_python(shape, assignor, "rust", args.runs)
                reference = (
                    run_python(shape, assignor, "python", args.reference_runs)
                    if args.reference_runs
                    else {}
                )
                java = (
                    {}
                    if args.no_java
                    else run_java(shape, assignor, args.java_warmup, args.runs, Path(build))
                )
                for phase in ("fresh", "leave", "leave, kept target"):
                    # Kafka's timing takes the current target as the coordinator holds it
                    java_phase = "leave" if phase.startswith("leave") else phase
                    r, ref, j = rust[phase], reference.get(phase), java.get(java_phase)
                    speedup = f"{statistics.median(j) / statistics.median(r):.1f}x" if j else "—"
                    ref_ratio = (
                        f"{statistics.median(ref) / statistics.median(r):.1f}x" if ref else "—"
                    )
                    rows.append(
                        f"| {shape} | {phase} | {assignor} | {cell(r)} | {cell(j)} | {speedup}"
                        f" | {cell(ref)} | {ref_ratio} |"
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
    load_after = os.getloadavg()
    print(
        "| shape | phase | assignor | groupcoord rust | Kafka "
        f"{KAFKA_VERSION} (Java) | Java ÷ rust | groupcoord reference | reference ÷ rust |"
    )
    print("|:--|:--|:--|--:|--:|--:|--:|--:|")
    print("\n".join(rows))
    java_version = subprocess.run(
        ["java", "-version"], capture_output=True, text=True
    ).stderr.splitlines()[0]
    print(
        f"\nTimes in ms, min / median of {args.runs} runs (reference: {args.reference_runs});"
        f" Python {platform.python_version()}, {java_version}, {platform.system()}"
        f" {platform.machine()}, {os.cpu_count()} CPUs; load average"
        f" {load_before[0]:.2f} before, {load_after[0]:.2f} after; Python heap: {args.heap}."
    )


if __name__ == "__main__":
    main()
