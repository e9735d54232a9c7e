"""Reproduce kafka-python 3.0.12 losing a group leader's assignment (see
tests/kafka_python_consumer.py for the mechanism), against ``groupcoord serve`` and
against Apache Kafka.

Run by hand (Kafka needs mvn and Java 17+; the dev venv has kafka-python)::

    PYTHONPATH=python .venv/bin/python tools/kafka_python_lost_assignment.py --runs 6
    PYTHONPATH=python .venv/bin/python tools/kafka_python_lost_assignment.py --metadata-first

Each run: a fresh group, one consumer of a 2-partition topic (no initial rebalance delay)
polling every ``--poll-ms`` (5) until it owns both partitions or 12 s pass. A lost run
ends with no partitions, ``need_rejoin()`` False, its join task finished and its state
still REBALANCING. ``--metadata-first`` fetches the topic's metadata before subscribing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from kafka import KafkaConsumer  # noqa: E402

TOPIC = "t"


@contextmanager
def serve() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--port", "0", "--memory",
         "--log-level", "warning", "--group-initial-rebalance-delay-ms", "0",
         "--topic", f"{TOPIC}:2"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        match = re.fullmatch(r"groupcoord listening on (.+):(\d+)\n", proc.stdout.readline())
        assert match, "groupcoord serve did not start"
        yield f"{match.group(1)}:{match.group(2)}"
    finally:
        proc.terminate()
        proc.wait()


@contextmanager
def kafka(version: str) -> Iterator[str]:
    from kafka_broker import running_broker

    directory = Path(tempfile.mkdtemp(prefix="kp-lost-")) / "broker"
    with running_broker(version, directory, {TOPIC: 2}) as broker:
        yield broker.bootstrap


def one_run(bootstrap: str, group: str, poll_ms: int, metadata_first: bool) -> str:
    settings = dict(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
        session_timeout_ms=6_000, heartbeat_interval_ms=500,
    )  # fmt: skip
    consumer = KafkaConsumer(**settings)
    try:
        if metadata_first:
            consumer.partitions_for_topic(TOPIC)
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 12
        while time.monotonic() < deadline and len(consumer.assignment()) < 2:
            consumer.poll(timeout_ms=poll_ms)
        coordinator = consumer._coordinator
        task = coordinator._join_task
        owned = sorted(tp.partition for tp in consumer.assignment())
        return (
            f"owns {owned}, need_rejoin {coordinator.need_rejoin()}, join task "
            f"{'none' if task is None else 'done' if task.is_done else 'pending'}, "
            f"state {coordinator.state}"
        )
    finally:
        consumer.close(autocommit=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--poll-ms", type=int, default=5)
    parser.add_argument("--metadata-first", action="store_true")
    parser.add_argument("--kafka-version", default="4.4.0")
    args = parser.parse_args()
    targets: list[tuple[str, Callable[[], AbstractContextManager[str]]]] = [
        ("groupcoord serve", serve),
        (f"Apache Kafka {args.kafka_version}", lambda: kafka(args.kafka_version)),
    ]
    for name, target in targets:
        with target() as bootstrap:
            lost = 0
            for run in range(args.runs):
                line = one_run(bootstrap, f"lost-{run}", args.poll_ms, args.metadata_first)
                lost += not line.startswith("owns [0, 1]")
                print(f"{name}, run {run}: {line}", flush=True)
            print(f"{name}: {lost} of {args.runs} runs lost their assignment", flush=True)


if __name__ == "__main__":
    main()
