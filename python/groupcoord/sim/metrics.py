"""What a simulation measures: the event log, one row per rebalance, and the run totals.

The engine reports facts as they happen (a listener call delivered, a member removed, a
batch processed); :class:`Recorder` turns them into the three outputs whose columns and
keys :mod:`groupcoord.sim.result` documents. Nothing here drives the simulation.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from groupcoord.coordinator import MemberRemoved, RebalanceCompleted, RemovalCause
from groupcoord.sim.workload import PartitionStream
from groupcoord.types import TopicPartition

__all__ = ["EVENT_KINDS", "RebalanceRow", "Recorder"]

#: every ``kind`` the event log can hold (README: "Simulator outputs")
EVENT_KINDS = (
    "member_started",
    "member_crashed",
    "member_closing",
    "member_stopped",
    "member_paused",
    "member_resumed",
    "network_partitioned",
    "network_healed",
    "join_sent",
    "poll_timeout",
    "session_lost",
    "revoked",
    "assigned",
    "lost",
    "member_removed",
    "rebalance_completed",
    "group_stable",
    "partitions_changed",
    "coordinator_down",
    "coordinator_up",
    "partition_unavailable",
    "fatal_error",
)


@dataclass(slots=True)
class RebalanceRow:
    generation: int
    reason: str
    protocol: str | None
    leader: str | None
    started_ms: int
    completed_ms: int
    members_before: int
    members_after: int
    stable_ms: int | None = None
    last_assigned_ms: int | None = None
    first_revoke_ms: int | None = None
    partitions_moved: int = 0
    partitions_revoked: int = 0
    partitions_lost: int = 0
    eager: bool = False


@dataclass(slots=True)
class _PartitionAvailability:
    active_owners: int = 0
    #: since when no application processes it (None while one does)
    unavailable_since: int | None = 0
    unavailable_ms: int = 0


@dataclass
class Recorder:
    """Collects the simulation's facts; see :mod:`groupcoord.sim.result` for the outputs."""

    eager: bool
    events: list[tuple[Any, ...]] = field(default_factory=list)
    rebalances: list[RebalanceRow] = field(default_factory=list)
    heartbeats: int = 0
    requests: int = 0
    members_expired_session: int = 0
    members_expired_poll: int = 0
    members_left: int = 0
    members_not_rejoined: int = 0
    duplicates: int = 0
    records_processed: int = 0
    #: records that arrived but no application processed by the end
    unprocessed: int = 0
    #: lag of each record's first processing, in whole ms -> how many records
    lag_counts: Counter[int] = field(default_factory=Counter)
    max_lag_ms: float = 0.0
    time_to_stable_ms: int | None = None
    _availability: dict[TopicPartition, _PartitionAvailability] = field(default_factory=dict)
    _members_in_generation: int = 0
    _first_revoke_ms: int | None = None
    _pending_revoked: int = 0
    _pending_lost: int = 0
    _by_generation: dict[int, RebalanceRow] = field(default_factory=dict)
    _last_owner: dict[TopicPartition, str] = field(default_factory=dict)

    # ------------------------------------------------------------------ the log

    def event(
        self,
        time_ms: int,
        kind: str,
        member: str | None = None,
        *,
        generation: int | None = None,
        partitions: int | None = None,
        duration_ms: int | None = None,
        topic: str | None = None,
        partition: int | None = None,
        detail: str | None = None,
    ) -> None:
        self.events.append(
            (time_ms, kind, member, generation, partitions, duration_ms, topic, partition, detail)
        )

    # ------------------------------------------------------------------ coordinator side

    def on_rebalance_completed(self, event: RebalanceCompleted) -> None:
        row = RebalanceRow(
            generation=event.generation_id,
            reason=event.reason,
            protocol=event.protocol_name,
            leader=event.leader_id,
            started_ms=event.started_ms,
            completed_ms=event.completed_ms,
            members_before=self._members_in_generation,
            members_after=len(event.members),
            first_revoke_ms=self._first_revoke_ms,
            partitions_revoked=self._pending_revoked,
            partitions_lost=self._pending_lost,
            eager=self.eager,
        )
        self._members_in_generation = len(event.members)
        self._first_revoke_ms = None
        self._pending_revoked = self._pending_lost = 0
        self.rebalances.append(row)
        self._by_generation[row.generation] = row
        self.event(
            event.completed_ms,
            "rebalance_completed",
            event.leader_id,
            generation=event.generation_id,
            partitions=None,
            duration_ms=event.duration_ms,
            detail=event.reason,
        )

    def on_member_removed(self, event: MemberRemoved) -> None:
        if event.cause is RemovalCause.SESSION_TIMEOUT:
            self.members_expired_session += 1
        elif event.cause is RemovalCause.LEFT:
            self.members_left += 1
        else:
            self.members_not_rejoined += 1
        self.event(
            event.at_ms,
            "member_removed",
            # the process name: a static member's instance id; a dynamic member's id is
            # "<client id = name>-<n>" (SequentialMemberIds)
            event.group_instance_id or event.member_id.rpartition("-")[0],
            detail=f"{event.cause.value}: {event.reason}",
        )

    def on_stable(self, generation: int, now_ms: int) -> None:
        row = self._by_generation.get(generation)
        if row is None or row.stable_ms is not None:
            return
        row.stable_ms = now_ms
        if self.time_to_stable_ms is None:
            self.time_to_stable_ms = now_ms
        self.event(now_ms, "group_stable", generation=generation)

    # ------------------------------------------------------------------ member side

    def on_revoked(
        self, now_ms: int, member: str, partitions: int, generation: int, *, rebalance: bool = True
    ) -> None:
        """``rebalance=False``: a revocation that starts no rebalance (a static member's close
        sends no LeaveGroup); it is logged but not charged to whatever rebalance comes next."""
        if rebalance:
            if self._first_revoke_ms is None:
                self._first_revoke_ms = now_ms
            self._pending_revoked += partitions
        self.event(now_ms, "revoked", member, generation=generation, partitions=partitions)

    def on_lost(self, now_ms: int, member: str, partitions: int, generation: int) -> None:
        self._pending_lost += partitions
        self.event(now_ms, "lost", member, generation=generation, partitions=partitions)

    def on_assigned(
        self, now_ms: int, member: str, generation: int, added: frozenset[TopicPartition]
    ) -> None:
        row = self._by_generation.get(generation)
        moved = 0
        last_owner = self._last_owner
        for tp in added:
            previous = last_owner.get(tp)
            if previous is not None and previous != member:
                moved += 1
            last_owner[tp] = member
        if row is not None:
            row.partitions_moved += moved
            if row.last_assigned_ms is None or now_ms > row.last_assigned_ms:
                row.last_assigned_ms = now_ms
        self.event(now_ms, "assigned", member, generation=generation, partitions=len(added))

    # ------------------------------------------------------------------ availability

    def add_partitions(self, partitions: list[TopicPartition], now_ms: int) -> None:
        for tp in partitions:
            self._availability.setdefault(tp, _PartitionAvailability(unavailable_since=now_ms))

    def owner_started(self, tp: TopicPartition, now_ms: int) -> None:
        """An application began processing ``tp`` (it has it and knows where to start)."""
        state = self._availability[tp]
        state.active_owners += 1
        if state.unavailable_since is not None:
            self._end_unavailable(tp, state, now_ms, None)
            state.unavailable_since = None

    def owner_stopped(self, tp: TopicPartition, now_ms: int) -> None:
        state = self._availability[tp]
        state.active_owners -= 1
        assert state.active_owners >= 0, f"{tp}: more stops than starts"
        if state.active_owners == 0:
            state.unavailable_since = now_ms

    # ------------------------------------------------------------------ processing

    def processed(
        self,
        stream: PartitionStream,
        first_offset: int,
        completions_ms: list[float],
    ) -> None:
        """Records ``first_offset, first_offset + 1, ...`` finished at ``completions_ms``."""
        n = len(completions_ms)
        if not n:
            return
        self.records_processed += n
        end = first_offset + n
        seen_end = stream.processed_end
        if first_offset < seen_end:
            self.duplicates += min(end, seen_end) - first_offset
        if end > seen_end:
            counts = self.lag_counts
            start_ms, per_record = stream.start_ms, 1000.0 / stream.rate_per_s
            biggest = self.max_lag_ms
            for i in range(max(seen_end - first_offset, 0), n):
                lag = completions_ms[i] - (start_ms + (first_offset + i + 1) * per_record)
                counts[int(lag)] += 1
                if lag > biggest:
                    biggest = lag
            self.max_lag_ms = biggest
            stream.processed_end = end

    # ------------------------------------------------------------------ totals

    def _end_unavailable(
        self, tp: TopicPartition, state: _PartitionAvailability, now_ms: int, detail: str | None
    ) -> None:
        since = state.unavailable_since
        if since is not None and now_ms > since:
            state.unavailable_ms += now_ms - since
            self.event(
                since,
                "partition_unavailable",
                duration_ms=now_ms - since,
                topic=tp.topic,
                partition=tp.partition,
                detail=detail,
            )

    def close(self, end_ms: int, streams: dict[TopicPartition, PartitionStream]) -> None:
        """End of the run: close open unavailability intervals. Records that arrived but were
        never processed wait until the end at least: they enter the lag figures with that
        wait (censored), so an overloaded group's lag is not flattered by what it never
        reached."""
        for tp, state in self._availability.items():
            if state.unavailable_since is not None:
                self._end_unavailable(tp, state, end_ms, "open at the end of the run")
                state.unavailable_since = end_ms
        counts = self.lag_counts
        for stream in streams.values():
            arrived = stream.arrived(end_ms)
            if arrived <= stream.processed_end:
                continue
            per_record = 1000.0 / stream.rate_per_s
            for offset in range(stream.processed_end, arrived):
                lag = end_ms - (stream.start_ms + (offset + 1) * per_record)
                counts[int(lag)] += 1
                if lag > self.max_lag_ms:
                    self.max_lag_ms = lag
            self.unprocessed += arrived - stream.processed_end

    def lag_percentile(self, q: float) -> int:
        total = sum(self.lag_counts.values())
        if not total:
            return 0
        rank = max(1, math.ceil(total * q - 1e-9))
        seen = 0
        for lag in sorted(self.lag_counts):
            seen += self.lag_counts[lag]
            if seen >= rank:
                return max(lag, 0)
        return max(self.lag_counts)

    def unavailable_partition_ms(self) -> int:
        return sum(s.unavailable_ms for s in self._availability.values())

    def stop_the_world_ms(self) -> int:
        """Eager rebalances: from the first revocation to the last assignment of the
        generation (KIP-429's stop-the-world pause); cooperative ones pause no one."""
        total = 0
        for row in self.rebalances:
            if row.eager and row.first_revoke_ms is not None and row.last_assigned_ms is not None:
                total += max(row.last_assigned_ms - row.first_revoke_ms, 0)
        return total
