"""Shared machinery of the interop tests: consumer agents in subprocesses, waiting with a
deadline, and reading a group's committed offsets.

Every consumer runs in its own subprocess (``agent_<client>.py``) so that a test can
SIGKILL it like a crashed service; its JSON-line events (see ``agent_common``) are
collected here by a reader thread. Nothing here sleeps to make an assertion true: tests
poll a condition until a deadline with :func:`wait_until`.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from agent_common import AgentSettings, Partition

from waiting import wait_until

HERE = Path(__file__).resolve().parent
AGENT_SCRIPTS = {
    "kafka-python": HERE / "agent_kafka_python.py",
    "aiokafka": HERE / "agent_aiokafka.py",
    "confluent": HERE / "agent_confluent.py",
}

#: Kafka's own Java KafkaConsumer (tests marked ``kafka``): compiled by tools/kafka_java.py
JAVA_AGENT = HERE / "JavaAgent.java"


def agent_command(client: str, settings_json: str) -> list[str]:
    """The command line of one consumer agent of ``client`` ("java" or AGENT_SCRIPTS')."""
    if client == "java":
        from kafka_oracle import KAFKA_LATEST, tools_module

        return tools_module("kafka_java").command(JAVA_AGENT, KAFKA_LATEST, settings_json)
    return [sys.executable, str(AGENT_SCRIPTS[client]), settings_json]


#: server flags that make rebalances quick enough for CI
FAST_GROUP_FLAGS = (
    "--group-min-session-timeout-ms", "1000", "--group-initial-rebalance-delay-ms", "0",
)  # fmt: skip

SESSION_TIMEOUT_MS = 4000
HEARTBEAT_INTERVAL_MS = 400
#: also the rebalance timeout of the Java-style clients: how long a join phase may wait
MAX_POLL_INTERVAL_MS = 15000


class Server(Protocol):
    """What the scenarios need of conftest's ``ServerProcess``."""

    @property
    def bootstrap(self) -> str: ...

    def restart(self) -> None: ...


def partitions(topic: str, count: int) -> frozenset[Partition]:
    return frozenset((topic, p) for p in range(count))


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    ev: str
    t: float
    fields: dict[str, Any] = field(default_factory=dict)

    def parts(self, key: str) -> frozenset[Partition]:
        return frozenset((t, p) for t, p in self.fields[key])


class ConsumerProcess:
    """One consumer agent subprocess and everything it has reported so far."""

    def __init__(self, client: str, settings: AgentSettings, name: str, log_dir: Path) -> None:
        self.client = client
        self.name = name
        self.settings = settings
        self.stderr_path = log_dir / f"{name}.stderr"
        self._lock = threading.Lock()
        self._events: list[Event] = []
        with self.stderr_path.open("w") as stderr:
            self.proc = subprocess.Popen(
                agent_command(client, json.dumps(asdict(settings))),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=HERE,
            )
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"read-{name}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            raw = json.loads(line)
            event = Event(ev=raw.pop("ev"), t=raw.pop("t"), fields=raw)
            with self._lock:
                self._events.append(event)

    # what the agent reported

    def events(self, *kinds: str, since: int = 0) -> list[Event]:
        with self._lock:
            return [e for e in self._events[since:] if not kinds or e.ev in kinds]

    def mark(self) -> int:
        """A position in the event stream, for ``events(since=...)``."""
        with self._lock:
            return len(self._events)

    def owned(self) -> frozenset[Partition]:
        moves = self.events("assigned", "revoked", "lost")
        return moves[-1].parts("owned") if moves else frozenset()

    def generation(self) -> int | None:
        """The latest generation the client reported (None: it does not tell)."""
        known = [e for e in self.events("assigned", "generation") if e.fields["gen"] is not None]
        return known[-1].fields["gen"] if known else None

    def records(self) -> list[tuple[str, int, int, str | None]]:
        return [tuple(r) for e in self.events("records") for r in e.fields["recs"]]  # type: ignore[misc]

    def errors(self) -> list[str]:
        return [e.fields["msg"] for e in self.events("error")]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    # driving it

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def command(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def commit(self, timeout: float = 20.0) -> None:
        before = self.mark()
        self.command("commit")
        wait_until(
            lambda: self.events("committed", "error", since=before),
            timeout,
            f"{self.name} to commit",
        )
        assert not self.events("error", since=before), self.errors()

    def close(self, timeout: float = 30.0) -> None:
        """Graceful close (the client leaves the group unless it is a static member)."""
        self.command("close")
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not close within {timeout} s") from None
        assert self.events("closed"), f"{self.name} exited without closing:\n{self.stderr()}"

    def kill(self) -> None:
        """SIGKILL: the client gets no chance to leave the group."""
        if self.running:
            self.proc.kill()
        self.proc.wait()

    def cleanup(self) -> None:
        self.kill()
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class ConsumerGroup:
    """Consumer agents of one group; every agent is killed when the ``with`` block ends."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        group: str,
        topics: Iterable[str],
        log_dir: Path,
        **overrides: Any,
    ) -> None:
        self.client = client
        self.log_dir = log_dir
        self.defaults = AgentSettings(
            bootstrap=bootstrap,
            group=group,
            topics=tuple(topics),
            assignor="range",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=HEARTBEAT_INTERVAL_MS,
            max_poll_interval_ms=MAX_POLL_INTERVAL_MS,
            instance_id=None,
            auto_commit=False,
            report_records=False,
        )
        self.defaults = replace(self.defaults, **overrides)
        self.members: list[ConsumerProcess] = []

    def spawn(self, client: str | None = None, **overrides: Any) -> ConsumerProcess:
        """A new member; ``client`` picks another client library than the group's."""
        client = client or self.client
        name = f"{client}-{len(self.members)}"
        member = ConsumerProcess(client, replace(self.defaults, **overrides), name, self.log_dir)
        self.members.append(member)
        return member

    def __enter__(self) -> ConsumerGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        for member in self.members:
            member.cleanup()

    def diagnostics(self) -> str:
        """Agent stderr tails, to explain a failed wait."""
        return "\n".join(f"--- {m.name}\n{m.stderr()[-3000:]}" for m in self.members)


def owned_exactly_once(
    members: Iterable[ConsumerProcess], expected: frozenset[Partition], sizes: Sequence[int]
) -> dict[str, frozenset[Partition]] | None:
    """Each member's partitions when together they own ``expected``, no partition twice,
    in shares of ``sizes`` (in any order); None otherwise. (The sizes matter: a member
    that joined first may own everything for a moment, before the others are in.)"""
    owned = {m.name: m.owned() for m in members}
    union = frozenset().union(*owned.values())
    shares = sorted(len(p) for p in owned.values())
    if union == expected and sum(shares) == len(expected) and shares == sorted(sizes):
        return owned
    return None


def wait_owned_exactly_once(
    members: list[ConsumerProcess],
    expected: frozenset[Partition],
    sizes: Sequence[int],
    timeout: float,
    what: str,
) -> dict[str, frozenset[Partition]]:
    try:
        return wait_until(lambda: owned_exactly_once(members, expected, sizes), timeout, what)
    except AssertionError as exc:
        state = {m.name: sorted(m.owned()) for m in members}
        tails = "\n".join(f"--- {m.name}\n{m.stderr()[-2000:]}" for m in members)
        raise AssertionError(f"{exc}; owned: {state}\n{tails}") from None


def committed_offsets(bootstrap: str, group: str) -> dict[Partition, int]:
    """The group's committed offsets, read with kafka-python's admin client (OffsetFetch)."""
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="interop-admin")
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


@contextlib.contextmanager
def deadline_context(what: str) -> Iterator[None]:
    """Names the phase of a long scenario in the failure message."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(f"[{what}] {exc}") from None
