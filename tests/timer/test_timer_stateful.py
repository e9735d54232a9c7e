"""Rust TimerWheel / MemberExpiry against the pure-Python reference, step by step.

Hypothesis drives both implementations with the same random sequences of operations and
asserts identical results after every step: return values, the exceptions raised, and the
observable state (len, membership, per-key deadlines, next deadline). The strategies aim at
the wheel's edges: deadlines equal to now or in the past, every level boundary (powers of
two ±1), gaps of days between advances, int64 extremes, rescheduling earlier and later, and
keys reused after they expired.
"""

from __future__ import annotations

import os
from array import array
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import groupcoord
from groupcoord import JOIN, SESSION, SYNC
from groupcoord.reference import expiry as ref_expiry
from groupcoord.reference import timer as ref_timer

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
DAY_MS = 86_400_000

# Hypothesis' own data generation dominates the cost here (~1 ms per step); the default
# keeps the suite to a few seconds. Deeper runs: GROUPCOORD_STATEFUL_EXAMPLES=2000 pytest ...
SETTINGS = settings(
    max_examples=int(os.environ.get("GROUPCOORD_STATEFUL_EXAMPLES", "60")),
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Offsets from the current time. Level boundaries of the wheel are powers of 64; powers of
# two ±1 hit every one of them and every bit in between.
offsets = st.one_of(
    st.just(0),
    st.integers(-100, -1),
    st.integers(1, 150),
    st.integers(0, 62).flatmap(lambda b: st.integers(2**b - 2, 2**b + 2)),
    st.integers(1, 400).map(lambda d: d * DAY_MS),
    st.sampled_from([I64_MIN, I64_MAX]),
)
# How far an advance moves: mostly small, sometimes across levels, sometimes days.
steps = st.one_of(
    st.integers(0, 130),
    st.integers(0, 40).flatmap(lambda b: st.integers(2**b - 1, 2**b + 1)),
    st.integers(1, 30).map(lambda d: d * DAY_MS),
)
# A small pool so keys collide, get rescheduled and are reused after expiring; plus keys
# that take the wheel's sparse (hash map) path.
keys = st.one_of(st.integers(0, 15), st.sampled_from([2**64 - 1, 2**63, 2**40 + 3]))


def clamp(ms: int) -> int:
    return max(I64_MIN, min(I64_MAX, ms))


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    """A call's result, or the type of exception it raised (messages are compared in the
    example-based tests; here the point is that both sides fail the same way)."""
    try:
        return ("ok", fn(*args))
    except (TypeError, ValueError, KeyError) as e:
        return ("error", type(e).__name__)


class WheelComparison(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.rust = groupcoord.TimerWheel(0)
        self.ref = ref_timer.TimerWheel(0)
        self.seen: set[int] = set()

    def both(self, method: str, *args: Any) -> Any:
        got = outcome(getattr(self.rust, method), *args)
        want = outcome(getattr(self.ref, method), *args)
        assert got == want, f"{method}{args}: rust {got} != reference {want}"
        return got[1]

    @rule(start=st.sampled_from([0, -5_000, 1_700_000_000_000, I64_MIN, I64_MAX - DAY_MS]))
    @precondition(lambda self: len(self.ref) == 0 and self.now == 0)
    def restart_at(self, start: int) -> None:
        self.now = start
        self.rust = groupcoord.TimerWheel(start)
        self.ref = ref_timer.TimerWheel(start)

    @rule(key=keys, offset=offsets)
    def schedule(self, key: int, offset: int) -> None:
        self.seen.add(key)
        self.both("schedule", key, clamp(self.now + offset))

    @rule(
        batch=st.lists(st.tuples(keys, offsets), max_size=12),
        form=st.sampled_from(["list", "tuple", "array", "scalar", "generator"]),
    )
    def schedule_many(self, batch: list[tuple[int, int]], form: str) -> None:
        ks = [k for k, _ in batch]
        ds = [clamp(self.now + o) for _, o in batch]
        self.seen.update(ks)
        if form == "scalar":
            d = ds[0] if ds else self.now
            self.both("schedule_many", ks, d)
        elif form == "array":
            self.both("schedule_many", array("Q", ks), array("q", ds))
        elif form == "tuple":
            self.both("schedule_many", tuple(ks), tuple(ds))
        elif form == "generator":
            got = self.rust.schedule_many((k for k in ks), (d for d in ds))
            want = self.ref.schedule_many((k for k in ks), (d for d in ds))
            assert got == want
        else:
            self.both("schedule_many", ks, ds)

    @rule(key=keys)
    def cancel(self, key: int) -> None:
        self.both("cancel", key)

    @rule(batch=st.lists(keys, max_size=6))
    def cancel_many(self, batch: list[int]) -> None:
        self.both("cancel_many", batch)

    @rule(step=steps)
    def advance(self, step: int) -> None:
        self.now = clamp(self.now + step)
        fired = self.both("advance", self.now)
        assert len(fired) == len(set(fired)), "a key fired twice"

    @rule(back=st.integers(1, 10**6))
    @precondition(lambda self: self.now > I64_MIN + 10**6)
    def advance_backwards_is_refused(self, back: int) -> None:
        assert self.both("advance", self.now - back) == "ValueError"

    @rule(
        bad=st.sampled_from(
            [(-1, 0), (2**64, 0), (None, 0), (1.5, 0), (True, 0), (1, None), (1, 2**63), (1, "5")]
        )
    )
    def bad_input(self, bad: tuple[object, object]) -> None:
        self.both("schedule", *bad)
        self.both("schedule_many", [bad[0]], bad[1])

    @invariant()
    def same_state(self) -> None:
        assert len(self.rust) == len(self.ref)
        assert self.rust.now_ms == self.ref.now_ms
        for k in self.seen:
            assert (k in self.rust) == (k in self.ref)
            assert self.rust.deadline(k) == self.ref.deadline(k)

    @invariant()
    def same_next_deadline(self) -> None:
        assert self.rust.next_deadline() == self.ref.next_deadline()


TestWheelComparison = WheelComparison.TestCase
TestWheelComparison.settings = SETTINGS


GROUPS = ["g0", "g1", "", "grüppe", "\udc80x"]
MEMBERS = ["m0", "m1", "consumer-1-0f8e6a1c-5d3b-4c1e-9a7e-2b6f1d4c8e90", "\U0001f600", "\udcff"]
groups = st.sampled_from(GROUPS)
members = st.sampled_from(MEMBERS)
kinds = st.sampled_from([SESSION, JOIN, SYNC])
timeouts = st.one_of(st.integers(0, 200), st.sampled_from([6_000, 45_000, 300_000]))


class ExpiryComparison(RuleBasedStateMachine):
    """Handles are opaque and numbered differently by the two sides (the Rust table packs a
    slot and its generation, the reference counts), so the machine keeps every handle pair
    it was given, (rust, reference), and later passes each side its own, including pairs
    gone stale by expiry, clear or remove_group, and ones whose Rust slot was reused."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.rust = groupcoord.MemberExpiry(0)
        self.ref = ref_expiry.MemberExpiry(0)
        self.handles: list[tuple[int, int]] = []
        self.handle_owner: dict[tuple[int, int], tuple[str, str]] = {}

    def both_by_handle(self, method: str, pairs: list[tuple[int, int]], *args: Any) -> Any:
        """``method`` with the Rust handles on the Rust table and the reference's on the
        reference; a list of pairs becomes each side's list (the batch form)."""
        got = outcome(getattr(self.rust, method), [r for r, _ in pairs], *args)
        want = outcome(getattr(self.ref, method), [f for _, f in pairs], *args)
        assert got == want, f"{method}{pairs, args}: rust {got} != reference {want}"
        return got[1]

    def both(self, method: str, *args: Any) -> Any:
        got = outcome(getattr(self.rust, method), *args)
        want = outcome(getattr(self.ref, method), *args)
        assert got == want, f"{method}{args}: rust {got} != reference {want}"
        return got[1]

    @rule(group=groups, member=members, offset=offsets, timeout=timeouts)
    def heartbeat(self, group: str, member: str, offset: int, timeout: int) -> None:
        # The heartbeat's own timestamp may be anywhere, even before the table's time.
        self.both("heartbeat", group, member, clamp(self.now + offset), timeout)

    @rule(
        batch=st.lists(st.tuples(groups, members, timeouts), max_size=10),
        one_group=st.booleans(),
        one_timeout=st.booleans(),
        offset=st.integers(-50, 50),
    )
    def heartbeat_many(
        self, batch: list[tuple[str, str, int]], one_group: bool, one_timeout: bool, offset: int
    ) -> None:
        gs: str | list[str] = GROUPS[0] if one_group else [g for g, _, _ in batch]
        ms = [m for _, m, _ in batch]
        ts: int | array[int] = 100 if one_timeout else array("q", [t for _, _, t in batch])
        self.both("heartbeat_many", gs, ms, self.now + offset, ts)

    @rule(group=groups, member=members)
    def handle(self, group: str, member: str) -> None:
        got = outcome(self.rust.handle, group, member)
        want = outcome(self.ref.handle, group, member)
        assert got[0] == want[0], f"handle({group!r}, {member!r}): rust {got} != ref {want}"
        if got[0] == "error":
            assert got == want == ("error", "KeyError")
            return
        pair = (got[1], want[1])
        assert 0 <= pair[0] < 2**63
        # A live member keeps its handle: asking again gives the same one on both sides.
        assert (self.rust.handle(group, member), self.ref.handle(group, member)) == pair
        self.handles.append(pair)
        self.handle_owner[pair] = (group, member)

    @rule(pick=st.integers(0, 2**16), offset=st.integers(-50, 50), timeout=timeouts)
    @precondition(lambda self: self.handles)
    def heartbeat_handle(self, pick: int, offset: int, timeout: int) -> None:
        rust_h, ref_h = self.handles[pick % len(self.handles)]
        args = (clamp(self.now + offset), timeout)
        got = outcome(self.rust.heartbeat_handle, rust_h, *args)
        want = outcome(self.ref.heartbeat_handle, ref_h, *args)
        assert got == want, f"heartbeat_handle{rust_h, ref_h, args}: rust {got} != ref {want}"

    @rule(
        picks=st.lists(st.integers(0, 2**16), max_size=8),
        per_item=st.booleans(),
        offset=st.integers(-50, 50),
        buffer=st.booleans(),
    )
    @precondition(lambda self: self.handles)
    def heartbeat_handles(
        self, picks: list[int], per_item: bool, offset: int, buffer: bool
    ) -> None:
        pairs = [self.handles[p % len(self.handles)] for p in picks]
        ts: int | list[int] = [(p * 7) % 300 for p in picks] if per_item else 100
        rust_hs: list[int] | array[int] = [r for r, _ in pairs]
        ref_hs: list[int] | array[int] = [f for _, f in pairs]
        if buffer:
            rust_hs, ref_hs = array("q", rust_hs), array("Q", ref_hs)
        got = outcome(self.rust.heartbeat_handles, rust_hs, self.now + offset, ts)
        want = outcome(self.ref.heartbeat_handles, ref_hs, self.now + offset, ts)
        assert got == want, f"heartbeat_handles{pairs}: rust {got} != ref {want}"

    @rule(
        bad=st.sampled_from(
            [
                ("heartbeat_handle", (-1, 0, 1)),
                ("heartbeat_handle", (2**64, 0, 1)),
                ("heartbeat_handle", (None, 0, 1)),
                ("heartbeat_handle", (True, 0, 1)),
                ("heartbeat_handles", ([0, -1], 0, 1)),
                ("heartbeat_handles", ("0", 0, 1)),
                ("heartbeat_handles", ([0, 1.5], 0, 1)),
                ("heartbeat_handles", ([0], 0, [1, 2])),
                ("handle", ("g0", None)),
            ]
        )
    )
    def bad_handle_input(self, bad: tuple[str, tuple[object, ...]]) -> None:
        method, args = bad
        assert self.both(method, *args) in ("TypeError", "ValueError")

    @rule(
        pick=st.integers(0, 2**16),
        at_and_timeout=st.sampled_from([(0, -1), (I64_MAX, 1), (1, I64_MAX)]),
    )
    @precondition(lambda self: self.handles)
    def bad_timeout_by_handle_wins_over_staleness(
        self, pick: int, at_and_timeout: tuple[int, int]
    ) -> None:
        # Bad arguments are reported before a handle is looked at, live or stale.
        pair = self.handles[pick % len(self.handles)]
        assert self.both_by_handle("heartbeat_handles", [pair], *at_and_timeout) == "ValueError"

    @rule(group=groups, member=members, offset=offsets)
    def expect_join(self, group: str, member: str, offset: int) -> None:
        self.both("expect_join", group, member, clamp(self.now + offset))

    @rule(group=groups, member=members, offset=offsets)
    def expect_sync(self, group: str, member: str, offset: int) -> None:
        self.both("expect_sync", group, member, clamp(self.now + offset))

    @rule(group=groups, member=members, kind=st.none() | kinds)
    def clear(self, group: str, member: str, kind: str | None) -> None:
        self.both("clear", group, member, kind)

    @rule(group=groups)
    def remove_group(self, group: str) -> None:
        self.both("remove_group", group)

    @rule(step=steps)
    def expire(self, step: int) -> None:
        self.now = clamp(self.now + step)
        out = self.both("expire", self.now)
        assert all(e.deadline_ms <= self.now for e in out)

    @rule()
    @precondition(lambda self: self.now > I64_MIN)
    def expire_backwards_is_refused(self) -> None:
        assert self.both("expire", self.now - 1) == "ValueError"

    @rule(
        bad=st.sampled_from(
            [
                ("heartbeat", (None, "m", 0, 1)),
                ("heartbeat", ("g", "m", 0, -1)),
                ("heartbeat", ("g", "m", I64_MAX, 1)),
                ("heartbeat", ("g", "m", 1.0, 1)),
                ("expect_join", ("g", "m", None)),
                ("expect_sync", ("g", "m", 2**63)),
                ("clear", ("g", "m", "bogus")),
                ("heartbeat_many", ("g", ["a", None], 0, 1)),
                ("heartbeat_many", (["g"], ["a", "b"], 0, 1)),
                ("heartbeat_many", ("g", ["a", "b"], 0, [1, -1])),
            ]
        )
    )
    def bad_input(self, bad: tuple[str, tuple[object, ...]]) -> None:
        method, args = bad
        assert self.both(method, *args) in ("TypeError", "ValueError")

    @invariant()
    def handles_live_and_die_together(self) -> None:
        # A handle is live iff asking its member for a handle gives it back.
        for (rust_h, ref_h), (g, m) in self.handle_owner.items():
            rust_live = outcome(self.rust.handle, g, m) == ("ok", rust_h)
            ref_live = outcome(self.ref.handle, g, m) == ("ok", ref_h)
            assert rust_live == ref_live, f"handle of {(g, m)}: live in rust {rust_live}"

    @invariant()
    def same_state(self) -> None:
        assert len(self.rust) == len(self.ref)
        assert self.rust.member_count == self.ref.member_count
        assert self.rust.group_count == self.ref.group_count
        assert self.rust.next_deadline() == self.ref.next_deadline()
        for g in GROUPS:
            for m in MEMBERS:
                assert ((g, m) in self.rust) == ((g, m) in self.ref)
                for k in (SESSION, JOIN, SYNC):
                    assert self.rust.deadline(g, m, k) == self.ref.deadline(g, m, k)


TestExpiryComparison = ExpiryComparison.TestCase
TestExpiryComparison.settings = SETTINGS
