"""What every consumer agent shares: its settings, its event stream and its command inbox.

A consumer agent is a subprocess that runs one real client's consumer (kafka-python,
aiokafka or confluent-kafka) and reports what the client tells it, one JSON object per
line on stdout, so that a test can SIGKILL it like a crashed service and can watch several
consumers of one group at once without sharing a process (or a GIL) with them. The test
side of this stream is ``helpers.ConsumerProcess``.

Events (``ev``): ``started``; ``generation`` (whenever the client's generation changes,
where the client exposes it); ``assigned`` / ``revoked`` / ``lost`` with the partitions the
callback received and everything ``owned`` afterwards (plus ``gen`` when the client exposes
its generation); ``records``; ``committed``; ``error``; ``closed``.
Commands (stdin lines): ``commit`` (synchronous commit of what was consumed), ``close``.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Partition = tuple[str, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSettings:
    bootstrap: str
    group: str
    topics: tuple[str, ...]
    assignor: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    instance_id: str | None
    auto_commit: bool
    report_records: bool
    #: "classic" (JoinGroup/SyncGroup) or "consumer" (KIP-848: the coordinator assigns with
    #: its ``assignor``; the client's own assignor, session timeout and heartbeat interval
    #: are not used, the coordinator sets them)
    group_protocol: str = "classic"

    @classmethod
    def from_argv(cls) -> AgentSettings:
        raw = json.loads(sys.argv[1])
        raw["topics"] = tuple(raw["topics"])
        return cls(**raw)


class Reporter:
    """Writes events as JSON lines; callbacks may run on client threads, hence the lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owned: set[Partition] = set()

    def emit(self, ev: str, **fields: Any) -> None:
        line = json.dumps({"ev": ev, "t": time.monotonic(), **fields})
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def assigned(self, added: Iterable[Partition], *, eager: bool, gen: int | None) -> None:
        added = sorted(added)
        if eager:
            self.owned = set(added)
        else:
            self.owned |= set(added)
        self.emit("assigned", added=added, owned=sorted(self.owned), gen=gen)

    def revoked(self, removed: Iterable[Partition], *, kind: str = "revoked") -> None:
        removed = sorted(removed)
        self.owned -= set(removed)
        self.emit(kind, removed=removed, owned=sorted(self.owned))

    def records(self, recs: list[tuple[str, int, int, str | None]]) -> None:
        if recs:
            self.emit("records", recs=recs)


def start_command_reader() -> queue.Queue[str]:
    """Stdin lines arrive on a queue the agent's poll loop drains between polls (no client
    here is safe to call from a second thread). End of stdin means the test went away."""
    inbox: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            inbox.put(line.strip())
        inbox.put("close")

    threading.Thread(target=read, daemon=True, name="agent-stdin").start()
    return inbox


def decode_key(key: bytes | str | None) -> str | None:
    if key is None or isinstance(key, str):
        return key
    return key.decode()
