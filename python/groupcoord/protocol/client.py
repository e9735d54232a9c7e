"""The client side of a Kafka connection, sans-IO: requests out, matched responses in.

:class:`ClientCodec` numbers requests, remembers which (api, version) each correlation id
was, splits the incoming byte stream into frames and decodes each response with the
schema of its request. It never touches a socket: the caller writes what
:meth:`ClientCodec.encode` returns and feeds what it reads to :meth:`ClientCodec.feed`.
Group requests can go through :func:`~groupcoord.protocol.group_messages.to_kio_request`
first and their responses back through
:func:`~groupcoord.protocol.group_messages.from_kio_response`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from groupcoord.protocol.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameBuffer,
    MalformedFrameError,
    decode_response,
    encode_request,
    peek_correlation_id,
)

__all__ = ["ClientCodec", "ReceivedResponse"]

_MAX_CORRELATION_ID = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedResponse:
    """A decoded response and the request it answers."""

    correlation_id: int
    api_key: int
    api_version: int
    response: Any


class ClientCodec:
    """One connection's request numbering and response decoding."""

    __slots__ = ("_frames", "_in_flight", "_next_id", "client_id")

    def __init__(
        self, client_id: str | None = "groupcoord", max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    ) -> None:
        self.client_id = client_id
        self._next_id = 1
        self._in_flight: dict[int, tuple[int, int]] = {}
        self._frames = FrameBuffer(max_frame_bytes)

    @property
    def in_flight(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._in_flight)

    def encode(self, request: Any, *, expect_response: bool = True) -> tuple[int, bytes]:
        """``(correlation_id, frame)`` for a kio request. ``expect_response=False`` for
        requests the broker never answers (Produce with acks=0)."""
        api_key, version = int(request.__api_key__), int(request.__version__)
        correlation_id = self._next_id
        self._next_id = 1 if correlation_id == _MAX_CORRELATION_ID else correlation_id + 1
        frame = encode_request(api_key, version, correlation_id, self.client_id, request)
        if expect_response:
            self._in_flight[correlation_id] = (api_key, version)
        return correlation_id, frame

    def feed(self, data: bytes) -> list[ReceivedResponse]:
        """Every response completed by ``data``, in arrival order. A response to no
        request in flight, or one that cannot be decoded, raises
        :class:`~groupcoord.protocol.wire.MalformedFrameError` (the stream is unusable)."""
        out: list[ReceivedResponse] = []
        for frame in self._frames.feed(data):
            correlation_id = peek_correlation_id(frame)
            request = self._in_flight.pop(correlation_id, None)
            if request is None:
                raise MalformedFrameError(f"response to unknown correlation id {correlation_id}")
            api_key, version = request
            _, response = decode_response(api_key, version, frame)
            out.append(
                ReceivedResponse(
                    correlation_id=correlation_id,
                    api_key=api_key,
                    api_version=version,
                    response=response,
                )
            )
        return out
