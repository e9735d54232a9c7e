"""Shared by the GroupMember runner tests: the test server's flags, the topic, a
:class:`Ledger` that checks partition ownership at every listener call, and :class:`Poller`,
which polls one member on its own thread."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from groupcoord.member import GroupMember, RebalanceListener
from groupcoord.types import TopicPartition

#: a coordinator that accepts short sessions and does not delay the first rebalance
SERVER_ARGS = (
    "--group-min-session-timeout-ms",
    "1000",
    "--group-initial-rebalance-delay-ms",
    "0",
    "--topic",
    "t:6",
)
TOPIC = "t"
ALL = frozenset(TopicPartition(TOPIC, p) for p in range(6))


@dataclass
class Ledger:
    """Partition owners as the listener calls of every member say, checked on each call.

    A partition may be assigned only when nobody owns it (its previous owner revoked it
    first) and never to its owner again (cooperative members hear only what is new), a
    member may revoke only what it owns, and revoked/lost are never empty. With
    ``strict=False`` a partition may be given away while its owner has not yet heard that
    it lost it (that is what "lost" means: the member was out of the group).
    """

    strict: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: dict[TopicPartition, str] = field(default_factory=dict)
    calls: list[tuple[str, str, frozenset[TopicPartition]]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)

    def listener(self, name: str) -> RebalanceListener:
        return _Recording(self, name)

    def record(self, name: str, kind: str, partitions: frozenset[TopicPartition]) -> None:
        with self.lock:
            self.calls.append((name, kind, partitions))
            if kind == "assigned":
                for p in partitions:
                    holder = self.owner.get(p)
                    if holder == name:
                        self.violations.append(f"{p} assigned to {name} again")
                    elif holder is not None and self.strict:
                        self.violations.append(f"{p} assigned to {name} while {holder} owns it")
                    self.owner[p] = name
                return
            if not partitions:
                self.violations.append(f"{name}: {kind} called with no partitions")
            for p in partitions:
                holder = self.owner.get(p)
                if holder == name:
                    del self.owner[p]
                elif kind == "revoked" or self.strict:
                    self.violations.append(f"{name} {kind} {p} owned by {holder}")

    def owned_by(self, name: str) -> frozenset[TopicPartition]:
        with self.lock:
            return frozenset(p for p, who in self.owner.items() if who == name)

    def kinds(self, name: str) -> list[str]:
        with self.lock:
            return [kind for who, kind, _ in self.calls if who == name]


class _Recording(RebalanceListener):
    def __init__(self, ledger: Ledger, name: str) -> None:
        self.ledger = ledger
        self.name = name

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self.ledger.record(self.name, "revoked", partitions)

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.ledger.record(self.name, "assigned", partitions)

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self.ledger.record(self.name, "lost", partitions)


class Poller:
    """Calls ``member.poll()`` in a loop on its own thread, like an application would.

    :meth:`pause` stops polling for a while (the application is busy processing) without
    stopping the member's heartbeat thread. The first exception ends the loop and is kept
    in :attr:`error`.
    """

    def __init__(self, member: GroupMember, poll_ms: int = 100) -> None:
        self.member = member
        self.poll_ms = poll_ms
        self.error: BaseException | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.polls = 0
        self._busy_until = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="poller", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                busy = self._busy_until - time.monotonic()
                if busy > 0:
                    self._stop.wait(busy)
                    continue
                self.assignment = self.member.poll(self.poll_ms)
                self.polls += 1
                # poll() returns at once when the group is stable: "process" a little, so
                # that the members do not take the CPU from the server and each other.
                self._stop.wait(0.02)
        except BaseException as e:
            self.error = e

    def pause(self, seconds: float) -> None:
        self._busy_until = time.monotonic() + seconds

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "poll() did not return"

    def close(self) -> None:
        """Stop polling and close the member (LeaveGroup unless static)."""
        self.stop()
        self.member.close()


def balanced(*pollers: Poller) -> bool:
    """Every poller's member is stable, and together they own every partition once,
    each 6/n of them."""
    parts = [p.member.assignment() for p in pollers]
    sizes = sorted(len(a) for a in parts)
    union = frozenset().union(*parts)
    return (
        all(p.member.generation() >= 0 for p in pollers)
        and union == ALL
        and sum(sizes) == len(ALL)
        and sizes[-1] - sizes[0] <= 1
    )


def assert_no_thread_errors(*pollers: Poller) -> None:
    for p in pollers:
        assert p.error is None, f"poll() raised {p.error!r}"
