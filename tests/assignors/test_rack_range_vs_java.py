"""Rack-aware range (KIP-881) against Java's own ``RangeAssignor`` from kafka-clients.

Random small groups with member racks and replica racks go through both; the assignments
must be identical, partition for partition (both backends). Java's rack-aware range is
deterministic given the member order, so ours copies it step for step.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from groupcoord import RangeAssignor, Subscription, TopicPartition
from kafka_oracle import KAFKA_LATEST, kafka_broker_module

pytestmark = pytest.mark.kafka

ORACLE = Path(__file__).resolve().parent / "java" / "RackRangeOracle.java"
Case = tuple[
    dict[str, int], dict[str, tuple[str | None, list[str]]], dict[TopicPartition, frozenset[str]]
]


def random_cases(count: int, seed: int) -> list[Case]:
    rnd = random.Random(seed)
    cases: list[Case] = []
    for _ in range(count):
        topics = {f"t{i}": rnd.randint(1, 12) for i in range(rnd.randint(1, 4))}
        members: dict[str, tuple[str | None, list[str]]] = {}
        for m in range(rnd.randint(1, 7)):
            subscribed = [t for t in topics if rnd.random() < 0.7] or [next(iter(topics))]
            members[f"m{m}"] = (rnd.choice(["r0", "r1", "r2", None]), subscribed)
        racks = {
            TopicPartition(t, p): frozenset(
                r for r in ("r0", "r1", "r2", "r3") if rnd.random() < 0.45
            )
            for t, n in topics.items()
            for p in range(n)
            if rnd.random() < 0.9
        }
        cases.append((topics, members, racks))
    return cases


def as_oracle_input(cases: list[Case]) -> str:
    lines = []
    for topics, members, racks in cases:
        lines += [f"T {t} {n}" for t, n in topics.items()]
        lines += [
            f"P {tp.topic} {tp.partition} {','.join(sorted(r)) or '-'}" for tp, r in racks.items()
        ]
        lines += [f"M {m} {rack or '-'} {','.join(subs)}" for m, (rack, subs) in members.items()]
        lines.append("END")
    return "\n".join(lines)


def test_rack_aware_range_matches_javas(tmp_path: Path) -> None:
    classpath = kafka_broker_module().classpath(KAFKA_LATEST)
    subprocess.run(["javac", "-d", str(tmp_path), "-cp", classpath, str(ORACLE)], check=True)
    cases = random_cases(300, seed=881)
    java = subprocess.run(
        ["java", "-cp", f"{tmp_path}:{classpath}", "RackRangeOracle"],
        input=as_oracle_input(cases),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(java) == len(cases)
    for (topics, members, racks), expected in zip(cases, java, strict=True):
        subscriptions = {m: Subscription(subs, rack_id=rack) for m, (rack, subs) in members.items()}
        for backend in ("rust", "python"):
            result = RangeAssignor(backend=backend).assign(
                topics, subscriptions, partition_racks=racks
            )
            ours = "".join(
                f"{m}="
                + ",".join(sorted(f"{tp.topic}:{tp.partition}" for tp in result[m].partitions))
                + ";"
                for m in sorted(result)
            )
            assert ours == expected, (backend, topics, members, racks)
