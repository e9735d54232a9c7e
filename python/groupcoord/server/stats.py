"""What the server counts for ``--metrics-port``: plain integers and bucket lists updated on
the event loop.

Nothing here takes a lock or does I/O: the hot path (a Heartbeat read and answered) adds
an integer and a bisect, and the Prometheus exposition (:mod:`~groupcoord.server.metrics`)
reads copies of these numbers from its HTTP thread at scrape time. A copy of a dict or a
list is one C call under the GIL, so a scrape never sees a half-updated dict.

The coordinator's events come in as they do for the event log
(:meth:`ServerStats.attach` to the gateway); requests, bytes, connections and SASL
failures are counted by the connections and the listeners.
"""

from __future__ import annotations

import bisect
from typing import Final, Protocol

from groupcoord.coordinator import (
    MemberListener,
    MemberRemoved,
    RebalanceCompleted,
    RebalanceListener,
    RemovalCause,
)

__all__ = [
    "DURATION_BUCKETS_S",
    "LATENCY_BUCKETS_S",
    "Histogram",
    "ServerStats",
    "rebalance_kind",
    "removal_kind",
]

#: request latency buckets (seconds): a heartbeat is tens of microseconds, a parked
#: JoinGroup waits up to the rebalance timeout, a long-poll Fetch up to its max wait
LATENCY_BUCKETS_S: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
)  # fmt: skip
#: rebalance duration buckets (seconds): from an instant single-member rebalance to
#: Kafka's default max.poll.interval.ms (5 minutes) and beyond
DURATION_BUCKETS_S: Final = (
    0.01, 0.05, 0.1, 0.5, 1.0, 3.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
)  # fmt: skip

#: what the Java client says when it leaves because poll() was not called in time
_POLL_TIMEOUT_REASON = "poll timeout"

#: (substring of the coordinator's rebalance reason, kind), first match wins; the reasons
#: are the coordinator's sentences (join.py, membership.py, rebalance.py)
_REBALANCE_KINDS: Final = (
    ("static member", "static_member"),
    ("new member", "member_joined"),
    ("pending member", "member_joined"),
    ("metadata changed", "metadata_changed"),
    ("leader rejoins", "member_rejoined"),
    ("rejoin", "member_rejoined"),
    ("LeaveGroup", "member_left"),
    ("heartbeat expiration", "session_timeout"),
    ("did not send SyncGroup", "sync_timeout"),
    ("did not rejoin", "join_timeout"),
    ("group.max.size", "group_max_size"),
    ("failed to store", "store_failed"),
)


def rebalance_kind(reason: str) -> str:
    """A bounded label for a rebalance's free-text reason (``other`` if none fits)."""
    for needle, kind in _REBALANCE_KINDS:
        if needle in reason:
            return kind
    return "other"


def removal_kind(event: MemberRemoved) -> str:
    """Why a member was removed: its cause, with a LeaveGroup the client sent because its
    poll timer expired (KIP-800 reason) told apart as ``poll_timeout``."""
    if event.cause is RemovalCause.LEFT and _POLL_TIMEOUT_REASON in event.reason:
        return "poll_timeout"
    return event.cause.value


class Histogram:
    """Observations counted per bucket (not cumulative) plus their sum."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound belongs to that bucket (le="bound")
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def snapshot(self) -> tuple[list[int], float]:
        return list(self.counts), self.total


class EventSource(Protocol):
    def add_rebalance_listener(self, listener: RebalanceListener) -> None: ...

    def add_member_listener(self, listener: MemberListener) -> None: ...


class ServerStats:
    """The server's counters (see the module docstring); all times in seconds."""

    def __init__(self) -> None:
        #: a frame's first two bytes (its api key) -> latency histogram of its requests
        #: (read to reply ready); keyed by the bytes, not the int: no decoding per request
        self.requests: dict[bytes, Histogram] = {}
        self.bytes_in = 0
        self.bytes_out = 0
        #: failed SASL authentications (wrong password, unknown user, bad token)
        self.authentication_failures = 0
        #: connections closed at accept, by limit (max_connections, max_connections_per_ip)
        self.connections_refused: dict[str, int] = {}
        #: connections closed by the server, by reason (idle, write_timeout)
        self.connections_closed: dict[str, int] = {}
        #: rebalance kind (:func:`rebalance_kind`) -> count
        self.rebalances: dict[str, int] = {}
        self.rebalance_duration = Histogram(DURATION_BUCKETS_S)
        #: removal kind (:func:`removal_kind`) -> count
        self.members_removed: dict[str, int] = {}

    def attach(self, source: EventSource) -> None:
        source.add_rebalance_listener(self.on_rebalance)
        source.add_member_listener(self.on_member_removed)

    def on_rebalance(self, event: RebalanceCompleted) -> None:
        kind = rebalance_kind(event.reason)
        self.rebalances[kind] = self.rebalances.get(kind, 0) + 1
        self.rebalance_duration.observe(event.duration_ms / 1000)

    def on_member_removed(self, event: MemberRemoved) -> None:
        kind = removal_kind(event)
        self.members_removed[kind] = self.members_removed.get(kind, 0) + 1

    def request(self, api_key: bytes, seconds: float) -> None:
        """One request of ``api_key`` (a frame's first two bytes) answered in ``seconds``;
        the histogram's observe is inlined: this runs for every request."""
        histogram = self.requests.get(api_key)
        if histogram is None:
            histogram = self.requests[api_key] = Histogram(LATENCY_BUCKETS_S)
        histogram.counts[bisect.bisect_left(LATENCY_BUCKETS_S, seconds)] += 1
        histogram.total += seconds

    def answered_at_once(self, api_key: bytes, count: int) -> None:
        """``count`` requests of ``api_key`` answered on the native shell's I/O thread as
        they were read (well under the first bucket's 100 µs, so counted there)."""
        if count:
            histogram = self.requests.get(api_key)
            if histogram is None:
                histogram = self.requests[api_key] = Histogram(LATENCY_BUCKETS_S)
            histogram.counts[0] += count

    def observed_elsewhere(self, api_key: bytes, counts: list[int], total: float) -> None:
        """Requests of ``api_key`` timed on the native shell's I/O thread: ``counts`` per
        bucket of :data:`LATENCY_BUCKETS_S` (the last +Inf) and their sum ``total``."""
        if any(counts):
            histogram = self.requests.get(api_key)
            if histogram is None:
                histogram = self.requests[api_key] = Histogram(LATENCY_BUCKETS_S)
            for bucket, count in enumerate(counts):
                histogram.counts[bucket] += count
            histogram.total += total

    def requests_by_key(self) -> dict[int, Histogram]:
        """:attr:`requests` by api key number."""
        return {
            int.from_bytes(key, "big", signed=True): h for key, h in dict(self.requests).items()
        }

    def refused(self, limit: str) -> None:
        self.connections_refused[limit] = self.connections_refused.get(limit, 0) + 1

    def closed(self, reason: str) -> None:
        self.connections_closed[reason] = self.connections_closed.get(reason, 0) + 1
