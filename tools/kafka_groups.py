"""Regenerate the real-Kafka fixtures of tests/pipeline/fixtures/ (run by hand; needs mvn,
Java 17+ and the dev venv with kafka-python)::

    PYTHONPATH=python .venv/bin/python tools/kafka_groups.py --version 4.4.0
    PYTHONPATH=python .venv/bin/python tools/kafka_groups.py --version 3.9.2

Starts a real broker (tools/kafka_broker.py: jars from Maven Central, single-node KRaft on
127.0.0.1), runs two consumer groups of kafka-python members (child processes) through a
script of joins, crashes (SIGKILL: the broker expires them after session.timeout.ms),
explicit leaves (close(): LeaveGroup), restarts and a poll timeout (a member stops polling
past max.poll.interval.ms; its heartbeat thread sends LeaveGroup), stops the broker, kills
what is left and writes

- ``kafka-<version>-server.log``: the broker's whole server.log;
- ``kafka-<version>-truth.json``: per group, counted by this script from what it did and
  from the members' own callbacks (never from the log): ``rebalances`` (distinct
  generations whose SyncGroup succeeded at a member), ``max_generation``, ``crashes``, ``leaves``
  (close() + poll timeouts), ``poll_timeouts``, and the driver's ``expected_rebalances``.

``--serve`` runs the same script against ``groupcoord serve --event-log`` instead of Kafka
and writes ``serve-event-log.jsonl`` and ``serve-truth.json``.

Each step waits until every live member holds the same new generation, so no two
rebalances overlap and every generation the broker stabilizes reaches the members.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_broker import Broker

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "pipeline" / "fixtures"
MEMBER = Path(__file__).resolve().parent / "kafka_member.py"


class Member:
    def __init__(self, group: Group, name: str, stall_after_s: float | None = None) -> None:
        self.group = group
        self.name = name
        args = [sys.executable, str(MEMBER), group.bootstrap, group.name, group.topic, name]
        if stall_after_s is not None:
            args += ["--stall-after-s", str(stall_after_s)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        self.generation: int | None = None
        self.events: list[dict[str, object]] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            event = json.loads(line)
            with self.group.lock:
                self.events.append(event)
                if event["ev"] == "synced":
                    self.group.generations.add(int(event["gen"]))  # type: ignore[call-overload]
                if event["ev"] == "assigned":
                    self.generation = int(event["gen"])  # type: ignore[call-overload]
                self.group.changed = time.monotonic()


class Group:
    def __init__(self, bootstrap: str, name: str, topic: str) -> None:
        self.bootstrap = bootstrap
        self.name = name
        self.topic = topic
        self.lock = threading.Lock()
        self.live: dict[str, Member] = {}
        self.generations: set[int] = set()
        self.changed = time.monotonic()
        self.crashes = 0
        self.leaves = 0
        self.poll_timeouts = 0
        self.expected = 0
        self.stable_generation = 0
        self.log: list[str] = []

    def wait_stable(self, timeout_s: float = 60) -> None:
        """Every live member holds the same generation, newer than the last stable one, and
        nothing changed for 2 s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                gens = {m.generation for m in self.live.values()}
                quiet = time.monotonic() - self.changed > 2.0
            if quiet and len(gens) == 1:
                (gen,) = gens
                if gen is not None and gen > self.stable_generation:
                    self.stable_generation = gen
                    self.expected += 1
                    self.log.append(f"stable at generation {gen} with {sorted(self.live)}")
                    return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name}: not stable within {timeout_s} s: {gens}")

    def start(self, name: str, stall_after_s: float | None = None) -> None:
        self.log.append(f"start {name}")
        self.live[name] = Member(self, name, stall_after_s)
        self.wait_stable()

    def crash(self, name: str) -> None:
        self.log.append(f"SIGKILL {name}")
        member = self.live.pop(name)
        member.process.kill()
        member.process.wait()
        self.crashes += 1
        if self.live:
            self.wait_stable()
        else:
            time.sleep(10)  # session timeout (6 s) + slack: the group becomes empty

    def leave(self, name: str) -> None:
        self.log.append(f"close {name}")
        member = self.live.pop(name)
        member.process.send_signal(signal.SIGTERM)
        member.process.wait(30)
        self.leaves += 1
        if self.live:
            self.wait_stable()

    def stall(self, name: str) -> None:
        """``name`` was started with --stall-after-s; wait for its poll-timeout LeaveGroup."""
        self.log.append(f"poll timeout {name}")
        member = self.live.pop(name)
        member.process.wait(60)
        self.leaves += 1
        self.poll_timeouts += 1
        if self.live:
            self.wait_stable()

    def truth(self) -> dict[str, object]:
        return {
            "rebalances": len(self.generations),
            "expected_rebalances": self.expected,
            "max_generation": max(self.generations, default=0),
            "crashes": self.crashes,
            "leaves": self.leaves,
            "poll_timeouts": self.poll_timeouts,
            "steps": self.log,
        }


