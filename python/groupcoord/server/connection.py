"""One client connection: read frames, dispatch each at once, answer in order.

Requests are dispatched as soon as they are read, in the order they arrive (so a commit
followed by an offset fetch sees its commit). Their replies go into a per-connection
queue that the writer drains strictly in request order, as Kafka answers: a JoinGroup the
coordinator parks holds back later replies on *this* connection only. Other connections
have their own queues and never wait for it.

A frame that cannot be decoded (bad size prefix, malformed header or payload) is logged
with its reason and the connection closes; the server keeps serving everyone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from groupcoord.errors import InvalidRequestError
from groupcoord.protocol.wire import FrameBuffer
from groupcoord.security.acl import ANONYMOUS
from groupcoord.security.sasl import SaslSession
from groupcoord.server.dispatch import Dispatcher, Reply
from groupcoord.server.sasl_gate import sasl_frame

__all__ = ["Connection"]

log = logging.getLogger("groupcoord.server")

_END = object()  # queue sentinel: no more replies
_READ_CHUNK = 256 * 1024
#: Replies a connection may have queued before it stops reading: a client that pipelines
#: without reading its answers is held back here instead of growing the queue (Kafka
#: reads one request at a time per connection).
MAX_QUEUED_REPLIES = 1024


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
    ) -> None:
        """``sasl``: the connection is on a SASL listener and must authenticate first
        (:mod:`~groupcoord.server.sasl_gate`); ``principal``: who it is until then (a TLS
        client certificate's subject, or ANONYMOUS)."""
        self._reader = reader
        self._sasl = sasl
        self.principal = principal
        self._writer = writer
        self._dispatcher = dispatcher
        self._max_frame_bytes = max_frame_bytes
        # replies in request order; _more is set whenever one is appended
        self._replies: deque[Reply | object] = deque()
        self._more = asyncio.Event()
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
        writer_task = asyncio.ensure_future(self._write_replies())
        self._read_task = asyncio.ensure_future(self._read_requests())
        # a writer that stops (the socket broke, a reply failed) ends the reading too:
        # requests read after it could never be answered
        writer_task.add_done_callback(self._stop_reading)
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._read_task
        finally:
            self._push(_END)
            if self.close_reason is not None:
                writer_task.cancel()
            else:
                # the client closed, or the server is shutting down: send every reply
                # that is ready, give up on those still parked (a JoinGroup, a long poll)
                self._cancel_unfinished()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await writer_task
            self._cancel_unfinished()
            self._writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.wait_closed()

    def _stop_reading(self, _: object = None) -> None:
        if self._read_task is not None:
            self._read_task.cancel()

    def close(self, reason: str) -> None:
        """Stop reading and close (shutdown); replies already complete are still sent."""
        self._closing = True
        self._stop_reading()
        log.debug("closing connection %s: %s", self.peer, reason)

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
                            # the reply (if any) is sent before the connection closes
                            log.warning("closing connection %s: %s", self.peer, gate.close_reason)
                            return
                        if not gate.dispatch:
                            continue
                    reply = self._dispatcher.dispatch(frame, self.client_host, self.principal)
                except InvalidRequestError as e:
                    return self._abort(str(e))
                except Exception as e:  # a handler bug must not take the server down
                    log.exception("request handling failed on %s", self.peer)
                    return self._abort(f"internal error: {type(e).__name__}")
                self._push(reply)
            while len(self._replies) >= MAX_QUEUED_REPLIES and not self._closing:
                self._room.clear()
                await self._room.wait()

    def _push(self, item: Reply | object) -> None:
        self._replies.append(item)
        self._more.set()

    def _abort(self, reason: str) -> None:
        self.close_reason = reason
        log.warning("closing connection %s: %s", self.peer, reason)

    async def _write_replies(self) -> None:
        writer = self._writer
        batch: list[bytes] = []  # replies ready back to back go out in one send
        while True:
            while not self._replies:
                self._more.clear()
                await self._more.wait()
            item = self._replies.popleft()
            self._room.set()
            if item is _END:
                if batch:
                    writer.write(b"".join(batch))
                    await writer.drain()
                return
            if isinstance(item, asyncio.Future):
                self._current = item
                try:
                    data = await item
                except asyncio.CancelledError:
                    if not item.cancelled():
                        raise
                    # given up on at close: send what is ready before it and nothing
                    # after it (a later reply would answer the wrong request)
                    if batch:
                        writer.write(b"".join(batch))
                        with contextlib.suppress(ConnectionError):
                            await writer.drain()
                    return
                except Exception:
                    log.exception("request handling failed on %s", self.peer)
                    self._abort("internal error")
                    return
            else:
                data = item
            if data is not None:
                assert isinstance(data, bytes)
                batch.append(data)
            replies = self._replies
            while replies and type(replies[0]) is bytes:  # answered at once: no checks
                batch.append(replies.popleft())  # type: ignore[arg-type]
            if not batch or self._next_is_ready():
                continue
            writer.write(b"".join(batch) if len(batch) > 1 else batch[0])
            batch.clear()
            try:
                await writer.drain()
            except ConnectionError as e:
                self._abort(f"write failed: {e}")
                return

    def _next_is_ready(self) -> bool:
        if not self._replies:
            return False
        item = self._replies[0]
        return not isinstance(item, asyncio.Future) or item.done()

    def _cancel_unfinished(self) -> None:
        # the queue keeps its items (and _END): the writer still sends the finished ones
        for item in (self._current, *self._replies):
            if isinstance(item, asyncio.Future) and not item.done():
                item.cancel()
