"""A PLAINTEXT listener served by the native shell (``groupcoord serve``'s default; not
with ``--no-native-io``).

:class:`groupcoord._core.NetShell` runs the listener's sockets on a Rust thread, off the
GIL: it accepts, reads, splits frames, writes replies in each connection's request order,
answers the heartbeats of members the coordinator admitted, and takes their common
OffsetCommits (:mod:`~groupcoord.server.native_heartbeats`): those the loop hands to the
coordinator to persist when the shell wakes it (or before the next request), and the
shell answers each once its write is reported. Every other frame comes here in batches:
the event loop is woken through the shell's ``notify_fd``, :meth:`NativeListener._on_ready`
dispatches the batch with the same :class:`~groupcoord.server.dispatch.Dispatcher` as the
asyncio connections (:mod:`~groupcoord.server.connection`), and hands the replies back in
one call. A reply the coordinator parks (a JoinGroup) goes back when its future resolves;
the shell holds the connection's later replies until then.

What differs from the asyncio listener: no TLS or SASL (those listeners stay asyncio);
``max.connections`` and ``max.connections.per.ip`` count this listener's connections only;
a frame the dispatcher cannot read closes the connection without sending the replies still
held behind a parked one (the asyncio connection does the same).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import defaultdict
from functools import partial
from time import perf_counter
from typing import Any

from groupcoord._core import ConnectionLimits, NetShell
from groupcoord.errors import InvalidRequestError
from groupcoord.protocol.heartbeat_codec import HEARTBEAT_API_KEY
from groupcoord.protocol.offset_commit_codec import OFFSET_COMMIT_API_KEY
from groupcoord.security.acl import ANONYMOUS
from groupcoord.server.connection import Connection
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.stats import LATENCY_BUCKETS_S, ServerStats

__all__ = ["NativeListener", "bind_listener"]

log = logging.getLogger("groupcoord.server")

#: the shell's refusal counters and the limit (Kafka's name) each counts
_REFUSALS = (("refused", "max.connections"), ("refused_per_ip", "max.connections.per.ip"))

#: frames dispatched per loop callback before the rest waits for the next (so timers and
#: other listeners get the loop between batches)
MAX_BATCH = 4096
#: how often the shell's counters go into the statistics when nothing else brings them
STATS_INTERVAL_S = 1.0
_HEARTBEAT_KEY = HEARTBEAT_API_KEY.to_bytes(2, "big")
_COMMIT_KEY = OFFSET_COMMIT_API_KEY.to_bytes(2, "big")
#: how the shell's reasons for closes that are nobody's fault start
_ORDINARY_CLOSES = ("the client closed", "idle", "the server is shutting down")
#: how the reason starts when the shell's thread stopped on its own: one ERROR line says
#: it for the listener (not a warning per connection)
_SHELL_STOPPED = "the I/O thread stopped"


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (its first address), as asyncio binds
    (SO_REUSEADDR, the system's largest accept backlog)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(socket.SOMAXCONN)
    except BaseException:
        sock.close()
        raise
    return sock


class NativeListener:
    """One listener's connections, served by a :class:`~groupcoord._core.NetShell`."""

    def __init__(
        self,
        sock: socket.socket,
        dispatcher: Dispatcher,
        *,
        now_ms: int,
        max_frame_bytes: int,
        answer_natively: bool,
        offset_metadata_max_bytes: int,
        max_buffered_bytes: int,
        write_timeout_ms: int,
        idle_ms: int | None,
        limits: ConnectionLimits | None,
        stats: ServerStats | None = None,
    ) -> None:
        """``sock``: bound and listening (the shell takes it over); ``answer_natively``:
        the shell may answer admitted members' heartbeats and take their commits (not
        with an authorizer, which must see every request); ``limits``: the server's
        connection limits, which this listener's connections count in (None: none)."""
        versions = dispatcher.versions
        host, port = sock.getsockname()[:2]
        #: where it listens, as the logs name it
        self.address = f"{host}:{port}"
        self.shell = NetShell(
            sock.detach(),
            now_ms=now_ms,
            max_frame_bytes=max_frame_bytes,
            heartbeat_versions=versions.get(HEARTBEAT_API_KEY) if answer_natively else None,
            commit_versions=versions.get(OFFSET_COMMIT_API_KEY) if answer_natively else None,
            offset_metadata_max_bytes=offset_metadata_max_bytes,
            latency_bounds_s=list(LATENCY_BUCKETS_S),
            max_buffered_bytes=max_buffered_bytes,
            write_timeout_ms=write_timeout_ms,
            idle_ms=idle_ms,
            limits=limits,
        )
        self._dispatcher = dispatcher
        self._stats = stats
        #: open connections: id -> (the client host as Kafka reports it, "/address";
        #: "address:port", as the logs name connections)
        self._clients: dict[int, tuple[str, str]] = {}
        #: replies still being worked on, per connection (cancelled when it closes)
        self._parked: defaultdict[int, set[asyncio.Future[bytes | None]]] = defaultdict(set)
        self._counted = dict.fromkeys(
            ("bytes_in", "bytes_out", "refused", "refused_per_ip", "heartbeats_answered"), 0
        )
        #: the taken commits' latency counts and sum as of the last count
        self._commit_latencies: tuple[list[int], float] = ([0] * (len(LATENCY_BUCKETS_S) + 1), 0.0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._backlog: list[tuple[int, int, bytes]] = []
        self._counting: asyncio.TimerHandle | None = None
        #: replies ready since the last hand-over: they go to the shell together once per
        #: loop iteration (one lock and one wake-up of its thread for all of them)
        self._ready: list[tuple[int, int, bytes | None]] = []
        #: requests parked since the last hand-over (their replies come later)
        self._parked_now: list[tuple[int, int]] = []

    @property
    def connections(self) -> int:
        return len(self._clients)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.shell.notify_fd, self._on_ready)
        self._count_every_second()

    def _count_every_second(self) -> None:
        """The shell's counters into the statistics and refusals into the log, once a
        second rather than per batch (most heartbeats never come to Python): a scrape is
        at most a second behind, and a flood of refused connections is one line a second,
        as on the asyncio listeners."""
        self._count()
        assert self._loop is not None
        self._counting = self._loop.call_later(STATS_INTERVAL_S, self._count_every_second)

    def _on_ready(self) -> None:
        opened, frames, closed = self.shell.take()
        # the commits the shell took: stored now or when the writer is free; any frame
        # read after them that reaches the coordinator stores them first
        self._dispatcher.groups.shell_commits_taken()
        clients = self._clients
        for conn, address, port in opened:
            peer = f"{address}:{port}"
            clients[conn] = (f"/{address}", peer)
            # as the asyncio listeners log theirs
            log.debug(
                "connection from %s (PLAINTEXT)",
                peer,
                extra={"client": peer, "listener": "PLAINTEXT"},
            )
        self._backlog.extend(frames)
        self._dispatch_backlog()
        for conn, reason in closed:
            self._forget(conn, reason)
        if (failure := self.shell.failure) is not None:
            # its connections were closed above; new ones are refused from now on. Its
            # thread is gone and with it the other end of notify_fd, which now reads EOF,
            # readable forever: stop watching it (this runs, and logs, once)
            assert self._loop is not None
            self._loop.remove_reader(self.shell.notify_fd)
            log.error("the listener on %s stopped serving: %s", self.address, failure)

    def _dispatch_backlog(self) -> None:
        backlog = self._backlog
        batch, self._backlog = backlog[:MAX_BATCH], backlog[MAX_BATCH:]
        if self._backlog and self._loop is not None:
            self._loop.call_soon(self._dispatch_backlog)
        dispatch = self._dispatcher.dispatch
        stats = self._stats
        clients = self._clients
        replies = self._ready  # emptied in place by _hand_over, never rebound
        for conn, seq, frame in batch:
            client = clients.get(conn)
            if client is None:
                continue  # closed on our side after a bad frame
            host = client[0]
            try:
                if stats is None:
                    reply = dispatch(frame, host, ANONYMOUS)
                else:
                    start = perf_counter()
                    reply = dispatch(frame, host, ANONYMOUS)
                    if type(reply) is bytes:
                        stats.request(frame[:2], perf_counter() - start)
                    elif isinstance(reply, asyncio.Future):
                        Connection.time_later(reply, frame[:2], start, stats)
            except InvalidRequestError as e:
                self._close(conn, str(e))
                continue
            except Exception as e:  # a handler bug must not take the server down
                peer = client[1]
                log.exception("request handling failed on %s", peer, extra={"client": peer})
                self._close(conn, f"internal error: {type(e).__name__}")
                continue
            if reply is None or type(reply) is bytes:
                replies.append((conn, seq, reply))
            else:
                assert isinstance(reply, asyncio.Future)
                self._parked[conn].add(reply)
                self._parked_now.append((conn, seq))
                reply.add_done_callback(partial(self._later, conn, seq))
        self._hand_over()

    def _hand_over(self) -> None:
        # emptied in place: a batch being dispatched appends to the same lists
        if self._ready or self._parked_now:
            self.shell.reply_many(self._ready, self._parked_now)
            self._ready.clear()
            self._parked_now.clear()

    def _later(self, conn: int, seq: int, reply: asyncio.Future[bytes | None]) -> None:
        parked = self._parked.get(conn)
        if parked is None or reply not in parked:
            return  # the connection is gone
        parked.discard(reply)
        if reply.cancelled():
            # given up on (shutdown): a later reply would answer the wrong request
            self._close(conn, "a parked request was given up")
            return
        error = reply.exception()
        if error is not None:
            peer = self._clients.get(conn, ("", "?"))[1]
            log.error("request handling failed on %s", peer, exc_info=error, extra={"client": peer})
            self._close(conn, "internal error")
            return
        if not self._ready and self._loop is not None:
            self._loop.call_soon(self._hand_over)
        self._ready.append((conn, seq, reply.result()))

    def _close(self, conn: int, reason: str) -> None:
        self._hand_over()  # what is ready before the close still goes out
        self.shell.close_connection(conn, reason)
        self._forget(conn, reason)

    def _forget(self, conn: int, reason: str) -> None:
        client = self._clients.pop(conn, None)
        if client is not None:
            peer = client[1]
            if reason.startswith(_ORDINARY_CLOSES) or reason.startswith(_SHELL_STOPPED):
                log.debug("connection %s closed: %s", peer, reason, extra={"client": peer})
            else:  # a bad frame, a failed read or write: as the asyncio shell logs
                log.warning("closing connection %s: %s", peer, reason, extra={"client": peer})
            if self._stats is not None:
                # the shell's reasons start with what the asyncio connections count
                for kind in ("idle", "write_timeout"):
                    if reason.startswith(kind):
                        self._stats.closed(kind)
        for reply in self._parked.pop(conn, ()):
            reply.cancel()

    def _count(self) -> None:
        counters = self.shell.counters()
        delta = {name: counters[name] - seen for name, seen in self._counted.items()}
        self._counted = {name: counters[name] for name in self._counted}
        for counter, limit in _REFUSALS:
            if refused := delta[counter]:
                log.warning(
                    "refused %d connection(s) on the native listener %s: %s reached",
                    refused,
                    self.address,
                    limit,
                )
        stats = self._stats
        if stats is None:
            return
        stats.bytes_in += delta["bytes_in"]
        stats.bytes_out += delta["bytes_out"]
        for counter, limit in _REFUSALS:
            for _ in range(delta[counter]):
                stats.refused(limit)
        stats.answered_at_once(_HEARTBEAT_KEY, delta["heartbeats_answered"])
        counts, total = counters["commit_latency_counts"], counters["commit_latency_total_s"]
        seen_counts, seen_total = self._commit_latencies
        self._commit_latencies = (counts, total)
        new = [n - seen for n, seen in zip(counts, seen_counts, strict=True)]
        stats.observed_elsewhere(_COMMIT_KEY, new, total - seen_total)

    def counters(self) -> dict[str, Any]:
        """The shell's running totals (bytes, connections, heartbeats answered and commits
        taken natively)."""
        return self.shell.counters()

    def close(self) -> None:
        """Stop accepting and reading, send what is ready, close every connection."""
        if self._loop is not None:
            self._loop.remove_reader(self.shell.notify_fd)
        if self._counting is not None:
            self._counting.cancel()
        for conn in list(self._parked):
            self._forget(conn, "server shutdown")
        self._clients.clear()
        self.shell.stop()