def orders(group: Group) -> None:
    group.start("a1")
    group.start("a2")
    group.start("a3")
    group.crash("a2")
    group.start("a2-restarted")
    group.leave("a3")
    group.start("a4")
    group.crash("a1")
    group.leave("a4")


def billing(group: Group) -> None:
    group.start("b1")
    group.start("b2")
    group.leave("b1")
    group.start("b3", stall_after_s=8)
    group.stall("b3")
    group.start("b4")
    group.crash("b4")
    group.crash("b2")  # the last member: the group becomes empty
    group.start("b5")


def run_groups(bootstrap: str) -> list[Group]:
    groups = [Group(bootstrap, "orders-app", "orders"), Group(bootstrap, "billing-app", "billing")]
    threads = [
        threading.Thread(target=script, args=(group,))
        for script, group in zip((orders, billing), groups, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return groups


def run_serve(out: Path, work: Path) -> None:
    serve = Serve(work)
    print(f"groupcoord serve on {serve.bootstrap}", flush=True)
    groups: list[Group] = []
    try:
        groups = run_groups(serve.bootstrap)
    finally:
        serve.stop()
        for group in groups:
            for member in group.live.values():
                member.process.kill()
                member.process.wait()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(serve.event_log, out / "serve-event-log.jsonl")
    truth = {"server": "groupcoord serve", "groups": {g.name: g.truth() for g in groups}}
    (out / "serve-truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(json.dumps(truth, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    os._exit(0)


def create_topics(broker: Broker) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("orders", 6, 1), NewTopic("billing", 4, 1)])
    admin.close()


class Serve:
    """``groupcoord serve --event-log`` in place of the Kafka broker."""

    def __init__(self, directory: Path) -> None:
        self.event_log = directory / "events.jsonl"
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "groupcoord", "serve", "--port", "0", "--memory",
                "--topic", "orders:6", "--topic", "billing:4",
                "--group-initial-rebalance-delay-ms", "0",
                "--group-min-session-timeout-ms", "3000",
                "--event-log", str(self.event_log),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.bootstrap = line.rsplit(" ", 1)[-1].strip()

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", default="4.4.0")
    parser.add_argument("--serve", action="store_true", help="run against groupcoord serve")
    parser.add_argument("--out", type=Path, default=FIXTURES)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix=f"kafka-{args.version}-"))
    if args.serve:
        run_serve(args.out, work)
        return
    broker = Broker(args.version, work / "broker")
    broker.start()
    print(f"kafka {args.version} on {broker.bootstrap} in {work}", flush=True)
    groups = [
        Group(broker.bootstrap, "orders-app", "orders"),
        Group(broker.bootstrap, "billing-app", "billing"),
    ]
    try:
        create_topics(broker)
        threads = [
            threading.Thread(target=script, args=(group,))
            for script, group in zip((orders, billing), groups, strict=True)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        broker.stop()
        for group in groups:
            for member in group.live.values():
                member.process.kill()
                member.process.wait()
    args.out.mkdir(parents=True, exist_ok=True)
    shutil.copy(broker.server_log, args.out / f"kafka-{args.version}-server.log")
    truth = {"kafka_version": args.version, "groups": {g.name: g.truth() for g in groups}}
    (args.out / f"kafka-{args.version}-truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    print(json.dumps(truth, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    os._exit(0)


if __name__ == "__main__":
    main()
