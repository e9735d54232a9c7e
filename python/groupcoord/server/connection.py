"""One client connection: read frames, dispatch each at once, answer in order.

Requests are dispatched as soon as they are read, in the order they arrive (so a commit
followed by an offset fetch sees its commit). Their replies go into a per-connection
queue that the writer drains strictly in request order, as Kafka answers: a JoinGroup the
coordinator parks holds back later replies on *this* connection only. Other connections
have their own queues and never wait for it.

A frame that cannot be decoded (bad size prefix, malformed header or payload) is logged
with its reason and the connection closes; the server keeps serving everyone else.

Memory per connection is bounded: the reader stops reading while
:data:`MAX_QUEUED_REPLIES` replies, or ``max_buffered_bytes`` of reply frames (queued, and
in the socket's send buffer), wait to be sent, so a client that pipelines requests without
reading its answers only fills its own socket. A send that cannot finish within
``write_timeout_s`` (the client stopped reading) closes the connection at once, dropping
what it had not taken. Either way other connections never wait for it: each has its own
reader task and its own replies queue.

The writing side is not a task: replies go out from loop callbacks (the pump runs once
per loop iteration after requests were read, and from a parked reply's done-callback),
so an answer costs no task wake-up; only a client that reads slower than it is answered
gets a task, which waits for its send buffer to drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from time import perf_counter

from groupcoord.errors import InvalidRequestError
from groupcoord.protocol.wire import FrameBuffer
from groupcoord.security.acl import ANONYMOUS
from groupcoord.security.sasl import SaslSession
from groupcoord.server.dispatch import Dispatcher, Reply
from groupcoord.server.sasl_gate import sasl_frame
from groupcoord.server.stats import ServerStats

__all__ = ["Connection"]

log = logging.getLogger("groupcoord.server")

_END = object()  # queue sentinel: no more replies
_READ_CHUNK = 256 * 1024
#: Replies a connection may have queued before it stops reading: a client that pipelines
#: without reading its answers is held back here instead of growing the queue (Kafka
#: reads one request at a time per connection).
MAX_QUEUED_REPLIES = 1024
#: Default bound on reply bytes a connection holds (queued and in the send buffer) before
#: it stops reading: Kafka's ``socket.request.max.bytes`` (100 MiB) bounds one request; a
#: reply as large as the largest Fetch a client may ask (``fetch.max.bytes``, 50 MiB) still
#: goes out, it only pauses reading until it is sent.
DEFAULT_MAX_BUFFERED_BYTES = 4 * 1024 * 1024
#: Default time a send may wait for a client that does not read before the connection
#: closes (Kafka closes a connection whose send does not progress after
#: ``connections.max.idle.ms``; this is shorter because a never-reading client holds
#: its buffers all that time).
DEFAULT_WRITE_TIMEOUT_S = 60.0


class Connection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        dispatcher: Dispatcher,
        max_frame_bytes: int,
        *,
        sasl: SaslSession | None = None,
        principal: str = ANONYMOUS,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
        stats: ServerStats | None = None,
    ) -> None:
        """``sasl``: the connection is on a SASL listener and must authenticate first
        (:mod:`~groupcoord.server.sasl_gate`); ``principal``: who it is until then (a TLS
        client certificate's subject, or ANONYMOUS); ``stats``: where requests, bytes and
        SASL failures are counted (``None``: not counted)."""
        self._reader = reader
        self._max_buffered_bytes = max_buffered_bytes
        self._write_timeout_s = write_timeout_s
        self._stats = stats
        self._queued_bytes = 0  # reply frames in _replies and the writer's batch
        #: when the last request was read (time.monotonic), for connections.max.idle.ms
        self.last_request = time.monotonic()
        self._sasl = sasl
        self.principal = principal
        self._writer = writer
        # the send buffer pauses the writer well before the byte bound: the reader, not
        # the buffer, is what waits for a slow client (see _full)
        transport = writer.transport
        high = transport.get_write_buffer_limits()[1]
        if high > max_buffered_bytes // 2:
            transport.set_write_buffer_limits(high=max_buffered_bytes // 2)
        self._dispatcher = dispatcher
        self._max_frame_bytes = max_frame_bytes
        # replies in request order (a parked one stays at the head until it is ready)
        self._replies: deque[Reply | object] = deque()
        self._loop = asyncio.get_running_loop()
        self._pump_scheduled = False
        self._batch: list[bytes] = []  # replies ready back to back go out in one send
        self._drainer: asyncio.Future[None] | None = None  # waiting for a slow client
        self._finished = False  # the writing side is done (sent all, or gave up)
        #: resolved when the writing side is done
        self._writer_done: asyncio.Future[None] = self._loop.create_future()
        self._room = asyncio.Event()  # set when the queue shrinks below its limit
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        # Kafka reports a member's client host as the address with a leading slash
        self.client_host = f"/{peer[0]}" if isinstance(peer, tuple) else ""
        self.close_reason: str | None = None
        self._closing = False
        self._current: asyncio.Future[bytes | None] | None = None
        self._read_task: asyncio.Future[None] | None = None

    async def run(self) -> None:
        self._read_task = asyncio.ensure_future(self._read_requests())
        # a writing side that stops (the socket broke, a reply failed) ends the reading
        # too: requests read after it could never be answered
        self._writer_done.add_done_callback(self._stop_reading)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._read_task
        finally:
            self._push(_END)
            if self.close_reason is not None:
                if self._drainer is not None:
                    self._drainer.cancel()
                self._finish()
            else:
                # the client closed, or the server is shutting down: send every reply
                # that is ready, give up on those still parked (a JoinGroup, a long poll)
                self._cancel_unfinished()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await self._writer_done
            self._cancel_unfinished()
            if self.close_reason is not None:
                # a client that stopped reading would keep what is buffered for it (and
                # the socket) until it reads: drop it
                self._writer.transport.abort()
            self._writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.wait_closed()

    def _stop_reading(self, _: object = None) -> None:
        if self._read_task is not None:
            self._read_task.cancel()

    @property
    def buffered_bytes(self) -> int:
        """Reply bytes this connection holds: queued, batched, in the send buffer."""
        return self._queued_bytes + self._writer.transport.get_write_buffer_size()

    @property
    def idle(self) -> bool:
        """Nothing asked of this connection is unanswered (an idle timeout may close it)."""
        return not self._replies and (self._current is None or self._current.done())

    def close(self, reason: str) -> None:
        """Stop reading and close (shutdown); replies already complete are still sent."""
        self._closing = True
        self._stop_reading()
        log.debug("closing connection %s: %s", self.peer, reason, extra={"client": self.peer})

    async def _read_requests(self) -> None:
        reader = self._reader
        frames = FrameBuffer(self._max_frame_bytes)
        while not self._closing:
            try:
                data = await reader.read(_READ_CHUNK)
            except ConnectionError:
                return
            if not data:
                return  # the client closed (possibly mid-frame)
            self.last_request = time.monotonic()
            stats = self._stats
            if stats is not None:
                stats.bytes_in += len(data)
            try:
                complete = frames.feed(data)
            except InvalidRequestError as e:
                return self._abort(str(e))
            for frame in complete:
                if self._closing:
                    return
                try:
                    if self._sasl is not None:
                        gate = sasl_frame(frame, self._sasl)
                        if gate.delay_s:
                            await asyncio.sleep(gate.delay_s)
                        if gate.reply is not None:
                            self._push(gate.reply)
                        if self._sasl.principal is not None:
                            self.principal = self._sasl.principal
                        if gate.close_reason is not None:
                            if gate.delay_s and stats is not None:
                                stats.authentication_failures += 1
                            # the reply (if any) is sent before the connection closes
                            log.warning(
                                "closing connection %s: %s",
                                self.peer,
                                gate.close_reason,
                                extra={"client": self.peer},
                            )
                            return
                        if not gate.dispatch:
                            continue
                    if stats is None:
                        reply = self._dispatcher.dispatch(frame, self.client_host, self.principal)
                    else:
                        start = perf_counter()
                        reply = self._dispatcher.dispatch(frame, self.client_host, self.principal)
                        if type(reply) is bytes:
                            stats.request(frame[:2], perf_counter() - start)
                        elif isinstance(reply, asyncio.Future):
                            self.time_later(reply, frame[:2], start, stats)
                except InvalidRequestError as e:
                    return self._abort(str(e))
                except Exception as e:  # a handler bug must not take the server down
                    log.exception("request handling failed on %s", self.peer)
                    return self._abort(f"internal error: {type(e).__name__}")
                self._push(reply)
                # checked per request, not per read: one read may hold thousands of
                # small requests whose replies are large (ApiVersions, Metadata)
                if (
                    len(self._replies) >= MAX_QUEUED_REPLIES
                    or self._queued_bytes >= self._max_buffered_bytes
                ):
                    await self._wait_for_room()
            await self._wait_for_room()

    async def _wait_for_room(self) -> None:
        while self._full() and not self._closing:
            self._room.clear()
            await self._room.wait()

    @staticmethod
    def time_later(
        reply: asyncio.Future[bytes | None], api_key: bytes, start: float, stats: ServerStats
    ) -> None:
        """Count a parked request's latency once its reply is ready (or given up on)."""
        reply.add_done_callback(lambda _: stats.request(api_key, perf_counter() - start))

    def _full(self) -> bool:
        """Too much is waiting to be sent: read no more requests until it shrinks."""
        return (
            len(self._replies) >= MAX_QUEUED_REPLIES
            or self.buffered_bytes >= self._max_buffered_bytes
        )

    def _push(self, item: Reply | object) -> None:
        if type(item) is bytes:
            self._queued_bytes += len(item)
        self._replies.append(item)
        self._schedule_pump()

    def _abort(self, reason: str) -> None:
        self.close_reason = reason
        log.warning("closing connection %s: %s", self.peer, reason, extra={"client": self.peer})

    def _schedule_pump(self) -> None:
        # once per loop iteration: the replies of one read (often many) go out together
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self._loop.call_soon(self._pump)

    def _pump(self, _: object = None) -> None:
        """Send every reply at the head of the queue that is ready, in request order, up
        to the first one still being worked on (its completion calls this again). Runs as
        a loop callback, not a task: a reply that is ready when its request is read costs
        no task wake-up, and a parked one only a done-callback."""
        self._pump_scheduled = False
        if self._finished or self._drainer is not None:
            return
        current = self._current
        if current is not None and not current.done():
            return
        self._current = None
        replies = self._replies
        batch = self._batch
        popped = False
        while replies:
            item = replies[0]
            if item is _END:
                replies.popleft()
                self._finish_after_drain(errors=(ConnectionError, TimeoutError))
                return
            if isinstance(item, asyncio.Future):
                if not item.done():
                    self._current = item
                    item.add_done_callback(self._pump)
                    break
                replies.popleft()
                popped = True
                if item.cancelled():
                    # given up on at close: send what is ready before it and nothing
                    # after it (a later reply would answer the wrong request)
                    self._finish_after_drain(errors=(ConnectionError, TimeoutError))
                    return
                error = item.exception()
                if error is not None:
                    log.error(
                        "request handling failed on %s",
                        self.peer,
                        exc_info=error,
                        extra={"client": self.peer},
                    )
                    self._abort("internal error")
                    self._finish()
                    return
                data = item.result()
                if data is not None:
                    # counted from now: it stays in memory until sent
                    self._queued_bytes += len(data)
                    batch.append(data)
            else:
                replies.popleft()
                popped = True
                if item is not None:
                    assert isinstance(item, bytes)
                    batch.append(item)
        if popped:
            self._room.set()
        if not batch:
            return
        self._send(batch)
        transport = self._writer.transport
        if transport.get_write_buffer_size() > transport.get_write_buffer_limits()[1]:
            # the client reads slower than we answer: wait (in a task) for the buffer to
            # drain below its mark, or for the write timeout, before sending more
            self._drainer = asyncio.ensure_future(self._drain_then_pump())

    async def _drain_then_pump(self) -> None:
        try:
            await self._drain()
        except ConnectionError as e:
            self._abort(f"write failed: {e}")
            self._finish()
            return
        except TimeoutError:
            self._finish()
            return
        finally:
            self._drainer = None
        self._pump()

    def _finish_after_drain(self, errors: tuple[type[BaseException], ...]) -> None:
        """The last replies: send what is batched, let the buffer drain (errors in
        ``errors`` ignored), then end the writing side."""
        if self._batch:
            self._send(self._batch)

        async def drain() -> None:
            with contextlib.suppress(*errors):
                await self._drain()
            self._finish()

        self._drainer = asyncio.ensure_future(drain())

    def _finish(self) -> None:
        """No more replies go out on this connection (the reader is stopped too: requests
        read after this could never be answered)."""
        self._finished = True
        if not self._writer_done.done():
            self._writer_done.set_result(None)

    def _send(self, batch: list[bytes]) -> None:
        """Hand the batch to the transport (it now counts in its write buffer)."""
        data = b"".join(batch) if len(batch) > 1 else batch[0]
        self._queued_bytes -= sum(map(len, batch))
        batch.clear()
        self._writer.write(data)
        if self._stats is not None:
            self._stats.bytes_out += len(data)

    async def _drain(self) -> None:
        """Wait until the transport's buffer is below its high-water mark; a client that
        takes nothing for ``write_timeout_s`` raises TimeoutError."""
        writer = self._writer
        transport = writer.transport
        # the usual case, a buffer below the mark: drain() returns at once, no timer
        if transport.get_write_buffer_size() <= transport.get_write_buffer_limits()[1]:
            await writer.drain()
        else:
            try:
                async with asyncio.timeout(self._write_timeout_s):
                    await writer.drain()
            except TimeoutError:
                self._abort(
                    f"write timed out: the client took no reply bytes for "
                    f"{self._write_timeout_s:g} s"
                )
                if self._stats is not None:
                    self._stats.closed("write_timeout")
                raise
        self._room.set()  # the reader may be waiting for the buffer to shrink

    def _cancel_unfinished(self) -> None:
        # the queue keeps its items (and _END): the writer still sends the finished ones
        for item in (self._current, *self._replies):
            if isinstance(item, asyncio.Future) and not item.done():
                item.cancel()
