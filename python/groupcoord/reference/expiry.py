"""Pure-Python reference of :class:`groupcoord.MemberExpiry`.

One heap of ``(deadline, group, member, kind_index)`` entries with lazy deletion (as in
:mod:`groupcoord.reference.timer`), a dict ``(group, member, kind_index) -> deadline`` and,
per group, a dict ``member -> number of pending kinds`` so ``remove_group`` touches only
that group. Tuple order on the heap is exactly the documented expiry order:
``(deadline_ms, group, member, kind)`` with ``str`` order for ids and SESSION < JOIN < SYNC.

Handles are plain counters handed out on first request and never reused (two dicts map
them to ``(group, member)`` and back), so a stale handle can never name another member;
they are forgotten with the member, exactly when the Rust table's generation moves on.

Behaviour, including errors, is the same as the Rust table's; see ``_core.pyi``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Final, Literal, NamedTuple, cast

from groupcoord.reference.timer import check_key, check_len, check_ms, ms_or_many, seq_arg

__all__ = ["JOIN", "KINDS", "SESSION", "SYNC", "Expired", "Kind", "MemberExpiry"]

Kind = Literal["session", "join", "sync"]

SESSION: Final = "session"
JOIN: Final = "join"
SYNC: Final = "sync"
# Declaration order is the tie-break order among kinds sharing a deadline.
KINDS: Final[tuple[Kind, Kind, Kind]] = (SESSION, JOIN, SYNC)
_KIND_INDEX: Final[dict[str, int]] = {SESSION: 0, JOIN: 1, SYNC: 2}

_I64_LIMIT = 1 << 63
_COMPACT_SLACK = 64
_NOT_LIVE = (
    "is not a live handle: its member has no pending deadline (it expired, was cleared or "
    "its group was removed), or it was never issued"
)


class Expired(NamedTuple):
    """One missed deadline (equal to the Rust ``Expired`` with the same fields)."""

    group: str
    member: str
    kind: Kind
    deadline_ms: int


def _str_arg(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    return value


def _kind_arg(value: object) -> int:
    if not isinstance(value, str):
        raise TypeError(
            f"kind must be one of 'session', 'join', 'sync' (str), not {type(value).__name__}"
        )
    index = _KIND_INDEX.get(value)
    if index is None:
        raise ValueError(f"kind must be one of 'session', 'join', 'sync', got {value!r}")
    return index


def _session_deadline(now: int, timeout: int) -> int:
    if timeout < 0:
        raise ValueError(f"session_timeout_ms must be >= 0, got {timeout}")
    deadline = now + timeout
    if deadline >= _I64_LIMIT:
        raise ValueError(
            f"now_ms + session_timeout_ms overflows a signed 64-bit integer ({now} + {timeout})"
        )
    return deadline


class MemberExpiry:
    """Reference per-(group, member) SESSION / JOIN / SYNC deadlines."""

    __slots__ = (
        "_deadlines",
        "_handle_of",
        "_heap",
        "_member_count",
        "_member_of",
        "_members",
        "_next_handle",
        "_now",
    )

    def __init__(self, now_ms: int = 0) -> None:
        self._now = check_ms(now_ms, "now_ms")
        self._deadlines: dict[tuple[str, str, int], int] = {}
        self._members: dict[str, dict[str, int]] = {}
        self._member_count = 0
        # Handles of tracked members that were asked for one, both ways.
        self._handle_of: dict[tuple[str, str], int] = {}
        self._member_of: dict[int, tuple[str, str]] = {}
        self._next_handle = 0
        # (deadline, group, member, kind index); live iff _deadlines holds that deadline.
        self._heap: list[tuple[int, str, str, int]] = []

    @property
    def now_ms(self) -> int:
        return self._now

    @property
    def member_count(self) -> int:
        return self._member_count

    @property
    def group_count(self) -> int:
        return len(self._members)

    def heartbeat(self, group: str, member: str, now_ms: int, session_timeout_ms: int) -> None:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        now = check_ms(now_ms, "now_ms")
        timeout = check_ms(session_timeout_ms, "session_timeout_ms")
        self._set(g, m, 0, _session_deadline(now, timeout))

    def heartbeat_many(
        self,
        groups: str | Iterable[str],
        members: Iterable[str],
        now_ms: int,
        session_timeout_ms: int | Iterable[int],
    ) -> None:
        # Validation order matches the Rust binding, so the first error reported is the same:
        # scalars, then both sequences taken whole, then their elements, then lengths.
        now = check_ms(now_ms, "now_ms")
        timeouts = ms_or_many(session_timeout_ms, "session_timeout_ms")
        member_items = list(seq_arg(members, "members"))
        single: str | None
        if isinstance(groups, str):
            single, group_items = groups, []
        else:
            single, group_items = None, list(seq_arg(groups, "groups"))
        ms = [_str_arg(m, f"members[{i}]") for i, m in enumerate(member_items)]
        n = len(ms)
        if single is not None:
            gs = [single] * n
        else:
            gs = [_str_arg(g, f"groups[{i}]") for i, g in enumerate(group_items)]
            if len(gs) != n:
                raise ValueError(f"groups has {len(gs)} elements but members has {n}")
        check_len(timeouts, "session_timeout_ms", n, "members")
        if isinstance(timeouts, int):
            deadline = _session_deadline(now, timeouts)
            deadlines = [deadline] * n
        else:
            deadlines = []
            for i, t in enumerate(timeouts):
                try:
                    deadlines.append(_session_deadline(now, t))
                except ValueError as e:
                    raise ValueError(f"session_timeout_ms[{i}]: {e}") from None
        for g, m, d in zip(gs, ms, deadlines, strict=True):
            self._set(g, m, 0, d)

    def handle(self, group: str, member: str) -> int:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        key = (g, m)
        h = self._handle_of.get(key)
        if h is not None:
            return h
        pending = self._members.get(g)
        if pending is None or m not in pending:
            raise KeyError(f"member {m!r} of group {g!r} has no pending deadline, so no handle")
        h = self._next_handle
        self._next_handle += 1
        self._handle_of[key] = h
        self._member_of[h] = key
        return h

    def heartbeat_handle(self, handle: int, now_ms: int, session_timeout_ms: int) -> None:
        h = check_key(handle, "handle")
        now = check_ms(now_ms, "now_ms")
        timeout = check_ms(session_timeout_ms, "session_timeout_ms")
        deadline = _session_deadline(now, timeout)
        key = self._member_of.get(h)
        if key is None:
            raise KeyError(f"{h} {_NOT_LIVE}")
        self._set(key[0], key[1], 0, deadline)

    def heartbeat_handles(
        self, handles: Iterable[int], now_ms: int, session_timeout_ms: int | Iterable[int]
    ) -> None:
        # Same validation order as the Rust binding (see heartbeat_many).
        hs = [check_key(h, f"handles[{i}]") for i, h in enumerate(seq_arg(handles, "handles"))]
        now = check_ms(now_ms, "now_ms")
        timeouts = ms_or_many(session_timeout_ms, "session_timeout_ms")
        check_len(timeouts, "session_timeout_ms", len(hs), "handles")
        if isinstance(timeouts, int):
            deadline = _session_deadline(now, timeouts)
            deadlines = [deadline] * len(hs)
        else:
            deadlines = []
            for i, t in enumerate(timeouts):
                try:
                    deadlines.append(_session_deadline(now, t))
                except ValueError as e:
                    raise ValueError(f"session_timeout_ms[{i}]: {e}") from None
        member_of = self._member_of
        keys = [member_of.get(h) for h in hs]
        if None in keys:
            i = keys.index(None)
            raise KeyError(f"handles[{i}]: {hs[i]} {_NOT_LIVE}")
        for (g, m), d in zip(cast("list[tuple[str, str]]", keys), deadlines, strict=True):
            self._set(g, m, 0, d)

    def expect_join(self, group: str, member: str, deadline_ms: int) -> None:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        self._set(g, m, 1, check_ms(deadline_ms, "deadline_ms"))

    def expect_sync(self, group: str, member: str, deadline_ms: int) -> None:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        self._set(g, m, 2, check_ms(deadline_ms, "deadline_ms"))

    def _set(self, group: str, member: str, kind: int, deadline: int) -> None:
        key = (group, member, kind)
        deadlines = self._deadlines
        old = deadlines.get(key)
        if old == deadline:
            return  # its live heap entry is already there
        deadlines[key] = deadline
        if old is None:
            pending = self._members.get(group)
            if pending is None:
                pending = self._members[group] = {}
            count = pending.get(member, 0)
            if count == 0:
                self._member_count += 1
            pending[member] = count + 1
        heap = self._heap
        heapq.heappush(heap, (deadline, group, member, kind))
        if len(heap) > 2 * len(deadlines) + _COMPACT_SLACK:
            self._heap = [(d, g, m, k) for (g, m, k), d in deadlines.items()]
            heapq.heapify(self._heap)

    def _forget(self, group: str, member: str) -> None:
        """One fewer pending kind for the member; drop it (and its group) at zero."""
        pending = self._members[group]
        count = pending[member] - 1
        if count:
            pending[member] = count
            return
        del pending[member]
        self._member_count -= 1
        if not pending:
            del self._members[group]
        if self._handle_of:
            self._drop_handle(group, member)

    def _drop_handle(self, group: str, member: str) -> None:
        h = self._handle_of.pop((group, member), None)
        if h is not None:
            del self._member_of[h]

    def clear(self, group: str, member: str, kind: Kind | None = None) -> bool:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        kinds = (0, 1, 2) if kind is None else (_kind_arg(kind),)
        cleared = False
        for k in kinds:
            if self._deadlines.pop((g, m, k), None) is not None:
                cleared = True
                self._forget(g, m)
        return cleared

    def remove_group(self, group: str) -> int:
        g = _str_arg(group, "group")
        pending = self._members.pop(g, None)
        if pending is None:
            return 0
        pop = self._deadlines.pop
        for m in pending:
            for k in (0, 1, 2):
                pop((g, m, k), None)
            if self._handle_of:
                self._drop_handle(g, m)
        self._member_count -= len(pending)
        return len(pending)

    def expire(self, now_ms: int) -> list[Expired]:
        now = check_ms(now_ms, "now_ms")
        if now < self._now:
            raise ValueError(
                f"time went backwards: now_ms={now} is before the current time {self._now}"
            )
        self._now = now
        heap = self._heap
        deadlines = self._deadlines
        out: list[Expired] = []
        while heap and heap[0][0] <= now:
            d, g, m, k = heapq.heappop(heap)
            key = (g, m, k)
            if deadlines.get(key) == d:
                del deadlines[key]
                self._forget(g, m)
                out.append(Expired(g, m, KINDS[k], d))
        return out

    def deadline(self, group: str, member: str, kind: Kind) -> int | None:
        g = _str_arg(group, "group")
        m = _str_arg(member, "member")
        return self._deadlines.get((g, m, _kind_arg(kind)))

    def next_deadline(self) -> int | None:
        heap = self._heap
        deadlines = self._deadlines
        while heap:
            d, g, m, k = heap[0]
            if deadlines.get((g, m, k)) == d:
                return d
            heapq.heappop(heap)
        return None

    def __len__(self) -> int:
        return len(self._deadlines)

    def __contains__(self, item: object) -> bool:
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError("expected a (group, member) tuple")
        g = _str_arg(item[0], "group")
        m = _str_arg(item[1], "member")
        pending = self._members.get(g)
        return pending is not None and m in pending

    def __repr__(self) -> str:
        return (
            f"MemberExpiry(now_ms={self._now}, groups={len(self._members)}, "
            f"members={self._member_count}, deadlines={len(self._deadlines)})"
        )
