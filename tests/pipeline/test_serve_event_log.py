"""``groupcoord serve --event-log``: one JSON line per rebalance and removed member, written
by a real server for real members (no Spark needed)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groupcoord.assignors import RangeAssignor
from groupcoord.member import GroupMember
from waiting import wait_until


class Polling:
    def __init__(self, member: GroupMember) -> None:
        self.member = member
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.member.poll(100)
            self._stop.wait(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


CHILD = """
import sys, time
from groupcoord.assignors import RangeAssignor
from groupcoord.member import GroupMember
m = GroupMember(bootstrap_servers=sys.argv[1], group_id="g", topics=["t"],
                assignors=[RangeAssignor()], session_timeout_ms=1500,
                heartbeat_interval_ms=300, client_id="c")
while True:
    m.poll(100)
    print(m.member_id, flush=True)
    time.sleep(0.05)
"""


def test_event_log_lines(serve_factory: Callable[..., Any], tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    server = serve_factory(
        "--group-min-session-timeout-ms", "1000",
        "--group-initial-rebalance-delay-ms", "0",
        "--topic", "t:4",
        "--event-log", str(log),
    )  # fmt: skip

    def member(name: str, **extra: Any) -> GroupMember:
        return GroupMember(
            bootstrap_servers=server.bootstrap,
            group_id="g",
            topics=["t"],
            assignors=[RangeAssignor()],
            session_timeout_ms=1500,
            heartbeat_interval_ms=300,
            client_id=name,
            **extra,
        )

    def rebalances() -> list[dict[str, Any]]:
        return [e for e in _lines(log) if e["event"] == "rebalance_completed"]

    a = Polling(member("a"))
    wait_until(lambda: len(rebalances()) == 1, 15, "first rebalance logged")
    # a member in another process, killed: the coordinator expires its session
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, server.bootstrap], stdout=subprocess.PIPE, text=True
    )
    try:
        wait_until(lambda: len(rebalances()) == 2, 15, "the child joined")
    finally:
        child.kill()
        child.wait()
    wait_until(lambda: len(rebalances()) == 3, 15, "rebalance after the child expired")
    # a member that stops polling: it leaves by itself (the poll timeout) with a reason
    b = Polling(member("b", max_poll_interval_ms=1500))
    wait_until(lambda: len(rebalances()) == 4, 15, "b joined")
    b.stop()
    wait_until(lambda: len(rebalances()) == 5, 15, "rebalance after b's poll timeout")
    a.stop()
    a.member.close()  # LeaveGroup: the group becomes empty
    wait_until(lambda: len(_lines(log)) == 9, 15, "a's LeaveGroup logged")
    server.stop()
    lines = _lines(log)
    kinds = [(e["event"], e.get("cause")) for e in lines]
    assert kinds == [
        ("rebalance_completed", None),
        ("rebalance_completed", None),
        ("member_removed", "session_timeout"),
        ("rebalance_completed", None),
        ("rebalance_completed", None),
        ("member_removed", "left"),
        ("rebalance_completed", None),
        ("member_removed", "left"),
        ("group_empty", None),
    ]
    done = rebalances()
    assert [r["generation"] for r in done] == [1, 2, 3, 4, 5]
    assert [r["members"] for r in done] == [1, 2, 1, 2, 1]
    for r in done:
        assert r["group"] == "g"
        assert r["protocol_type"] == "consumer"
        assert r["protocol"] == "range"
        assert r["leader"] in r["member_ids"]
        assert r["started_ms"] <= r["completed_ms"] == r["time_ms"]
        assert r["duration_ms"] == r["completed_ms"] - r["started_ms"]
        assert r["time"].endswith("Z") and r["reason"]
    assert lines[2]["instance_id"] is None
    assert lines[2]["member"] not in done[2]["member_ids"]
    assert "poll timeout" in lines[5]["reason"]
    assert lines[7]["member"] == done[4]["leader"]
    assert lines[8]["generation"] == 6 and lines[8]["members"] == 0
    b.member.close(timeout_ms=1000)
