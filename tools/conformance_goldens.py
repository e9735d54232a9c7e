"""Record the conformance catalogue's golden responses from Apache Kafka.

Runs every case of ``tests/conformance/conformance_cases.py`` against a fresh single-node
Kafka (``tools/kafka_broker.py``, configured like ``groupcoord serve`` in the test: same
group limits, no initial rebalance delay, no auto-created topics), normalizes the answers
(``conformance_compare.normalize``) and writes them to
``tests/conformance/goldens/kafka-VERSION.json``::

    PYTHONPATH=python .venv/bin/python tools/conformance_goldens.py            # 4.4.0 and 3.9.2
    PYTHONPATH=python .venv/bin/python tools/conformance_goldens.py --version 4.4.0
    PYTHONPATH=python .venv/bin/python tools/conformance_goldens.py --readme   # README section
    PYTHONPATH=python .venv/bin/python tools/conformance_goldens.py --against-serve

Each version runs twice and the two recordings must be equal: a case whose answers vary
between runs of the same Kafka would make a golden nobody can regenerate. ``--readme``
rewrites README.md's "Where we answer differently from Kafka" list from
``tests/conformance/differences.toml``. ``--against-serve`` runs the catalogue against
``groupcoord serve`` and prints every difference from the goldens, accepted or not (what
``tests/conformance/test_conformance.py`` checks).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "conformance"), str(ROOT / "tests"), str(ROOT / "tools")]

from conformance_cases import CASES, KAFKA_PROPERTIES, SERVE_ARGS, SHARED_TOPICS  # noqa: E402
from conformance_compare import (  # noqa: E402
    GOLDEN_DIR,
    README_END,
    README_START,
    compare_all,
    load_differences,
    normalize,
    readme_section,
    unaccepted,
)
from conformance_driver import run_catalogue  # noqa: E402
from kafka_broker import Broker  # noqa: E402

VERSIONS = ("4.4.0", "3.9.2")


def record(version: str) -> dict[str, list[dict[str, object]]]:
    # each run on a fresh broker: the cases' group and topic names are fixed
    runs = [_record_once(version) for _ in range(2)]
    first, second = runs
    for i, run in enumerate(runs):  # for looking into an unstable case
        Path(tempfile.gettempdir(), f"conformance-kafka-{version}-run{i}.json").write_text(
            json.dumps(run, indent=1)
        )
    unstable = [name for name in first if first[name] != second[name]]
    if unstable:
        for name in unstable:
            for a, b in zip(first[name], second[name], strict=False):
                if a != b:
                    print(f"{name}: {a}\n   vs {b}", file=sys.stderr)
                    break
        raise SystemExit(f"kafka {version}: answers differ between two runs in {unstable}")
    failed = [name for name, recs in first.items() if any(r["step"] == "!failed" for r in recs)]
    if failed:
        print(f"kafka {version}: cases that failed (recorded as such): {failed}", file=sys.stderr)
    return first


def _record_once(version: str) -> dict[str, list[dict[str, object]]]:
    with tempfile.TemporaryDirectory(prefix=f"conformance-kafka-{version}-") as tmp:
        broker = Broker(version, Path(tmp) / "broker", properties=KAFKA_PROPERTIES)
        try:
            broker.start()
            broker.wait_for_group_coordinator()
            recorded = run_catalogue(broker.bootstrap, CASES, topics=SHARED_TOPICS)
        finally:
            broker.stop()
    return {name: normalize(records) for name, records in recorded.items()}


def write_golden(version: str, cases: dict[str, list[dict[str, object]]]) -> Path:
    GOLDEN_DIR.mkdir(exist_ok=True)
    path = GOLDEN_DIR / f"kafka-{version}.json"
    doc = {
        "kafka_version": version,
        "generated_by": "tools/conformance_goldens.py",
        "broker_properties": KAFKA_PROPERTIES,
        "cases": cases,
    }
    path.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    return path


def load_golden(version: str) -> dict[str, list[dict[str, object]]]:
    doc = json.loads((GOLDEN_DIR / f"kafka-{version}.json").read_text())
    cases: dict[str, list[dict[str, object]]] = doc["cases"]
    return cases


def update_readme() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    start, end = text.index(README_START), text.index(README_END) + len(README_END)
    section = readme_section(load_differences(), VERSIONS)
    readme.write_text(text[:start] + section + text[end:])


def against_serve() -> int:
    from serve_process import ServerProcess, serve_args

    server = ServerProcess(serve_args(SERVE_ARGS))
    try:
        ours = run_catalogue(server.bootstrap, CASES, topics=SHARED_TOPICS)
    finally:
        server.stop()
    diffs = load_differences()
    status = 0
    for version in VERSIONS:
        differences = compare_all(version, load_golden(version), ours)
        left = unaccepted(version, differences, diffs.accepted)
        print(f"== kafka {version}: {len(differences)} differences, {len(left)} not accepted")
        for d in left:
            print(f"  {d}")
        status |= bool(left)
    for a in diffs.accepted:
        if not a.used:
            print(f"== entry {a.id} accepts nothing any more")
            status = 1
    return status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", action="append", choices=VERSIONS)
    parser.add_argument("--readme", action="store_true", help="rewrite README's section only")
    parser.add_argument("--against-serve", action="store_true", help="compare groupcoord serve")
    args = parser.parse_args()
    if args.readme:
        update_readme()
        return
    if args.against_serve:
        sys.exit(against_serve())
    for version in args.version or VERSIONS:
        path = write_golden(version, record(version))
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
