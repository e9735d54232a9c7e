"""The asyncio side of the sans-IO :class:`~groupcoord.coordinator.GroupCoordinator`.

:class:`GroupGateway` turns a coordinator request into a future of its response. The
coordinator may release a response much later (a JoinGroup waits for the join phase), and
a call may release responses of other requests: every request carries a fresh integer
``correlation`` and the gateway resolves whichever futures come out. One loop timer is
kept at the coordinator's ``next_deadline()`` and calls ``tick`` when it fires.

The records the coordinator hands out go to a
:class:`~groupcoord.server.persistence.StoreWriter` (off the loop, group commit, for a
SQLite store; at once for the memory store); when it reports a batch persisted, the
gateway tells the coordinator and resolves the futures of the responses that waited. The
coordinator's events go to the gateway's listeners (:meth:`GroupGateway.add_rebalance_listener`,
:meth:`GroupGateway.add_member_listener`) after each coordinator call.

Every completed rebalance is logged at INFO, as Kafka's broker logs it. (OffsetCommit
partitions of topics that do not exist are the coordinator's to refuse, through the
:class:`~groupcoord.coordinator.TopicView` the server gives it.)
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
from collections.abc import Callable, Iterable

from groupcoord._core import NetShell
from groupcoord.coordinator import (
    GroupCoordinator,
    HeartbeatRequest,
    Listeners,
    MemberListener,
    MemoryOffsetStore,
    OffsetStore,
    Output,
    RebalanceCompleted,
    RebalanceListener,
    SyncGroupRequest,
)
from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.server.native_heartbeats import NativeShells
from groupcoord.server.persistence import StoreWriter

__all__ = ["GroupGateway", "log_rebalance"]

log = logging.getLogger("groupcoord.server")


def log_rebalance(event: RebalanceCompleted) -> None:
    """Kafka's "Stabilized group" line, with the members, duration and cause; a join phase
    that ended with no members is Kafka's "Group X with generation N is now empty" instead
    (it has no leader or protocol to show)."""
    if not event.members:
        log.info(
            "group %s with generation %d is now empty: duration_ms=%d reason=%s",
            event.group_id,
            event.generation_id,
            event.duration_ms,
            event.reason,
        )
        return
    log.info(
        "rebalance completed: group=%s generation=%d members=%d [%s] leader=%s "
        "protocol=%s/%s duration_ms=%d reason=%s",
        event.group_id,
        event.generation_id,
        len(event.members),
        _member_list(event.members),
        event.leader_id,
        event.protocol_type,
        event.protocol_name,
        event.duration_ms,
        event.reason,
    )


#: members named in a rebalance line; a 1000-member group gets a count for the rest
LOGGED_MEMBERS = 20


def _member_list(members: tuple[str, ...]) -> str:
    shown = ", ".join(members[:LOGGED_MEMBERS])
    rest = len(members) - LOGGED_MEMBERS
    return f"{shown}, ... (+{rest} more)" if rest > 0 else shown


class GroupGateway:
    """Feeds one coordinator from the event loop. ``now_ms`` is the server clock (must
    not go backwards); ``store`` is where the coordinator's records go (default: a new
    memory store), written off the loop with ``threaded`` (a durable store), else at
    once."""

    def __init__(
        self,
        coordinator: GroupCoordinator,
        now_ms: Callable[[], int],
        store: OffsetStore | None = None,
        *,
        threaded: bool = False,
    ) -> None:
        self.coordinator = coordinator
        #: native shells answering admitted members' heartbeats and taking their commits
        #: (native_heartbeats.py)
        self._native = NativeShells()
        self.writer = StoreWriter(
            MemoryOffsetStore() if store is None else store,
            self._on_persisted,
            threaded=threaded,
            on_free=self.store_shell_commits,
            # a transaction's end takes the commits shells take meanwhile (on_free): they
            # need not wake the loop for them, which would find the writer busy
            on_start=self._native.defer_commit_wakes,
        )
        self._listeners = Listeners()
        self._now_ms = now_ms
        self._pending: dict[int, asyncio.Future[CoordinatorResponse]] = {}
        self._tokens = itertools.count(1)
        self._last_token = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self._closed = False
        self._listeners.add_rebalance_listener(log_rebalance)

    def attach_native(self, shell: NetShell) -> None:
        """Let ``shell`` answer the heartbeats of members this gateway admits (after
        answering one of theirs with no error) and take their commits, keeping it honest
        as :mod:`~groupcoord.server.native_heartbeats` says."""
        self._native.attach(shell)
        self._native.set_commit_topics(self.coordinator)

    def add_rebalance_listener(self, listener: RebalanceListener) -> None:
        """Call ``listener(RebalanceCompleted)`` for every completed rebalance."""
        self._listeners.add_rebalance_listener(listener)

    def add_member_listener(self, listener: MemberListener) -> None:
        """Call ``listener(MemberRemoved)`` for every member removed from a group."""
        self._listeners.add_member_listener(listener)

    @property
    def pending(self) -> int:
        """Requests whose response the coordinator has not released yet."""
        return len(self._pending)

    def submit(
        self, request: CoordinatorRequest
    ) -> CoordinatorResponse | asyncio.Future[CoordinatorResponse]:
        """The response to ``request`` if the coordinator answers at once (most requests),
        else a future resolved when it releases the response."""
        if self._closed:
            cancelled: asyncio.Future[CoordinatorResponse] = (
                asyncio.get_running_loop().create_future()
            )
            cancelled.cancel()
            return cancelled
        token = request.correlation
        if not self._issued(token):
            token = self.new_correlation()
            request = dataclasses.replace(request, correlation=token)
        assert isinstance(token, int)
        return self._handle(token, request)

    def heartbeat(
        self, request: HeartbeatRequest
    ) -> CoordinatorResponse | asyncio.Future[CoordinatorResponse]:
        """:meth:`submit` for a Heartbeat whose ``correlation`` came from
        :meth:`new_correlation` (the server's hot path). The coordinator answers a
        Heartbeat within ``handle`` itself, so this returns the response, and a cancelled
        future only once the gateway is closed."""
        if self._closed:
            return self.submit(request)
        token = request.correlation
        assert isinstance(token, int)
        answered = self._handle(token, request)
        if self._native and not isinstance(answered, asyncio.Future):
            self._native.admit(self.coordinator, request, answered)
        return answered

    def _now(self) -> int:
        """The time for a coordinator call, with the sessions native shells refreshed
        applied first (so the coordinator's deadlines are exact at that time)."""
        now = self._now_ms()
        if self._native:
            self._native.sync(self.coordinator, now)
        return now

    def update_topics(self, topics: Iterable[TopicMetadata]) -> None:
        """The cluster's topics are now ``topics`` (all of them): KIP-848 groups assign
        from them and name them by id on the wire, so the shell calls this at start and
        after every topic created, grown or deleted."""
        if self._closed:
            return
        self._native.forget_everyone()
        self.store_shell_commits()
        self._apply(self.coordinator.update_topics(topics, self._now()))
        # no member is admitted again until a later call, so no commit is taken before
        self._native.set_commit_topics(self.coordinator)

    def store_shell_commits(self) -> None:
        """Hand the commits native shells took since the last call to the coordinator to
        persist (their answers go out once the write is reported). Called before every
        coordinator request, after the groups it may change are withdrawn from the shells
        (so a commit taken before that is stored before it), and when a shell wakes the
        loop."""
        if self._closed or not self._native:
            return
        for out in self._native.store_commits(self.coordinator):
            self._apply(out)

    def shell_commits_taken(self) -> None:
        """A native shell woke the loop for commits it took: stored now if the writer is
        free, else when its transaction ends (the writer's ``on_free``): they could not be
        written sooner, and taken then, every commit of that wait is one batch instead of
        one per wake-up. (Any coordinator request still stores them first: see
        :meth:`store_shell_commits`.)"""
        if not self.writer.busy:
            self.store_shell_commits()

    def new_correlation(self) -> int:
        """A correlation token for a request about to be submitted (saves :meth:`submit`
        copying the request to give it one)."""
        self._last_token = next(self._tokens)
        return self._last_token

    def _issued(self, token: object) -> bool:
        return (
            isinstance(token, int) and 0 < token <= self._last_token and token not in self._pending
        )

    def _handle(
        self, token: int, request: CoordinatorRequest
    ) -> CoordinatorResponse | asyncio.Future[CoordinatorResponse]:
        native = self._native
        if native:
            # withdraw first: what the shells took until then comes before the request
            native.before(request)
            self.store_shell_commits()
        immediate = self._apply(self.coordinator.handle(request, self._now()), token)
        # a member that got its assignment is admitted from its first heartbeat on
        synced = request if native and isinstance(request, SyncGroupRequest) else None
        if immediate is not None:
            if synced is not None:
                native.admit(self.coordinator, synced, immediate)
            return immediate
        future: asyncio.Future[CoordinatorResponse] = asyncio.get_running_loop().create_future()
        self._pending[token] = future
        if synced is not None:
            future.add_done_callback(functools.partial(self._admit_when_answered, synced))
        return future

    def _admit_when_answered(
        self, request: SyncGroupRequest, done: asyncio.Future[CoordinatorResponse]
    ) -> None:
        if not done.cancelled():
            self._native.admit(self.coordinator, request, done.result())

    def _apply(self, out: Output, current: int = 0) -> CoordinatorResponse | None:
        """Act on a coordinator call's output: tell the listeners, hand the records to the
        writer (an unthreaded writer persists them at once, and what that releases is
        applied too), resolve the futures of released responses. Returns the response for
        ``current`` (the request being handled, which has no future yet) if released."""
        immediate = None
        while True:
            responses, writes, events = out
            if events:
                if self._native:
                    self._native.after(events)
                self._listeners.notify(events)
            released = self._release(responses, current)
            if released is not None:
                immediate = released
            if writes is None:
                break
            ok = self.writer.submit(writes)
            if ok is None:
                break
            out = self._persisted(writes.batch_id, ok)
        self._arm_timer()
        return immediate

    def _persisted(self, batch_id: int, ok: bool) -> Output:
        """Tell the coordinator a batch is persisted (``ok``) or failed: a failed write may
        move any group back to a rebalance, so native shells forget everyone first."""
        if not ok:
            self._native.forget_everyone()
        return self.coordinator.persisted(batch_id, ok, self._now())

    def _on_persisted(self, batch_id: int, ok: bool) -> None:
        if self._closed:
            return
        self._apply(self._persisted(batch_id, ok))

    def _release(
        self, responses: list[CoordinatorResponse], current: int
    ) -> CoordinatorResponse | None:
        """Resolve the futures of released responses; return the one for ``current``."""
        immediate = None
        for response in responses:
            token = response.correlation
            if token == current:
                immediate = response
                continue
            future = self._pending.pop(token, None) if isinstance(token, int) else None
            if future is None:
                log.error("coordinator released a response nobody waits for: %r", response)
                continue
            if not future.done():
                future.set_result(response)
        return immediate

    def _arm_timer(self) -> None:
        if self._closed:
            return
        deadline = self.coordinator.next_deadline()
        if deadline == self._timer_deadline and self._timer is not None:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is None:
            return
        delay_s = max(0, deadline - self._now_ms()) / 1000
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        self._apply(self.coordinator.tick(self._now()))

    async def flush(self) -> None:
        """Return once every record batch handed out so far is persisted and reported (the
        responses that waited for them are resolved), the commits native shells hold
        included (they may be waiting for the writer to be free)."""
        self.store_shell_commits()
        await self.writer.flush()

    def close(self) -> None:
        """Stop the timer, cancel waiting requests, wait for the write under way and close
        the store."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        self.writer.close()
