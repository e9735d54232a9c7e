"""``groupcoord serve --metrics-port PORT``: the server's numbers as Prometheus metrics at
``http://HOST:PORT/metrics``, through the ``prometheus_client`` library.

The HTTP server is prometheus_client's, on its own threads: a scrape never runs on the
event loop. At scrape time :class:`ServerCollector` copies the counters of
:class:`~groupcoord.server.stats.ServerStats` (plain numbers the loop updates) and asks
the loop, by a thread-safe call, for the groups' states and member counts (the
coordinator is the loop's alone; the call costs the loop one walk over the groups per
scrape). If the loop does not answer within :data:`GROUPS_TIMEOUT_S` (it is stopping,
or stalled) the scrape has no group gauges rather than hanging.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final
from wsgiref.simple_server import WSGIServer

from kio.schema.index import api_key_map
from prometheus_client import start_http_server
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from groupcoord.coordinator import GroupCoordinator
from groupcoord.server.stats import Histogram

if TYPE_CHECKING:
    from groupcoord.server.server import Server

__all__ = ["GROUPS_TIMEOUT_S", "MetricsEndpoint", "ServerCollector", "group_counts"]

GROUPS_TIMEOUT_S: Final = 5.0
_HEARTBEAT_KEY = 12
_OFFSET_COMMIT_KEY = 8


def group_counts(
    coordinator: GroupCoordinator,
) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """``({(type, state): groups}, {type: members})``; type is ``classic`` or
    ``consumer`` (KIP-848), state Kafka's name for it. Runs on the loop."""
    groups: dict[tuple[str, str], int] = {}
    members = {"classic": 0, "consumer": 0}
    for group_id in coordinator.group_ids():
        snapshot = coordinator.snapshot(group_id)
        if snapshot is None:
            continue
        key = ("classic", snapshot.state.value)
        groups[key] = groups.get(key, 0) + 1
        members["classic"] += len(snapshot.members)
    for group_id in coordinator.consumer_group_ids():
        consumer = coordinator.consumer_group_snapshot(group_id)
        if consumer is None:
            continue
        key = ("consumer", consumer.state.value)
        groups[key] = groups.get(key, 0) + 1
        members["consumer"] += len(consumer.members)
    return groups, members


def _buckets(
    histogram: Histogram, snapshot: tuple[list[int], float] | None = None
) -> tuple[list[tuple[str, float]], float]:
    counts, total = histogram.snapshot() if snapshot is None else snapshot
    bounds = [*map(str, histogram.bounds), "+Inf"]
    return list(zip(bounds, map(float, itertools.accumulate(counts)), strict=True)), total


def _api_name(api_key: int) -> str:
    return api_key_map.get(api_key, str(api_key))


