"""A simulation's outputs: the run totals (``summary``), the event log and one row per
rebalance, as pyarrow tables, and how they are written to a directory.

``summary`` keys (also ``summary.json``):

==================================  ===========================================================
``rebalances``                      completed rebalances: generations that reached Stable
                                    (every member's SyncGroup answered), the first included
``generations``                     join phases completed (a generation can be superseded
                                    before it reaches Stable)
``members_expired_session``         members the coordinator removed for missing heartbeats
``members_expired_poll``            times a member's max.poll.interval.ms ran out (it left)
``members_left``                    LeaveGroup requests that removed a member (poll timeouts
                                    of dynamic members included)
``members_not_rejoined``            members removed for not rejoining or syncing in time
``unavailable_partition_seconds``   sum over partitions of the time no running application
                                    was processing it (no owner, an owner not yet told its
                                    offset, a paused or crashed owner), from t=0
``duplicates``                      records processed more than once (an owner lost the
                                    partition before committing them; the next one redid them)
``stop_the_world_ms``               eager rebalances: first revocation to last assignment;
                                    cooperative ones stop no one (0)
``time_to_stable_ms``               when the group first reached Stable (null: never)
``p50_lag_ms`` / ``p99_lag_ms`` /   end-to-end lag of records (processing finished minus
``max_lag_ms``                      arrival), each record counted once; records never
                                    processed count with their wait until the end
``simulated_heartbeats``            Heartbeat requests the members sent
``requests``                        all requests the members sent
``records_arrived`` /               records the topics received / processed (duplicates
``records_processed``               included) by the end
``final_generation``                the coordinator's last generation
``members_running``                 member processes alive at the end
``duration_s``, ``seed``            the run
==================================  ===========================================================
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupcoord.sim.metrics import Recorder

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

__all__ = ["EVENT_COLUMNS", "REBALANCE_COLUMNS", "SimResult"]

#: events.parquet: (name, arrow type name, meaning)
EVENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("time_ms", "int64", "virtual time of the event (an interval's start)"),
    ("kind", "string", "what happened (see the README's list)"),
    ("member", "string", "the member process's name (member-N), or null"),
    ("generation", "int32", "generation the event belongs to, or null"),
    ("partitions", "int32", "how many partitions it concerns, or null"),
    ("duration_ms", "int64", "length of an interval (pause, cut, unavailability), or null"),
    ("topic", "string", "topic (partition events), or null"),
    ("partition", "int32", "partition number (partition events), or null"),
    ("detail", "string", "free text: a KIP-800 reason, a removal cause, ..."),
)

#: rebalances.parquet: (name, arrow type name, meaning)
REBALANCE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("generation", "int32", "the generation the rebalance created"),
    ("reason", "string", "why it started (the coordinator's first cause, KIP-800 text)"),
    ("protocol", "string", "the assignor the coordinator chose"),
    ("leader", "string", "the leader's member id"),
    ("started_ms", "int64", "the group left Stable/Empty (PreparingRebalance)"),
    ("completed_ms", "int64", "the join phase completed (Kafka's 'Stabilized group')"),
    ("stable_ms", "int64", "every SyncGroup answered; null if superseded first"),
    ("last_assigned_ms", "int64", "the last application told of its partitions"),
    ("duration_ms", "int64", "completed_ms - started_ms"),
    ("members_before", "int32", "members of the previous generation"),
    ("members_after", "int32", "members of this generation"),
    ("partitions_moved", "int32", "partitions that went to a different member than before"),
    ("partitions_revoked", "int32", "partitions revoked by applications for this rebalance"),
    ("partitions_lost", "int32", "partitions applications lost (no orderly revocation)"),
    ("stop_the_world_ms", "int64", "eager: first revocation to last assignment; else 0"),
)


def _schema(columns: tuple[tuple[str, str, str], ...]) -> pa.Schema:
    import pyarrow as pa

    types = {"int64": pa.int64(), "int32": pa.int32(), "string": pa.string()}
    return pa.schema([pa.field(name, types[kind]) for name, kind, _ in columns])


@dataclass(frozen=True)
class SimResult:
    """What :func:`groupcoord.sim.run` returns."""

    summary: dict[str, Any]
    event_rows: list[tuple[Any, ...]] = field(repr=False)
    rebalance_rows: list[tuple[Any, ...]] = field(repr=False)

    @classmethod
    def from_recorder(
        cls, recorder: Recorder, *, duration_s: float, seed: int, extra: dict[str, Any]
    ) -> SimResult:
        stable = [r for r in recorder.rebalances if r.stable_ms is not None]
        summary: dict[str, Any] = {
            "rebalances": len(stable),
            "generations": len(recorder.rebalances),
            "members_expired_session": recorder.members_expired_session,
            "members_expired_poll": recorder.members_expired_poll,
            "members_left": recorder.members_left,
            "members_not_rejoined": recorder.members_not_rejoined,
            "unavailable_partition_seconds": round(recorder.unavailable_partition_ms() / 1000, 3),
            "duplicates": recorder.duplicates,
            "stop_the_world_ms": recorder.stop_the_world_ms(),
            "time_to_stable_ms": recorder.time_to_stable_ms,
            "p50_lag_ms": recorder.lag_percentile(0.50),
            "p99_lag_ms": recorder.lag_percentile(0.99),
            "max_lag_ms": int(recorder.max_lag_ms),
            "simulated_heartbeats": recorder.heartbeats,
            "requests": recorder.requests,
            "records_processed": recorder.records_processed,
            "duration_s": duration_s,
            "seed": seed,
        }
        summary.update(extra)
        events = sorted(
            recorder.events, key=lambda e: (e[0], e[1], e[2] or "", e[6] or "", e[7] or 0)
        )
        rebalances = [
            (
                r.generation,
                r.reason,
                r.protocol,
                r.leader,
                r.started_ms,
                r.completed_ms,
                r.stable_ms,
                r.last_assigned_ms,
                r.completed_ms - r.started_ms,
                r.members_before,
                r.members_after,
                r.partitions_moved,
                r.partitions_revoked,
                r.partitions_lost,
                (
                    max(r.last_assigned_ms - r.first_revoke_ms, 0)
                    if r.eager and r.first_revoke_ms is not None and r.last_assigned_ms is not None
                    else 0
                ),
            )
            for r in recorder.rebalances
        ]
        return cls(summary=summary, event_rows=events, rebalance_rows=rebalances)

    @property
    def events(self) -> pa.Table:
        """The event log (columns: :data:`EVENT_COLUMNS`), in time order."""
        return _table(self.event_rows, EVENT_COLUMNS)

    @property
    def rebalances(self) -> pa.Table:
        """One row per completed join phase (columns: :data:`REBALANCE_COLUMNS`)."""
        return _table(self.rebalance_rows, REBALANCE_COLUMNS)

    def summary_json(self) -> str:
        """``summary`` as the byte-stable JSON that ``summary.json`` holds."""
        return json.dumps(self.summary, sort_keys=True, indent=2) + "\n"

    def describe(self) -> str:
        """A few lines for people (what ``groupcoord simulate`` prints)."""
        s = self.summary
        stable = s["time_to_stable_ms"]
        lines = [
            f"simulated {s['duration_s']:g} s (seed {s['seed']}): "
            f"{s['rebalances']} rebalances, final generation {s['final_generation']}, "
            f"{s['members_running']} members running",
            "  first stable generation: "
            + ("never" if stable is None else f"after {stable / 1000:.3f} s"),
            f"  members expired: {s['members_expired_session']} by session timeout, "
            f"{s['members_expired_poll']} by max.poll.interval.ms; {s['members_left']} left",
            f"  unavailable: {s['unavailable_partition_seconds']:g} partition-seconds; "
            f"stop-the-world {s['stop_the_world_ms'] / 1000:g} s",
            f"  records: {s['records_processed']} processed of {s['records_arrived']} arrived, "
            f"{s['duplicates']} duplicates; lag p50 {s['p50_lag_ms']} ms, "
            f"p99 {s['p99_lag_ms']} ms, max {s['max_lag_ms']} ms",
            f"  requests: {s['requests']} ({s['simulated_heartbeats']} heartbeats)",
        ]
        return "\n".join(lines)

    def write(self, out_dir: str | Path) -> Path:
        """Write ``summary.json``, ``events.parquet`` and ``rebalances.parquet``."""
        import pyarrow.parquet as pq

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(self.summary_json(), encoding="utf-8")
        pq.write_table(self.events, out / "events.parquet")
        pq.write_table(self.rebalances, out / "rebalances.parquet")
        return out


def _table(rows: list[tuple[Any, ...]], columns: tuple[tuple[str, str, str], ...]) -> pa.Table:
    import pyarrow as pa

    names = [name for name, _, _ in columns]
    data = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    return pa.Table.from_pydict(data, schema=_schema(columns))
