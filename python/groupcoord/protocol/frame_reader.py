"""What the hand-written request codecs (``offset_commit_codec``,
``consumer_heartbeat_codec``) share: a cursor over a frame that reads fixed-width fields,
and the exception that sends a frame to the generic (kio) path. Each codec's reader adds
the string and length encodings of its API's versions."""

from __future__ import annotations

import struct

__all__ = ["FrameReader", "Unusual"]

_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")


class Unusual(Exception):
    """Not the common case: the generic path decides (and reports what is wrong)."""


class FrameReader:
    __slots__ = ("frame", "pos")

    def __init__(self, frame: bytes, pos: int) -> None:
        self.frame = frame
        self.pos = pos

    def _take(self, n: int) -> int:
        """The offset of the next ``n`` bytes, which the cursor then passes."""
        start = self.pos
        end = start + n
        if end > len(self.frame):
            raise Unusual
        self.pos = end
        return start

    def int32(self) -> int:
        return int(_INT32.unpack_from(self.frame, self._take(4))[0])

    def int64(self) -> int:
        return int(_INT64.unpack_from(self.frame, self._take(8))[0])
