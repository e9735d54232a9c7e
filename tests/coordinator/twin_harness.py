"""Two coordinators driven by one script, for the quiet fast paths (``quiet_heartbeat``,
``quiet_offset_commit``): harness ``a`` handles every request; harness ``b`` offers each
request to the fast path first (:meth:`Twin.quiet`) and handles it only when the fast path
declines. :meth:`Twin.check` then compares everything the two hold."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coord_harness import FakeMember, Harness

GROUP = "g"


class Twin:
    """Subclasses say which requests the fast path takes (:meth:`quiet`)."""

    def __init__(self, config: dict[str, object]) -> None:
        self.a = Harness(config)
        self.b = Harness(config)
        #: requests the fast path took
        self.quiet = 0

    def quiet_answer(self, request: Any) -> Any:
        """The fast path's answer to ``request`` on harness ``b`` (``None``: declined)."""
        raise NotImplementedError

    def send(self, request: Any) -> Any:
        response = Harness.send(self.a, request)
        answer = self.quiet_answer(request)
        if answer is None:
            self.b.send(request)
            return response
        self.quiet += 1
        # handle() released this answer and nothing else
        assert self.a.released[-1:] == [answer]
        assert len(self.a.released) == len(self.b.released) + 1
        self.b.requests[request.correlation] = request
        self.b._record([answer])
        return response

    def advance(self, ms: int) -> list[Any]:
        self.b.advance(ms)
        return Harness.advance(self.a, ms)

    def wire(self) -> None:
        """Requests and time handed to harness ``a`` (by FakeMember, rebalance) reach both."""
        self.a.send = self.send  # type: ignore[method-assign]
        self.a.advance = self.advance  # type: ignore[method-assign]

    def members(self, static: list[bool]) -> list[FakeMember]:
        """Members that build their requests with harness a's correlations (``send`` hands
        each to both coordinators); member i is static where ``static[i]``."""
        return [
            FakeMember(
                self.a,
                f"c{i}",
                group_id=GROUP,
                instance_id=f"i{i}" if is_static else None,
                session_timeout_ms=5_000,
                rebalance_timeout_ms=8_000,
            )
            for i, is_static in enumerate(static)
        ]

    def check(self) -> None:
        a, b = self.a, self.b
        assert a.released == b.released
        assert a.now == b.now
        assert a.coord.now_ms == b.coord.now_ms
        assert a.coord.snapshot(GROUP) == b.coord.snapshot(GROUP)
        assert a.coord.next_deadline() == b.coord.next_deadline()
        assert a.coord.committed_offsets(GROUP) == b.coord.committed_offsets(GROUP)
        assert a.store.load() == b.store.load()
        assert a.store.commits == b.store.commits
        # the next batch number handed out
        assert repr(a.coord._batch_ids) == repr(b.coord._batch_ids)
        snapshot = a.coord.snapshot(GROUP)
        if snapshot is not None:
            ea, eb = a.coord._rb.expiry, b.coord._rb.expiry
            for m in snapshot.members:
                for kind in ("session", "join", "sync"):
                    assert ea.deadline(GROUP, m.member_id, kind) == eb.deadline(
                        GROUP, m.member_id, kind
                    )


def settle(twin: Twin, members: list[FakeMember]) -> None:
    """Members (re)join together, wait for the join phase, sync (leader last), as consumers
    do, and heartbeat a second later; errors are fine (the script may have left the group
    anywhere)."""
    joins = [(m, m.join()) for m in members]
    for _ in range(10):
        if all(twin.a.response(c) is not None for _, c in joins):
            break
        twin.advance(1_000)
    for m, c in joins:
        m.joined(c)
    order = [m for m in members if not m.is_leader] + [m for m in members if m.is_leader]
    syncs = [(m, m.sync()) for m in order if m.generation >= 0 and m.member_id]
    for m, c in syncs:
        m.synced(c)
    twin.advance(1_000)
    for m in members:
        if m.member_id:
            m.heartbeat()


def absorb_released(
    twin: Twin, waiting: list[tuple[FakeMember, int]]
) -> list[tuple[FakeMember, int]]:
    """Members learn from answers released later (joins and syncs that waited); returns
    the ones still waiting."""
    still = []
    for m, correlation in waiting:
        response = twin.a.response(correlation)
        if response is None:
            still.append((m, correlation))
        else:
            m.absorb(response)
    return still


def run_steps(
    twin: Twin, members: list[FakeMember], steps: list[Any], act: Callable[[Any], None]
) -> None:
    """Play hypothesis steps on the twin: ``("advance", ms)``, ``("settle", n)`` (the first
    n members) and ``("join" | "sync" | "leave", member index)``; a step of any other kind
    is the test's own, ``act(step)``. After every step the answers released meanwhile are
    absorbed and the two coordinators compared."""
    waiting: list[tuple[FakeMember, int]] = []
    for step in steps:
        kind = step[0]
        if kind == "advance":
            twin.advance(step[1])
        elif kind == "settle":
            settle(twin, members[: step[1]])
        elif kind == "join":
            m = members[step[1]]
            waiting.append((m, m.join()))
        elif kind == "sync":
            m = members[step[1]]
            if m.generation >= 0 and m.member_id:
                waiting.append((m, m.sync()))
        elif kind == "leave":
            members[step[1]].leave()
        else:
            act(step)
        waiting = absorb_released(twin, waiting)
        twin.check()