class ServerCollector(Collector):
    """The metric families of one server (see the module docstring and the README)."""

    def __init__(self, server: Server, loop: asyncio.AbstractEventLoop) -> None:
        assert server.stats is not None
        self._server = server
        self._stats = server.stats
        self._loop = loop

    def collect(self) -> Iterable[Metric]:
        yield from self._groups()
        stats = self._stats
        # one copy of each histogram, so the counters derived from them agree with it
        requests = {key: (h, h.snapshot()) for key, h in stats.requests_by_key().items()}
        latency = HistogramMetricFamily(
            "groupcoord_request_latency_seconds",
            "Time from a request read to its reply ready, by API",
            labels=["api"],
        )
        for api_key, (histogram, snapshot) in sorted(requests.items()):
            buckets, total = _buckets(histogram, snapshot)
            latency.add_metric([_api_name(api_key)], buckets, total)
        yield latency
        for name, api_key, text in (
            ("groupcoord_heartbeats", _HEARTBEAT_KEY, "Heartbeat requests answered"),
            ("groupcoord_offset_commits", _OFFSET_COMMIT_KEY, "OffsetCommit requests answered"),
        ):
            answered = requests.get(api_key)
            yield CounterMetricFamily(
                name, text, value=0 if answered is None else sum(answered[1][0])
            )
        rebalances = CounterMetricFamily(
            "groupcoord_rebalances", "Completed rebalances, by what started them", labels=["reason"]
        )
        for kind, count in sorted(dict(stats.rebalances).items()):
            rebalances.add_metric([kind], count)
        yield rebalances
        duration = HistogramMetricFamily(
            "groupcoord_rebalance_duration_seconds",
            "From a group leaving Stable/Empty to its new generation",
        )
        buckets, total = _buckets(stats.rebalance_duration)
        duration.add_metric([], buckets, total)
        yield duration
        removed = CounterMetricFamily(
            "groupcoord_members_removed",
            "Members removed from groups, by cause (session_timeout and poll_timeout are expiries)",
            labels=["cause"],
        )
        for cause, count in sorted(dict(stats.members_removed).items()):
            removed.add_metric([cause], count)
        yield removed
        yield CounterMetricFamily(
            "groupcoord_bytes_received", "Request bytes read", value=stats.bytes_in
        )
        yield CounterMetricFamily(
            "groupcoord_bytes_sent", "Reply bytes written", value=stats.bytes_out
        )
        yield GaugeMetricFamily(
            "groupcoord_connections", "Open client connections", value=self._server.connections
        )
        yield from self._labelled(
            "groupcoord_connections_refused",
            "Connections closed at accept, by the limit they exceeded",
            "limit",
            stats.connections_refused,
        )
        yield from self._labelled(
            "groupcoord_connections_closed",
            "Connections the server closed, by reason (idle, write_timeout)",
            "reason",
            stats.connections_closed,
        )
        yield CounterMetricFamily(
            "groupcoord_authentication_failures",
            "Failed SASL authentications",
            value=stats.authentication_failures,
        )

    @staticmethod
    def _labelled(name: str, text: str, label: str, counts: dict[str, int]) -> Iterator[Metric]:
        family = CounterMetricFamily(name, text, labels=[label])
        for value, count in sorted(dict(counts).items()):
            family.add_metric([value], count)
        yield family

    def _groups(self) -> Iterator[Metric]:
        gateway = self._server.gateway
        if gateway is None:
            return

        async def counts() -> tuple[dict[tuple[str, str], int], dict[str, int]]:
            return group_counts(gateway.coordinator)

        try:
            future = asyncio.run_coroutine_threadsafe(counts(), self._loop)
            groups, members = future.result(GROUPS_TIMEOUT_S)
        except (RuntimeError, TimeoutError):  # the loop is closed or busy
            return
        family = GaugeMetricFamily(
            "groupcoord_groups", "Groups, by type and state", labels=["type", "state"]
        )
        for (kind, state), count in sorted(groups.items()):
            family.add_metric([kind, state], count)
        yield family
        member_family = GaugeMetricFamily(
            "groupcoord_group_members", "Members of groups, by group type", labels=["type"]
        )
        for kind, count in sorted(members.items()):
            member_family.add_metric([kind], count)
        yield member_family


class MetricsEndpoint:
    """prometheus_client's HTTP server for one :class:`Server` (its own registry, so two
    servers in one process do not mix their numbers)."""

    def __init__(self, httpd: WSGIServer, thread: threading.Thread) -> None:
        self._httpd = httpd
        self._thread = thread
        self.host: str = str(httpd.server_address[0])
        self.port: int = int(httpd.server_address[1])

    @classmethod
    def start(cls, server: Server, host: str, port: int) -> MetricsEndpoint:
        """Serve ``server``'s metrics on ``host``:``port`` (0: any free port); call on the
        server's loop."""
        registry = CollectorRegistry(auto_describe=False)
        registry.register(ServerCollector(server, asyncio.get_running_loop()))
        httpd, thread = start_http_server(port, host, registry)
        return cls(httpd, thread)

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
