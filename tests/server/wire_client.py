"""An asyncio Kafka client speaking kio messages, for server tests (and anyone's).

Not a test module. :class:`WireClient` wraps :class:`groupcoord.protocol.client.ClientCodec`
around an asyncio stream: ``send`` requests (pipelined as fast as you like), ``receive``
responses in arrival order, ``call`` for one round trip, ``send_raw`` for bytes the codec
would never produce (fuzzing, malformed frames).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

from groupcoord.protocol.client import ClientCodec, ReceivedResponse

#: no server test should wait longer than this for one response
RESPONSE_TIMEOUT_S = 20.0


class WireClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.codec = ClientCodec(client_id="wire-test")
        self._ready: list[ReceivedResponse] = []

    @classmethod
    async def connect(cls, host: str, port: int) -> WireClient:
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    async def send(self, request: Any, *, expect_response: bool = True) -> int:
        correlation_id, frame = self.codec.encode(request, expect_response=expect_response)
        self.writer.write(frame)
        await self.writer.drain()
        return correlation_id

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def receive(self, timeout_s: float = RESPONSE_TIMEOUT_S) -> ReceivedResponse:
        """The next response (raises TimeoutError, or EOFError if the server closed)."""
        async with asyncio.timeout(timeout_s):
            while not self._ready:
                data = await self.reader.read(65536)
                if not data:
                    raise EOFError("the server closed the connection")
                self._ready.extend(self.codec.feed(data))
        return self._ready.pop(0)

    async def receive_raw(self, timeout_s: float = RESPONSE_TIMEOUT_S) -> bytes:
        """One response frame body, undecoded (for replies the codec cannot read)."""
        async with asyncio.timeout(timeout_s):
            size = int.from_bytes(await self.reader.readexactly(4), "big", signed=True)
            return await self.reader.readexactly(size)

    async def call(self, request: Any) -> Any:
        correlation_id = await self.send(request)
        received = await self.receive()
        assert received.correlation_id == correlation_id
        return received.response

    async def closed_by_server(self, timeout_s: float = RESPONSE_TIMEOUT_S) -> bool:
        """True once the server has closed the connection (EOF or reset)."""
        async with asyncio.timeout(timeout_s):
            try:
                while await self.reader.read(65536):
                    pass
            except ConnectionError:
                pass
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


async def pipeline_without_reading(
    port: int, request: Any, count: int, *, receive_buffer: int = 4096
) -> asyncio.StreamWriter:
    """A client that pipelines ``count`` copies of ``request`` and never reads: a socket
    with a small receive buffer, written by the loop as the server takes the bytes. Abort
    the returned writer's transport to end it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    codec = ClientCodec(client_id="hog")
    frames = b"".join(codec.encode(request)[1] for _ in range(count))
    _, writer = await asyncio.open_connection(sock=sock)
    writer.write(frames)  # the loop sends it as the server reads; never awaited
    return writer
