"""Pure-Python reference of :class:`groupcoord.TimerWheel`.

A binary heap of ``(deadline, key)`` entries plus a dict ``key -> deadline``, with lazy
deletion: rescheduling or cancelling only updates the dict, and an entry popped from the
heap counts only if the dict still holds that deadline for that key. The heap is rebuilt
from the dict when stale entries outnumber live ones, so memory stays O(live keys) and
every operation stays O(log n) amortized. This is how a careful Python programmer writes a
timer queue (it is also what ``asyncio``'s scheduler does for cancelled handles); it is the
oracle for the property tests and the baseline for the benchmarks.

Behaviour, including errors, is the same as the Rust wheel's; see ``_core.pyi``.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Iterable

__all__ = [
    "TimerWheel",
    "check_key",
    "check_len",
    "check_ms",
    "int_arg",
    "ms_or_many",
    "seq_arg",
]

_U64_LIMIT = 1 << 64
_I64_MIN = -(1 << 63)
_I64_LIMIT = 1 << 63

# Rebuild the heap once it holds this many more entries than twice the live keys.
_COMPACT_SLACK = 64


def int_arg(value: object, what: str) -> int:
    """``value`` as an int: ints and ``__index__`` objects; bool and the rest are TypeError."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an int, not bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None


def check_key(value: object, what: str = "key") -> int:
    """A timer key: an int in ``[0, 2**64)``."""
    key = int_arg(value, what)
    if not 0 <= key < _U64_LIMIT:
        raise ValueError(f"{what} must be a non-negative integer below 2**64, got {key}")
    return key


def check_ms(value: object, what: str) -> int:
    """A millisecond value: an int in ``[-2**63, 2**63)``."""
    ms = int_arg(value, what)
    if not _I64_MIN <= ms < _I64_LIMIT:
        raise ValueError(f"{what} must fit in a signed 64-bit integer (milliseconds), got {ms}")
    return ms


def seq_arg(value: object, what: str) -> Iterable[object]:
    """``value`` as an iterable of elements, refusing a lone str/bytes (the classic slip)."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a sequence, not a single {type(value).__name__}")
    if not isinstance(value, Iterable):
        raise TypeError(f"{what} must be a sequence, not {type(value).__name__}")
    return value


def _is_scalar(value: object) -> bool:
    # Same rule as the Rust binding: an int, or an ``__index__`` object that is not a
    # sequence (numpy arrays define ``__index__`` too, but are sequences).
    cls = type(value)
    return isinstance(value, int) or (hasattr(cls, "__index__") and not hasattr(cls, "__getitem__"))


def ms_or_many(value: object, what: str) -> int | list[int]:
    """One millisecond value for every element, or a list with one per element."""
    if _is_scalar(value):
        return check_ms(value, what)
    return [check_ms(v, f"{what}[{i}]") for i, v in enumerate(seq_arg(value, what))]


def check_len(value: int | list[int], what: str, n: int, of: str) -> None:
    """A per-element ``ms_or_many`` result must have one value per element."""
    if isinstance(value, list) and len(value) != n:
        raise ValueError(f"{what} has {len(value)} elements but {of} has {n}")


def _backwards(now: int, current: int) -> ValueError:
    return ValueError(f"time went backwards: now_ms={now} is before the current time {current}")


class TimerWheel:
    """Reference timer queue of integer keys; same API and results as the Rust wheel."""

    __slots__ = ("_deadlines", "_heap", "_now")

    def __init__(self, now_ms: int = 0) -> None:
        self._now = check_ms(now_ms, "now_ms")
        self._deadlines: dict[int, int] = {}
        # (deadline, key); an entry is live iff self._deadlines.get(key) == deadline.
        self._heap: list[tuple[int, int]] = []

    @property
    def now_ms(self) -> int:
        return self._now

    def schedule(self, key: int, deadline_ms: int) -> None:
        self._set(check_key(key), check_ms(deadline_ms, "deadline_ms"))

    def schedule_many(self, keys: Iterable[int], deadline_ms: int | Iterable[int]) -> None:
        ks = [check_key(k, f"keys[{i}]") for i, k in enumerate(seq_arg(keys, "keys"))]
        ds = ms_or_many(deadline_ms, "deadline_ms")
        check_len(ds, "deadline_ms", len(ks), "keys")
        if isinstance(ds, int):
            for k in ks:
                self._set(k, ds)
        else:
            for k, d in zip(ks, ds, strict=True):
                self._set(k, d)

    def _set(self, key: int, deadline: int) -> None:
        deadlines = self._deadlines
        if deadlines.get(key) == deadline:
            return  # its live heap entry is already there
        deadlines[key] = deadline
        heap = self._heap
        heapq.heappush(heap, (deadline, key))
        if len(heap) > 2 * len(deadlines) + _COMPACT_SLACK:
            self._heap = [(d, k) for k, d in deadlines.items()]
            heapq.heapify(self._heap)

    def cancel(self, key: int) -> bool:
        return self._deadlines.pop(check_key(key), None) is not None

    def cancel_many(self, keys: Iterable[int]) -> int:
        ks = [check_key(k, f"keys[{i}]") for i, k in enumerate(seq_arg(keys, "keys"))]
        pop = self._deadlines.pop
        return sum(pop(k, None) is not None for k in ks)

    def advance(self, now_ms: int) -> list[int]:
        now = check_ms(now_ms, "now_ms")
        if now < self._now:
            raise _backwards(now, self._now)
        self._now = now
        heap = self._heap
        deadlines = self._deadlines
        fired: list[int] = []
        while heap and heap[0][0] <= now:
            deadline, key = heapq.heappop(heap)
            if deadlines.get(key) == deadline:
                del deadlines[key]
                fired.append(key)
        return fired

    def deadline(self, key: int) -> int | None:
        return self._deadlines.get(check_key(key))

    def next_deadline(self) -> int | None:
        heap = self._heap
        deadlines = self._deadlines
        while heap:
            deadline, key = heap[0]
            if deadlines.get(key) == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._deadlines)

    def __contains__(self, key: object) -> bool:
        return int_arg(key, "key") in self._deadlines

    def __repr__(self) -> str:
        return f"TimerWheel(now_ms={self._now}, scheduled={len(self._deadlines)})"
