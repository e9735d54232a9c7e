"""Reproduce kafka-python 3.0.12's leader stall against Apache Kafka (no groupcoord serve).

Run by hand (needs mvn and Java 17+; the dev venv has kafka-python)::

    PYTHONPATH=python .venv/bin/python tools/kafka_python_stall.py --attempts 40

Starts a single-node Kafka 4.4.0 (tools/kafka_broker.py), creates ``orders`` with 12
partitions and, in a fresh group per attempt, starts three kafka-python consumers
(tests/interop/agent_kafka_python.py: range assignor, session 4 s, heartbeat 400 ms,
no initial rebalance delay: the settings of the interop tests) and waits until they own
the 12 partitions between them. An attempt fails when that does not happen within 40 s;
the script then prints the stalled member's last log lines and stops. What it shows
(at attempt 12 of one run here; 1 run in 14 of the interop scenario, 3 in 14 against
``groupcoord serve`` side by side): a member
logs "Elected group leader -- performing partition assignments using range" and then
nothing more, no SyncGroup outcome, no heartbeat, until the broker expires it. So the
stall is the client's; tests/interop/test_kafka_python.py's ``with_one_retry`` cites this.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "interop"), str(ROOT / "tools")]

from helpers import ConsumerGroup, partitions, wait_owned_exactly_once  # noqa: E402
from kafka_broker import running_broker  # noqa: E402

TOPIC = "orders"
ELECTED = "Elected group leader"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=40)
    parser.add_argument("--version", default="4.4.0")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kafka-python-stall-"))
    with running_broker(args.version, work / "broker", {TOPIC: 12}) as broker:
        for attempt in range(args.attempts):
            logs = work / f"attempt-{attempt}"
            logs.mkdir()
            with ConsumerGroup(
                "kafka-python", broker.bootstrap, f"stall-{attempt}", [TOPIC], logs
            ) as group:
                members = [group.spawn() for _ in range(3)]
                started = time.monotonic()
                try:
                    wait_owned_exactly_once(
                        members, partitions(TOPIC, 12), [4, 4, 4], 40, "3 own 12"
                    )
                except AssertionError as e:
                    print(f"attempt {attempt}: {str(e)[:300]}")
                    for m in members:
                        lines = m.stderr().splitlines()
                        if any(ELECTED in line for line in lines[-3:]) and not m.owned():
                            print(f"--- {m.name}, silent since electing itself leader:")
                            print("\n".join(lines[-6:]))
                    print(f"logs: {logs}")
                    return
                print(f"attempt {attempt}: formed in {time.monotonic() - started:.1f} s")
        print(f"no stall in {args.attempts} attempts")


if __name__ == "__main__":
    main()
