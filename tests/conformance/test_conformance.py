"""Conformance with Apache Kafka, field by field, over the wire.

The catalogue (``conformance_cases.py``) runs against ``groupcoord serve`` once per test
session, configured like the brokers the goldens were recorded from; every answer is
compared with Kafka 4.4.0's and 3.9.2's (``goldens/``, written by
``tools/conformance_goldens.py``) after the normalization of ``conformance_compare``. A
difference fails the test unless ``differences.toml`` accepts it, with its reason; an
entry that no longer accepts anything fails too (fixed differences leave the file). The
README's "Where we answer differently from Kafka" list is generated from that file.

``test_goldens_are_what_kafka_answers`` (marked ``kafka``) replays the catalogue against
a live Kafka 4.4.0 and checks that the committed golden is still exactly its answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conformance_cases import CASES, KAFKA_PROPERTIES, SERVE_ARGS, SHARED_TOPICS
from conformance_compare import (
    GOLDEN_DIR,
    NORMALIZED_FIELDS,
    compare,
    compare_all,
    load_differences,
    normalize,
    readme_section,
    unaccepted,
)
from conformance_driver import run_catalogue

from kafka_oracle import KAFKA_3, KAFKA_LATEST
from serve_process import ServerProcess, serve_args

VERSIONS = (KAFKA_LATEST, KAFKA_3)
README = Path(__file__).resolve().parents[2] / "README.md"


def golden(version: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((GOLDEN_DIR / f"kafka-{version}.json").read_text())
    return doc


@pytest.fixture(scope="module")
def ours() -> dict[str, list[dict[str, Any]]]:
    server = ServerProcess(serve_args(SERVE_ARGS))
    try:
        return run_catalogue(server.bootstrap, CASES, topics=SHARED_TOPICS)
    finally:
        server.stop()


def test_goldens_cover_the_catalogue_and_were_recorded_with_these_settings() -> None:
    for version in VERSIONS:
        doc = golden(version)
        assert doc["kafka_version"] == version
        assert doc["broker_properties"] == KAFKA_PROPERTIES, (
            "the broker settings changed since the goldens were recorded: "
            "run tools/conformance_goldens.py"
        )
        assert sorted(doc["cases"]) == sorted(CASES), (
            "the catalogue changed since the goldens were recorded: "
            "run tools/conformance_goldens.py"
        )


def test_every_case_ran_to_its_end_here(ours: dict[str, list[dict[str, Any]]]) -> None:
    failed = {
        name: r["error"] for name, recs in ours.items() for r in recs if r["step"] == "!failed"
    }
    assert not failed


def test_every_difference_from_kafka_is_accepted_with_a_reason(
    ours: dict[str, list[dict[str, Any]]],
) -> None:
    diffs = load_differences()
    left: list[str] = []
    for version in VERSIONS:
        found = compare_all(version, golden(version)["cases"], ours)
        left += [f"kafka {version}: {d}" for d in unaccepted(version, found, diffs.accepted)]
    assert not left, (
        f"{len(left)} answers differ from Kafka's and differences.toml accepts none of "
        "them (fix the server, or add an entry with its reason):\n" + "\n".join(left[:60])
    )
    stale = [a.id for a in diffs.accepted if a.used == 0]
    assert not stale, f"differences.toml entries that accept nothing any more: {stale}"


def test_the_normalization_rules_are_the_documented_ones() -> None:
    assert load_differences().normalized.keys() == NORMALIZED_FIELDS.keys()


def test_readme_lists_exactly_the_accepted_differences() -> None:
    section = readme_section(load_differences(), VERSIONS)
    assert section in README.read_text(), (
        "README's 'Where we answer differently from Kafka' list is out of date: "
        "run tools/conformance_goldens.py --readme"
    )


def test_the_comparison_catches_a_changed_answer() -> None:
    # the comparison itself: a changed error code, a missing step and a reordered member
    # list (not a difference) on a real golden case
    kafka = golden(KAFKA_LATEST)["cases"]["rebalance-in-progress"]
    changed = json.loads(json.dumps(kafka))
    heartbeat = next(r for r in changed if r["step"] == "a-heartbeat")
    heartbeat["response"]["error_code"] = "NONE"
    joined = next(r for r in changed if r["step"] == "a-rejoin")
    joined["response"]["members"].reverse()
    del changed[-1]
    found = {d.path for d in compare("rebalance-in-progress", kafka, changed)}
    assert found == {"a-heartbeat.response.error_code", kafka[-1]["step"]}


@pytest.mark.kafka
def test_goldens_are_what_kafka_answers(kafka_broker_factory: Callable[..., Any]) -> None:
    # a broker of its own: the cases' group and topic names are fixed
    broker = kafka_broker_factory(KAFKA_LATEST, KAFKA_PROPERTIES)
    live = {
        n: normalize(r)
        for n, r in run_catalogue(broker.bootstrap, CASES, topics=SHARED_TOPICS).items()
    }
    recorded = golden(KAFKA_LATEST)["cases"]
    changed = [n for n in CASES if live[n] != recorded[n]]
    assert not changed, (
        f"Kafka {KAFKA_LATEST} no longer answers as recorded in {changed}: "
        "run tools/conformance_goldens.py and review the change"
    )
