"""One client connection: an :class:`asyncio.Protocol` that splits the bytes it receives
into frames, dispatches each at once, and answers in request order.

Requests are dispatched as soon as their frame is complete, synchronously in
``data_received``, in the order they arrive (so a commit followed by an offset fetch sees
its commit). Their replies go into a per-connection queue sent strictly in request order,
as Kafka answers: a JoinGroup the coordinator parks holds back later replies on *this*
connection only. Other connections have their own queues and never wait for it.

A frame that cannot be decoded (bad size prefix, malformed header or payload) is logged
with its reason and the connection closes; the server keeps serving everyone else.

Memory per connection is bounded: the connection stops reading (``pause_reading``) while
:data:`MAX_QUEUED_REPLIES` replies, or ``max_buffered_bytes`` of reply frames (queued, and
in the socket's send buffer), wait to be sent, so a client that pipelines requests without
reading its answers only fills its own socket. A send that cannot finish within
``write_timeout_s`` (the client stopped reading: the transport paused our writing and did
not resume it) closes the connection at once, dropping what it had not taken. Either way
other connections never wait for it.

Nothing here is a task: a request costs one ``data_received`` call, and its replies go
out from a loop callback (the pump runs once per loop iteration after requests were read,
and from a parked reply's done-callback) with ``transport.write``. A profile of the
StreamReader version this replaced spent its time in the reader task's wake-ups and the
stream's buffering, per request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from time import perf_counter
from typing import Any, cast

from groupcoord.errors import InvalidRequestError
from groupcoord.protocol.wire import FrameBuffer
from groupcoord.security.acl import ANONYMOUS
from groupcoord.security.sasl import SaslSession
from groupcoord.server.dispatch import Dispatcher, Reply
from groupcoord.server.sasl_gate import GateAnswer, sasl_frame
from groupcoord.server.stats import ServerStats

__all__ = ["Admit", "Connection"]

log = logging.getLogger("groupcoord.server")

_END = object()  # queue sentinel: no more replies
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

#: What the server says about a new connection (called once its transport is up, TLS
#: handshake done): ``None`` refuses it (it is aborted), else who it is (its principal
#: until it authenticates) and its SASL session (``None``: not a SASL listener).
Admit = Callable[["Connection", asyncio.BaseTransport], "tuple[str, SaslSession | None] | None"]


class Connection(asyncio.Protocol):
    def __init__(
        self,
        dispatcher: Dispatcher,
        max_frame_bytes: int,
        *,
        admit: Admit | None = None,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
        write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
        stats: ServerStats | None = None,
    ) -> None:
        """``admit``: asked when the connection opens (see :data:`Admit`; ``None``:
        everyone is anonymous, no SASL); ``stats``: where requests, bytes and SASL
        failures are counted (``None``: not counted)."""
        self._dispatcher = dispatcher
        self._frames = FrameBuffer(max_frame_bytes)
        self._admit = admit
        self._max_buffered_bytes = max_buffered_bytes
        self._write_timeout_s = write_timeout_s
        self._stats = stats
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._tls = False
        self._sasl: SaslSession | None = None
        self.principal = ANONYMOUS
        self.peer = "?"
        self.client_host = ""
        #: when the last request was read (time.monotonic), for connections.max.idle.ms
        self.last_request = time.monotonic()
        self.close_reason: str | None = None
        #: resolved once the transport is closed (the connection is gone)
        self.closed: asyncio.Future[None] = self._loop.create_future()
        # reading side
        self._reading = True  # requests are still read (False once reading ended)
        self._read_paused = False
        self._pending: deque[bytes] = deque()  # frames read, not dispatched yet
        self._held = False  # dispatching waits: for room, or a SASL failure's delay
        self._waiting_for_room = False
        self._sasl_timer: asyncio.TimerHandle | None = None
        # writing side: replies in request order (a parked one stays at the head until
        # it is ready)
        self._replies: deque[Reply | object] = deque()
        self._queued_bytes = 0  # reply frames in _replies and the batch
        self._current: asyncio.Future[bytes | None] | None = None
        self._pump_scheduled = False
        self._dispatching = False  # _dispatch_pending is running (it sends at its end)
        self._batch: list[bytes] = []  # replies ready back to back go out in one send
        self._write_paused = False  # the transport's buffer is above its high-water mark
        #: run once the send buffer drained (None: not waiting for it); ``final``: it
        #: was the last send (errors only end the connection)
        self._after_drain: Callable[[], None] | None = None
        self._drain_final = False
        self._drain_timer: asyncio.TimerHandle | None = None
        self._finished = False  # the writing side is done (sent all, or gave up)

    # ------------------------------------------------------------------ transport events

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # create_server hands a stream transport: the cast says so to the type checker
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        self._tls = transport.get_extra_info("sslcontext") is not None
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        # Kafka reports a member's client host as the address with a leading slash
        self.client_host = f"/{peer[0]}" if isinstance(peer, tuple) else ""
        # the send buffer pauses the writing well before the byte bound: reading, not
        # the buffer, is what waits for a slow client (see _full)
        high = transport.get_write_buffer_limits()[1]
        if high > self._max_buffered_bytes // 2:
            transport.set_write_buffer_limits(high=self._max_buffered_bytes // 2)
        if self._admit is not None:
            admitted = self._admit(self, transport)
            if admitted is None:
                self._reading = False
                self._finished = True
                transport.abort()
                return
            self.principal, self._sasl = admitted

    def data_received(self, data: bytes) -> None:
        if not self._reading:
            return
        self.last_request = time.monotonic()
        if self._stats is not None:
            self._stats.bytes_in += len(data)
        try:
            frames = self._frames.feed(data)
        except InvalidRequestError as e:
            self._abort(str(e))
            self._end_reading()
            return
        if frames:
            self._pending.extend(frames)
            self._dispatch_pending()

    def eof_received(self) -> bool:
        # the client closed (possibly mid-frame): send every reply that is ready, give up
        # on those still parked; a plain socket stays half-open for that (TLS cannot)
        self._end_reading()
        return not self._tls

    def connection_lost(self, exc: Exception | None) -> None:
        if self._after_drain is not None and not self._drain_final:
            self._abort(f"write failed: {exc or 'connection lost'}")
        self._end_reading()
        self._finish()  # nothing more can be sent
        if not self.closed.done():
            self.closed.set_result(None)

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        then = self._after_drain
        if then is not None:
            self._stop_waiting_for_drain()
            then()

    # ------------------------------------------------------------------ for the server

    @property
    def buffered_bytes(self) -> int:
        """Reply bytes this connection holds: queued, batched, in the send buffer."""
        transport = self._transport
        in_buffer = 0 if transport is None else transport.get_write_buffer_size()
        return self._queued_bytes + in_buffer

    @property
    def idle(self) -> bool:
        """Nothing asked of this connection is unanswered (an idle timeout may close it)."""
        return not self._replies and (self._current is None or self._current.done())

    def close(self, reason: str) -> None:
        """Stop reading and close (shutdown); replies already complete are still sent."""
        log.debug("closing connection %s: %s", self.peer, reason, extra={"client": self.peer})
        self._end_reading()

    def abort(self) -> None:
        """Close at once, dropping what is not sent (a shutdown that waited long enough)."""
        if self._transport is not None:
            self._transport.abort()

    # ------------------------------------------------------------------ reading side

    def _dispatch_pending(self) -> None:
        """Dispatch the frames read, in order, until one must wait (for room to queue
        its reply, or a SASL failure's delay); reading pauses while one waits."""
        pending = self._pending
        self._dispatching = True
        while pending and self._reading and not self._held:
            self._request(pending.popleft())
            # checked per request, not per read: one read may hold thousands of small
            # requests whose replies are large (ApiVersions, Metadata)
            if self._held:
                break  # a SASL failure's delay
            if (
                len(self._replies) >= MAX_QUEUED_REPLIES
                or self._queued_bytes >= self._max_buffered_bytes
            ) and self._full():
                self._wait_for_room()
        self._dispatching = False
        if self._replies and not self._pump_scheduled:
            if self._held:
                self._schedule_pump()
            else:
                # the replies of this read that are ready go out now, in one send: no
                # loop turn in between (a heartbeat is answered within its read)
                self._pump()
        if self._reading and not self._held and self._full():
            self._wait_for_room()

    def _request(self, frame: bytes, gate: GateAnswer | None = None) -> None:
        """Dispatch one frame (``gate``: its SASL answer, given after that answer's
        delay) and queue its reply."""
        stats = self._stats
        try:
            if self._sasl is not None:
                if gate is None:
                    gate = sasl_frame(frame, self._sasl)
                    if gate.delay_s:
                        self._hold()
                        self._sasl_timer = self._loop.call_later(
                            gate.delay_s, self._after_delay, frame, gate
                        )
                        return
                if not self._through_gate(gate):
                    return
            if stats is None:
                reply = self._dispatcher.dispatch(frame, self.client_host, self.principal)
            else:
                start = perf_counter()
                reply = self._dispatcher.dispatch(frame, self.client_host, self.principal)
                if type(reply) is bytes:
                    stats.request(frame[:2], perf_counter() - start)
                elif isinstance(reply, asyncio.Future):
                    self._time_later(reply, frame[:2], start, stats)
        except InvalidRequestError as e:
            self._abort(str(e))
            self._end_reading()
            return
        except Exception as e:  # a handler bug must not take the server down
            log.exception("request handling failed on %s", self.peer)
            self._abort(f"internal error: {type(e).__name__}")
            self._end_reading()
            return
        self._push(reply)

    def _through_gate(self, gate: GateAnswer) -> bool:
        """Act on a SASL answer; True: the frame goes on to the dispatcher."""
        assert self._sasl is not None
        if gate.reply is not None:
            self._push(gate.reply)
        if self._sasl.principal is not None:
            self.principal = self._sasl.principal
        if gate.close_reason is not None:
            if gate.delay_s and self._stats is not None:
                self._stats.authentication_failures += 1
            # the reply (if any) is sent before the connection closes
            log.warning(
                "closing connection %s: %s",
                self.peer,
                gate.close_reason,
                extra={"client": self.peer},
            )
            self._end_reading()
            return False
        return gate.dispatch

    def _after_delay(self, frame: bytes, gate: GateAnswer) -> None:
        self._sasl_timer = None
        self._held = False
        self._request(frame, gate)
        self._go_on()

    def _hold(self) -> None:
        """Dispatch nothing more, and read nothing more, until :meth:`_go_on`."""
        self._held = True
        if not self._read_paused and self._transport is not None:
            self._read_paused = True
            self._transport.pause_reading()

    def _go_on(self) -> None:
        """Dispatch what was held back, then read again (unless it must wait again)."""
        self._dispatch_pending()
        if self._reading and not self._held and self._read_paused:
            self._read_paused = False
            assert self._transport is not None
            self._transport.resume_reading()

    def _wait_for_room(self) -> None:
        self._waiting_for_room = True
        self._hold()

    def _room_freed(self) -> None:
        """Replies left the queue or the send buffer: a reading side waiting for room
        goes on if there is some now."""
        if self._waiting_for_room and not self._full():
            self._waiting_for_room = False
            self._held = False
            self._go_on()

    @staticmethod
    def _time_later(
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

    def _abort(self, reason: str) -> None:
        self.close_reason = reason
        log.warning("closing connection %s: %s", self.peer, reason, extra={"client": self.peer})

    def _end_reading(self) -> None:
        """No more requests (the client closed, a bad frame, shutdown, or the writing
        side ended: requests read after it could never be answered)."""
        if not self._reading:
            return
        self._reading = False
        self._pending.clear()
        if self._sasl_timer is not None:
            self._sasl_timer.cancel()
            self._sasl_timer = None
        transport = self._transport
        if not self._read_paused and transport is not None and not transport.is_closing():
            self._read_paused = True
            transport.pause_reading()
        self._push(_END)
        if self.close_reason is not None:
            self._finish()
        else:
            # the client closed, or the server is shutting down: send every reply that
            # is ready, give up on those still parked (a JoinGroup, a long poll)
            self._cancel_unfinished()

    # ------------------------------------------------------------------ writing side

    def _push(self, item: Reply | object) -> None:
        if type(item) is bytes:
            self._queued_bytes += len(item)
        self._replies.append(item)
        # while a read's requests are dispatched, its replies wait for the end of the
        # read (and go out together); otherwise once per loop iteration
        if not self._dispatching and not self._pump_scheduled:
            self._schedule_pump()

    def _schedule_pump(self) -> None:
        self._pump_scheduled = True
        self._loop.call_soon(self._pump)

    def _pump(self, _: object = None) -> None:
        """Send every reply at the head of the queue that is ready, in request order, up
        to the first one still being worked on (its completion calls this again). Runs as
        a loop callback: a reply that is ready when its request is read costs no task
        wake-up, and a parked one only a done-callback."""
        self._pump_scheduled = False
        if self._finished or self._after_drain is not None:
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
                self._finish_after_drain()
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
                    self._finish_after_drain()
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
        if batch:
            self._send(batch)
            if self._write_paused:
                # the client reads slower than we answer: send more once the buffer
                # drained below its mark, or give up after the write timeout
                self._wait_for_drain(self._drained, final=False)
        if popped:
            self._room_freed()

    def _drained(self) -> None:
        self._room_freed()
        self._pump()

    def _finish_after_drain(self) -> None:
        """The last replies: send what is batched, let the buffer drain, then end the
        writing side."""
        if self._batch:
            self._send(self._batch)
        if self._write_paused:
            self._wait_for_drain(self._finish, final=True)
        else:
            self._finish()

    def _wait_for_drain(self, then: Callable[[], None], *, final: bool) -> None:
        self._after_drain = then
        self._drain_final = final
        self._drain_timer = self._loop.call_later(self._write_timeout_s, self._write_timed_out)

    def _stop_waiting_for_drain(self) -> None:
        self._after_drain = None
        if self._drain_timer is not None:
            self._drain_timer.cancel()
            self._drain_timer = None

    def _write_timed_out(self) -> None:
        self._drain_timer = None
        self._abort(
            f"write timed out: the client took no reply bytes for {self._write_timeout_s:g} s"
        )
        if self._stats is not None:
            self._stats.closed("write_timeout")
        self._finish()

    def _finish(self) -> None:
        """No more replies go out on this connection: stop reading too (requests read
        after this could never be answered) and close; a connection closing for a
        reason (a bad frame, a client that stopped reading) drops what is unsent."""
        if self._finished:
            return
        self._finished = True
        self._stop_waiting_for_drain()
        self._end_reading()
        self._cancel_unfinished()
        transport = self._transport
        if transport is not None:
            if self.close_reason is not None:
                # a client that stopped reading would keep what is buffered for it (and
                # the socket) until it reads: drop it
                transport.abort()
            else:
                transport.close()

    def _send(self, batch: list[bytes]) -> None:
        """Hand the batch to the transport (it now counts in its write buffer)."""
        data = b"".join(batch) if len(batch) > 1 else batch[0]
        self._queued_bytes -= sum(map(len, batch))
        batch.clear()
        assert self._transport is not None
        self._transport.write(data)
        if self._stats is not None:
            self._stats.bytes_out += len(data)

    def _cancel_unfinished(self) -> None:
        # the queue keeps its items (and _END): the pump still sends the finished ones
        item: Any
        for item in (self._current, *self._replies):
            if isinstance(item, asyncio.Future) and not item.done():
                item.cancel()
