"""The machine's fast accessors and rewritten hot paths agree with their plain definitions.

``next_deadline`` was rewritten without building a candidate list (the simulator calls it on
every step); ``delivery_due`` and ``has_callbacks`` let a runner skip ``take_callbacks`` /
``peek_callbacks`` when they would do nothing. Each is checked, on every call the simulator
makes during churn-heavy scenarios, against the reference definition kept here.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.member.machine import MemberMachine, _InFlight
from groupcoord.member.states import HEARTBEAT_STATES, MemberState
from groupcoord.sim import Scenario, run


def _reference_next_deadline(m: MemberMachine) -> int | None:
    """``next_deadline`` as it was written before the fast path (commit 5c4c813)."""
    t, f = m._t, m._f
    candidates: list[int] = []
    if m.state in (MemberState.FATAL,) or m.done:
        return None
    if not f.coordinator_known:
        candidates.append(t.coordinator_retry_ms)
    else:
        if m.state in HEARTBEAT_STATES and not f.poll_expired:
            if not m._heartbeat_in_flight():
                candidates.append(t.heartbeat_due_ms)
            candidates.append(t.last_heartbeat_ack_ms + m.config.session_timeout_ms)
        if f.joining and m._join_sendable_except_time():
            candidates.append(t.join_retry_ms)
        candidates.extend(
            q.not_before_ms
            for q in m._commits
            if m._commit_sendable() and m._generation_id >= q.min_generation
        )
        candidates.extend(q.not_before_ms for q in m._fetches)
    if m.state in HEARTBEAT_STATES and not f.poll_expired:
        candidates.append(t.last_poll_ms + m.config.max_poll_interval_ms)
    if t.scheduled_rejoin_ms is not None and m.state is MemberState.STABLE:
        candidates.append(t.scheduled_rejoin_ms)
    if t.rejoin_deadline_ms is not None and m.state is MemberState.STABLE:
        candidates.append(t.rejoin_deadline_ms)
    return min(candidates) if candidates else None


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    calls = {"next_deadline": 0, "delivery_due": 0, "has_callbacks": 0}
    fast_deadline = MemberMachine.next_deadline
    fast_due = MemberMachine.delivery_due.fget  # type: ignore[attr-defined]
    fast_has = MemberMachine.has_callbacks.fget  # type: ignore[attr-defined]

    def next_deadline(self: MemberMachine) -> int | None:
        got = fast_deadline(self)
        assert got == _reference_next_deadline(self), (self.state, self._t)
        calls["next_deadline"] += 1
        return got

    def delivery_due(self: MemberMachine) -> bool:
        got: bool = fast_due(self)
        # take_callbacks() does something iff it returns calls or clears the delivery gate
        expected = bool(self.peek_callbacks()) or (
            self._f.awaiting_delivery and not self._f.holding
        )
        assert got == expected
        calls["delivery_due"] += 1
        return got

    def has_callbacks(self: MemberMachine) -> bool:
        got: bool = fast_has(self)
        assert got == bool(self.peek_callbacks())
        calls["has_callbacks"] += 1
        return got

    monkeypatch.setattr(MemberMachine, "next_deadline", next_deadline)
    monkeypatch.setattr(MemberMachine, "delivery_due", property(delivery_due))
    monkeypatch.setattr(MemberMachine, "has_callbacks", property(has_callbacks))
    yield calls


_CHURN: dict[str, Any] = {
    "duration_s": 150,
    "group": {"members": 5, "topics": {"t": 10}},
    "consumer": {"session_timeout_ms": 10000, "max_poll_interval_ms": 20000},
    "workload": {
        "records_per_second_per_partition": 5,
        "record_time_ms": {"dist": "lognormal", "median": 20, "p99": 3000},
    },
    "timeline": [
        {"at_s": 20, "action": "join", "count": 2},
        {"at_s": 40, "action": "restart", "count": 2, "downtime_s": 2},
        {"at_s": 60, "action": "coordinator_failover", "downtime_s": 3},
        {"at_s": 80, "action": "network_partition", "duration_s": 15, "count": 1},
        {"at_s": 100, "action": "pause", "duration_s": 25, "count": 1},
        {"at_s": 120, "action": "leave", "count": 1},
    ],
}


@pytest.mark.parametrize("overrides", [{}, {"group.assignors": ["range"], "group.static": True}])
def test_fast_paths_agree_with_the_reference_under_churn(
    checked: dict[str, int], overrides: dict[str, Any]
) -> None:
    result = run(Scenario.from_dict(_CHURN).replace(**overrides), seed=3)
    assert result.summary["rebalances"] > 3
    assert all(n > 100 for n in checked.values()), checked


def _reference_next_requests(m: MemberMachine, now_ms: int) -> list[Any]:
    """``next_requests`` as it was written before the short path (commit 5c4c813)."""
    m._advance(now_ms)
    out: list[Any] = []
    if not m._f.coordinator_known:
        return out
    m._emit_commits(now_ms, out)
    m._emit_fetches(now_ms, out)
    m._emit_leave(out)
    m._emit_join(now_ms, out)
    if m._pending_sync is not None:
        out.append(m._pending_sync)
        m._pending_sync = None
    m._emit_heartbeat(now_ms, out)
    for request in out:
        if request.correlation not in m._inflight:
            m._inflight[request.correlation] = _InFlight(request, sent_ms=now_ms)
    return out


def _state(m: MemberMachine) -> tuple[Any, ...]:
    return (
        m.state,
        m._t,
        m._f,
        {c: (e.request, e.sent_ms) for c, e in m._inflight.items()},
        [q.handle.offsets for q in m._commits],
        len(m._fetches),
        m._leave,
        m._pending_sync,
        m._callbacks,
    )


def _twin(m: MemberMachine, correlations: Iterator[int]) -> MemberMachine:
    """A copy of ``m`` whose mutable parts are its own (handles are shared: callers make
    sure none is queued)."""
    twin = copy.copy(m)
    twin._t = dataclasses.replace(m._t)
    twin._f = dataclasses.replace(m._f)
    twin._inflight = dict(m._inflight)
    twin._commits = list(m._commits)
    twin._fetches = list(m._fetches)
    twin._callbacks = list(m._callbacks)
    twin._correlations = correlations
    return twin


def test_next_requests_short_path_matches_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """next_requests has a short path for a member with nothing queued; on every such call
    of a churn-heavy simulation it must answer and leave the machine as the full path."""
    calls = {"n": 0}
    fast = MemberMachine.next_requests

    def next_requests(self: MemberMachine, now_ms: int) -> list[Any]:
        f = self._f
        if not f.coordinator_known or (
            f.joining or self._commits or self._fetches or self._leave or self._pending_sync
        ):
            return fast(self, now_ms)
        before = _twin(self, iter(()))
        got = fast(self, now_ms)
        twin = _twin(before, itertools.chain([r.correlation for r in got], itertools.count(-1, -1)))
        expected = _reference_next_requests(twin, now_ms)
        assert got == expected
        assert _state(self) == _state(twin)
        calls["n"] += 1
        return got

    monkeypatch.setattr(MemberMachine, "next_requests", next_requests)
    result = run(Scenario.from_dict(_CHURN), seed=5)
    assert result.summary["rebalances"] > 3 and calls["n"] > 100


def test_poll_idle_is_poll_when_nothing_is_due(monkeypatch: pytest.MonkeyPatch) -> None:
    """poll_idle either declines and changes nothing, or does exactly what poll(),
    next_requests() (which must then return nothing or one heartbeat, the one poll_idle
    sends) and next_deadline() would; when it sends nothing, its deadline is the earlier of
    quiet_deadline_base() (read before) and the poll plus max.poll.interval.ms (what the
    simulator's native application loop computes in its place)."""
    calls = {"idle": 0, "declined": 0, "heartbeats": 0}
    fast = MemberMachine.poll_idle

    def poll_idle(self: MemberMachine, now_ms: int, out: list[Any]) -> int | None:
        safe = not (self._commits or self._fetches)  # no handle a twin could touch
        before = _twin(self, iter(()))
        base = self.quiet_deadline_base()
        assert out == []
        got = fast(self, now_ms, out)
        if got is not None and not out:
            assert got == min(base, now_ms + self.config.max_poll_interval_ms)
        if got is None:
            calls["declined"] += 1
            assert out == []
            assert _state(self) == _state(before)
            return got
        assert safe
        twin = _twin(before, itertools.chain([r.correlation for r in out], itertools.count(-1)))
        twin.poll(now_ms)
        assert _reference_next_requests(twin, now_ms) == out
        assert got == _reference_next_deadline(twin)
        assert _state(self) == _state(twin)
        calls["idle"] += 1
        calls["heartbeats"] += len(out)
        return got

    monkeypatch.setattr(MemberMachine, "poll_idle", poll_idle)
    light = {"workload.record_time_ms": {"dist": "uniform", "low": 0.5, "high": 30}}
    result = run(Scenario.from_dict(_CHURN).replace(**light), seed=7)
    assert result.summary["rebalances"] > 3
    assert calls["idle"] > 1000 and calls["declined"] > 100 and calls["heartbeats"] > 100, calls


def test_poll_idle_commit_is_poll_commit_and_send(monkeypatch: pytest.MonkeyPatch) -> None:
    """poll_idle_commit either declines and changes nothing, or does exactly what poll(),
    commit() of the offsets, next_requests() (the commit, then the heartbeat if one is due)
    and next_deadline() would (the simulator's auto-commits)."""
    calls = {"taken": 0, "declined": 0, "heartbeats": 0}
    fast = MemberMachine.poll_idle_commit

    def poll_idle_commit(
        self: MemberMachine, offsets: dict[Any, int], now_ms: int, out: list[Any]
    ) -> int | None:
        safe = not (self._commits or self._fetches)  # no handle a twin could touch
        before = _twin(self, iter(()))
        assert out == []
        got = fast(self, offsets, now_ms, out)
        if got is None:
            calls["declined"] += 1
            assert out == []
            assert _state(self) == _state(before)
            assert self._last_commit is before._last_commit
            return got
        assert safe
        twin = _twin(before, itertools.chain([r.correlation for r in out], itertools.count(-1)))
        twin.poll(now_ms)
        twin.commit(offsets, now_ms)
        assert _reference_next_requests(twin, now_ms) == out
        assert got == _reference_next_deadline(twin)
        assert _state(self) == _state(twin)
        assert self._last_commit == twin._last_commit
        assert [
            dict(e.commit.offsets) for e in self._inflight.values() if e.commit is not None
        ] == [dict(e.commit.offsets) for e in twin._inflight.values() if e.commit is not None]
        calls["taken"] += 1
        calls["heartbeats"] += len(out) - 1
        return got

    monkeypatch.setattr(MemberMachine, "poll_idle_commit", poll_idle_commit)
    # records rarer than heartbeats: a heartbeat's wake-up is often the poll that commits
    light = {
        "workload.record_time_ms": {"dist": "uniform", "low": 0.5, "high": 30},
        "workload.records_per_second_per_partition": 0.3,
        "consumer.auto_commit_interval_ms": 1000,
    }
    result = run(Scenario.from_dict(_CHURN).replace(**light), seed=7)
    assert result.summary["rebalances"] > 3
    assert calls["taken"] > 100 and calls["declined"] > 0 and calls["heartbeats"] > 0, calls
