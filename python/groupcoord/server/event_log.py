"""``groupcoord serve --event-log PATH``: one JSON line per group event, for
``groupcoord analyze`` (and anything else that reads JSON lines).

The coordinator returns completed rebalances and removed members as events
(:mod:`groupcoord.coordinator.events`) and the gateway hands them to its listeners;
:class:`EventLog` appends each as one line and flushes it, so a crash of the server loses
at most the line being written. Rebalances are rare next to heartbeats, so writing on the
event loop costs nothing measurable. The file is opened for appending: a restarted server
continues the same log.

Every line has ``event``, ``time`` (ISO 8601, UTC, milliseconds), ``time_ms`` (epoch ms)
and ``group``. The kinds:

``rebalance_completed`` (Kafka's "Preparing to rebalance" + "Stabilized group")
    ``generation``, ``members`` (count), ``member_ids``, ``leader``, ``protocol_type``,
    ``protocol``, ``reason`` (why it started: the coordinator's first cause with the
    client's KIP-800 reason), ``started_ms``/``started`` (the group left Stable/Empty),
    ``completed_ms``/``completed`` (the generation was created), ``duration_ms``.
``group_empty`` (Kafka's "Group X with generation N is now empty")
    a join phase that ended with no member left: the same fields as ``rebalance_completed``
    (``members`` 0, ``leader`` and ``protocol`` null).
``member_removed`` (Kafka's "has failed, removing it" / "has left group")
    ``member``, ``instance_id`` (static members, else null), ``cause`` (``session_timeout``,
    ``left``, ``not_rejoined``, ``not_synced``), ``reason`` (for ``left``, the client's
    KIP-800 reason, e.g. the Java client's "consumer poll timeout has expired.").
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from typing import IO, Protocol

from groupcoord.coordinator import (
    MemberListener,
    MemberRemoved,
    RebalanceCompleted,
    RebalanceListener,
)

__all__ = ["EventLog", "iso_ms"]

log = logging.getLogger("groupcoord.server")


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (2026-01-31T12:00:00.123Z)."""
    moment = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class EventSource(Protocol):
    """What takes listeners: the server's gateway, a SyncShell."""

    def add_rebalance_listener(self, listener: RebalanceListener) -> None: ...

    def add_member_listener(self, listener: MemberListener) -> None: ...


class EventLog:
    """Appends the coordinator's events to ``path`` as JSON lines; :meth:`attach` it to
    the shell that receives them, :meth:`close` it at shutdown."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115
        self.lines = 0

    def attach(self, source: EventSource) -> None:
        source.add_rebalance_listener(self.on_rebalance)
        source.add_member_listener(self.on_member_removed)

    def on_rebalance(self, event: RebalanceCompleted) -> None:
        self._write(
            {
                # Kafka logs "Group X with generation N is now empty" here, not "Stabilized"
                "event": "rebalance_completed" if event.members else "group_empty",
                "time": iso_ms(event.completed_ms),
                "time_ms": event.completed_ms,
                "group": event.group_id,
                "generation": event.generation_id,
                "members": len(event.members),
                "member_ids": list(event.members),
                "leader": event.leader_id,
                "protocol_type": event.protocol_type,
                "protocol": event.protocol_name,
                "reason": event.reason,
                "started": iso_ms(event.started_ms),
                "started_ms": event.started_ms,
                "completed": iso_ms(event.completed_ms),
                "completed_ms": event.completed_ms,
                "duration_ms": event.duration_ms,
            }
        )

    def on_member_removed(self, event: MemberRemoved) -> None:
        self._write(
            {
                "event": "member_removed",
                "time": iso_ms(event.at_ms),
                "time_ms": event.at_ms,
                "group": event.group_id,
                "member": event.member_id,
                "instance_id": event.group_instance_id,
                "cause": event.cause.value,
                "reason": event.reason,
            }
        )

    def _write(self, record: dict[str, object]) -> None:
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(record, separators=(",", ":")) + "\n")
            self._file.flush()
            self.lines += 1
        except OSError as exc:  # a full disk must not take the coordinator down
            log.error("event log %s: cannot write (%s); event dropped", self.path, exc)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
