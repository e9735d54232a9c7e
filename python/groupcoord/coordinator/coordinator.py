"""The sans-IO classic group coordinator.

:class:`GroupCoordinator` is a state machine: requests and time go in, responses come out.
It never reads a clock, sleeps, opens a socket or starts a thread; the caller says what
time it is (``now_ms``) on every call and asks :meth:`~GroupCoordinator.next_deadline` when
to call :meth:`~GroupCoordinator.tick` next. A wire server, the client tests and the
simulator all drive this one object.

Responses may be released later than their request: a JoinGroup waits for the join phase
to end and a follower's SyncGroup for the leader's assignment, so a call returns the
responses released *now*, for this request and for earlier ones. Each carries its
request's ``correlation``. Every request gets exactly one response.

It does no I/O for durability either: a call's :class:`~groupcoord.coordinator.output.Output`
carries the records to persist, and a response that depends on them (an OffsetCommit, the
leader's SyncGroup, a DeleteGroups) is held back until the shell reports them with
:meth:`~GroupCoordinator.persisted` (Kafka's ``CoordinatorResult``). Events are outputs
too. :class:`~groupcoord.coordinator.sync_shell.SyncShell` is the shell that persists at
once (simulator, tests, scripts); the server persists off its event loop.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from groupcoord._core import SESSION, MemberExpiry
from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator.admin import (
    handle_consumer_group_describe,
    handle_delete_groups,
    handle_describe_groups,
    handle_list_groups,
)
from groupcoord.coordinator.commits import (
    ShellCommit,
    handle_offset_commit,
    handle_offset_fetch,
    quiet_commit_offsets,
    quiet_offset_commit,
    store_shell_commits,
    store_taken_commits,
)
from groupcoord.coordinator.consumer_group import ConsumerGroupState, MemberState
from groupcoord.coordinator.consumer_heartbeat import (
    arm_revocation,
    handle_consumer_group_heartbeat,
    on_consumer_deadline,
    refresh_all_subscriptions,
)
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)
from groupcoord.coordinator.consumer_records import (
    flush_dirty_consumer_groups,
    load_consumer_group,
)
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.join import handle_join_group
from groupcoord.coordinator.membership import (
    current_session_timeout,
    handle_heartbeat,
    handle_leave_group,
    handle_sync_group,
    refresh_current_member,
)
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.coordinator.offset_delete import handle_offset_delete
from groupcoord.coordinator.offsets import (
    OffsetAndMetadata,
    OffsetsRecord,
    StoredState,
    StoreRecord,
)
from groupcoord.coordinator.output import CoordinatorRequest, Output, WriteBatch
from groupcoord.coordinator.rebalance import MemberIdFactory, OnPersisted, Rebalancer
from groupcoord.coordinator.retention import arm_loaded_groups, on_retention_deadline
from groupcoord.coordinator.states import GroupState
from groupcoord.coordinator.topics import TopicImage, TopicMetadata, TopicView
from groupcoord.types import TopicPartition

__all__ = [
    "ConsumerGroupSnapshot",
    "ConsumerMemberSnapshot",
    "GroupCoordinator",
    "GroupSnapshot",
    "MemberSnapshot",
    "SequentialMemberIds",
    "default_member_id",
]

log = logging.getLogger("groupcoord.coordinator")


def default_member_id(client_id: str, group_instance_id: str | None) -> str:
    """Kafka's member ids: ``client_id-<uuid4>`` (static members: ``instance_id-<uuid4>``)."""
    return f"{group_instance_id if group_instance_id is not None else client_id}-{uuid.uuid4()}"


class SequentialMemberIds:
    """Reproducible member ids, ``client_id-1``, ``client_id-2``, ... (one counter for all),
    for tests and the simulator. ``start`` lets a restarted coordinator avoid old ids."""

    __slots__ = ("_counter",)

    def __init__(self, start: int = 1) -> None:
        self._counter = itertools.count(start)

    def __call__(self, client_id: str, group_instance_id: str | None) -> str:
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix or 'member'}-{next(self._counter)}"


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    member_id: str
    group_instance_id: str | None
    assignment: bytes
    rebalance_timeout_ms: int
    session_timeout_ms: int
    awaiting_join: bool
    awaiting_sync: bool
    is_new: bool


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """A read-only view of one group, for tests, metrics and the simulator."""

    group_id: str
    state: GroupState
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberSnapshot, ...]
    pending_members: tuple[str, ...]
    pending_sync: tuple[str, ...]

    def member(self, member_id: str) -> MemberSnapshot | None:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerMemberSnapshot:
    """A KIP-848 consumer-group member as the coordinator sees it; assignments are
    ``{topic: (partition, ...)}``, ascending."""

    member_id: str
    instance_id: str | None
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: dict[str, tuple[int, ...]]
    pending_revocation: dict[str, tuple[int, ...]]
    target: dict[str, tuple[int, ...]]
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupSnapshot:
    """A read-only view of one KIP-848 consumer group."""

    group_id: str
    state: ConsumerGroupState
    group_epoch: int
    assignment_epoch: int
    members: tuple[ConsumerMemberSnapshot, ...]

    def member(self, member_id: str) -> ConsumerMemberSnapshot | None:
        for m in self.members:
            if m.member_id == member_id:
                return m
        return None


def _runs(assignment: Mapping[str, frozenset[int]]) -> dict[str, tuple[int, ...]]:
    return {topic: tuple(sorted(ps)) for topic, ps in sorted(assignment.items())}


class GroupCoordinator:
    """Kafka's classic group coordinator as a pure state machine.

    ``config``: a :class:`~groupcoord.config.CoordinatorConfig`, or a mapping of Kafka
    setting names (``{"group.initial.rebalance.delay.ms": 0}``).
    ``member_id_factory(client_id, group_instance_id)`` makes member ids (default
    :func:`default_member_id`; :class:`SequentialMemberIds` is reproducible). ``now_ms``:
    the current time. ``stored``: what a store holds (``store.load()``), the state to start
    from, as after a restart (default: nothing). ``topics``: the cluster's topics
    (:class:`~groupcoord.coordinator.topics.TopicView`); with it an OffsetCommit for a
    topic or partition that does not exist is answered UNKNOWN_TOPIC_OR_PARTITION for
    that partition, as Kafka's broker answers (default: every partition exists).
    """

    __slots__ = ("_batch_ids", "_in_flight", "_rb")

    def __init__(
        self,
        config: CoordinatorConfig | Mapping[str, object] | None = None,
        *,
        member_id_factory: MemberIdFactory | None = None,
        now_ms: int = 0,
        stored: StoredState | None = None,
        topics: TopicView | None = None,
    ) -> None:
        if config is None:
            config = CoordinatorConfig()
        elif not isinstance(config, CoordinatorConfig):
            config = CoordinatorConfig.from_dict(config)
        if isinstance(now_ms, bool) or not isinstance(now_ms, int):
            raise TypeError(f"now_ms must be an int, not {type(now_ms).__name__}")
        self._rb = Rebalancer(
            config,
            default_member_id if member_id_factory is None else member_id_factory,
            now_ms,
            topics,
        )
        self._rb.on_consumer_deadline = partial(on_consumer_deadline, self._rb)
        self._rb.on_retention_deadline = partial(on_retention_deadline, self._rb)
        self._batch_ids = itertools.count(1)
        #: batches handed out and not yet reported, oldest first: (id, what to do then)
        self._in_flight: deque[tuple[int, list[OnPersisted]]] = deque()
        if stored is not None:
            self._load(stored)

    # ------------------------------------------------------------------ public API

    @property
    def config(self) -> CoordinatorConfig:
        return self._rb.config

    @property
    def now_ms(self) -> int:
        """The latest time the coordinator was told."""
        return self._rb.now

    @property
    def member_expiry(self) -> MemberExpiry:
        """The members' deadlines. For a driver of many members in one process that hands
        the same members' heartbeats over again and again (the simulator's processing
        lane): once :meth:`quiet_heartbeat` took a member's heartbeat, and until the next
        :meth:`handle` or :meth:`tick`, the member is current still, and its next quiet
        heartbeat is exactly a heartbeat by its handle in this table when no deadline is
        due by then (the coordinator's clock then moves at its next call). Nothing else may
        write to it."""
        return self._rb.expiry

    def handle(self, request: CoordinatorRequest, now_ms: int) -> Output:
        """Handle ``request`` at ``now_ms``; return the responses released now, the records
        to persist and the events (see :class:`~groupcoord.coordinator.output.Output`).

        Deadlines that passed by ``now_ms`` take effect first, as if :meth:`tick` had been
        called on time. ``now_ms`` must not go backwards (``ValueError``); an unknown
        request type raises ``TypeError``.
        """
        handler = _HANDLERS.get(type(request))
        if handler is None:
            raise TypeError(f"not a coordinator request: {type(request).__name__}")
        rb = self._rb
        if now_ms != rb.now:
            _check_time(rb, now_ms)
        rb.expire(now_ms)
        # a deadline's changes are persisted before the request's (a tombstone the
        # request writes must come after them)
        flush_dirty_consumer_groups(rb)
        handler(rb, request)
        return self._take()

    def quiet_heartbeat(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        now_ms: int,
    ) -> bool:
        """Heartbeat's common case without building a request or a response: if no deadline
        is due by ``now_ms`` and the member is a current member of a Stable group in
        ``generation_id``, refresh its session at ``now_ms`` and return ``True``: exactly
        what :meth:`handle` of that ``HeartbeatRequest`` would do, whose answer would be no
        error and release nothing else. Otherwise change nothing and return ``False`` (call
        :meth:`handle`). For drivers of many members in one process (the simulator).
        ``now_ms`` must not go backwards (``ValueError``)."""
        rb = self._rb
        if now_ms != rb.now:
            _check_time(rb, now_ms)
        due = rb.expiry.next_deadline()
        if due is not None and due <= now_ms:
            return False  # handle() would act on it first
        before, rb.now = rb.now, now_ms
        if refresh_current_member(rb, group_id, member_id, generation_id, group_instance_id):
            return True
        rb.now = before
        return False

    def heartbeat_lease(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
    ) -> tuple[int, int, int, bool] | None:
        """``(session_timeout_ms, handle, session_deadline_ms, takes_commits)`` if the member
        is a current member of a Stable group in ``generation_id`` (a heartbeat of it would
        be answered with no error and a session refresh), with its handle and deadline in
        :attr:`member_expiry`; else ``None``. ``takes_commits``: the group's offsets cannot
        expire while it has members (a classic group with a protocol type), so a commit of
        this member that :meth:`commit_topic_counts` accepts in full is answered with no
        error once persisted (see :meth:`store_shell_commits`). For a shell that answers
        such heartbeats itself until the group may change (the native shell,
        :mod:`groupcoord.server.native_listener`), applying the refreshes to
        :attr:`member_expiry` before each call at a later time. Changes nothing."""
        timeout = current_session_timeout(
            self._rb, group_id, member_id, generation_id, group_instance_id
        )
        if timeout is None:
            return None
        expiry = self._rb.expiry
        deadline = expiry.deadline(group_id, member_id, SESSION)
        if deadline is None:  # a current member always has one; nothing to lease without
            return None
        takes_commits = bool(self._rb.groups[group_id].protocol_type)
        return timeout, expiry.handle(group_id, member_id), deadline, takes_commits

    def commit_topic_counts(self) -> dict[str, int] | None:
        """The partition count OffsetCommit's check sees for each topic of the last
        :meth:`update_topics` that exists (partitions ``0..count-1`` are accepted);
        ``None`` without a topic view (any partition is accepted, which a shell taking
        commits need not reproduce)."""
        view = self._rb.topic_view
        if view is None:
            return None
        counts = {name: view.partition_count(name) for name in self._rb.topics.names()}
        return {name: count for name, count in counts.items() if count is not None}

    def store_shell_commits(
        self, commits: Sequence[ShellCommit], then: Callable[[bool], None]
    ) -> Output:
        """Persist OffsetCommits a shell took itself, in the order taken: each a commit of
        a member :meth:`heartbeat_lease` leased with ``takes_commits``, taken while the
        lease held (the session alive above the shell's last sync, the group not changed
        since, which the shell's caller guarantees by withdrawing a group before any
        request that may change it and storing taken commits right after), naming each
        partition once, every one in :meth:`commit_topic_counts`, every metadata within
        offset.metadata.max.bytes, no retention of its own; the shell refreshed the
        member's session (applied through :attr:`member_expiry`). Exactly what
        :meth:`handle` would do with such a request at its time, so nothing is checked
        again: the offsets go into the returned batch and become the groups' when it is
        :meth:`persisted`; ``then(ok)`` is called then (the shell answers each partition
        with no error, or COORDINATOR_NOT_AVAILABLE if the write failed)."""
        store_shell_commits(self._rb, commits, then)
        return self._take()

    def quiet_offset_commit(
        self,
        request: OffsetCommitRequest,
        now_ms: int,
        write: Callable[[tuple[StoreRecord, ...]], bool],
    ) -> OffsetCommitResponse | None:
        """OffsetCommit's common case for a shell that persists at once, without the
        request's path through :meth:`handle`: if no deadline is due by ``now_ms``, no
        record is waiting for its report, and the request is a current member's commit
        to a Stable classic group in its generation (each partition named once, metadata
        within bounds, no topic view), refresh the member's session, hand the offsets'
        record to ``write`` (``False``: the write failed), keep the offsets if it
        succeeded and return the answer: exactly what :meth:`handle`, the shell's write
        and :meth:`persisted` would do and release. Otherwise change nothing and return
        ``None`` (call :meth:`handle`). For drivers of many members in one process (the
        simulator, through :meth:`SyncShell.quiet_offset_commit`). ``now_ms`` must not go
        backwards (``ValueError``)."""
        persist = self._quiet_persist(now_ms, write)
        return None if persist is None else quiet_offset_commit(self._rb, request, now_ms, persist)

    def quiet_commit_offsets(
        self,
        like: OffsetCommitRequest,
        offsets: dict[TopicPartition, int],
        now_ms: int,
        write: Callable[[tuple[StoreRecord, ...]], bool],
    ) -> bool | None:
        """:meth:`quiet_offset_commit` of the request ``like`` (as
        ``MemberMachine.quiet_commit_request`` builds one) with ``offsets`` instead of its
        own, without building that request or its answer: ``True`` if taken (its answer
        accepts every partition), ``False`` if its record was not persisted (each
        partition's answer COORDINATOR_NOT_AVAILABLE), ``None`` if not the quiet case
        (nothing changed: build the request and call :meth:`handle`). Either answer is
        ``commits.quiet_commit_answer(request, taken)``. For the simulator's processing
        lane."""
        persist = self._quiet_persist(now_ms, write)
        return (
            None
            if persist is None
            else quiet_commit_offsets(self._rb, like, offsets, now_ms, persist)
        )

    def store_taken_commits(
        self,
        group_id: str,
        records: Sequence[OffsetsRecord],
        write: Callable[[tuple[StoreRecord, ...]], bool],
    ) -> None:
        """Store the records of commits that :meth:`quiet_commit_offsets` would have taken
        at their times (one record each, as it writes them, in order), with nothing else
        reaching the coordinator since the first: their members' sessions were refreshed
        at those times through :attr:`member_expiry`, by handle (see
        ``commits.store_taken_commits``). Each takes the batch number its own
        :meth:`quiet_commit_offsets` would have. For the simulator's processing lane."""
        if self._in_flight:
            raise RuntimeError("taken commits to store while records wait for their report")
        batch_ids = self._batch_ids
        for _ in records:
            next(batch_ids)
        store_taken_commits(self._rb, group_id, records, write)

    def _quiet_persist(
        self, now_ms: int, write: Callable[[tuple[StoreRecord, ...]], bool]
    ) -> Callable[[tuple[StoreRecord, ...]], bool] | None:
        """A quiet commit's ``write``, which takes the batch number :meth:`handle` would
        have handed out; ``None`` when a deadline is due by ``now_ms`` (``handle`` would
        act on it first) or a record waits for its report (reports keep their order)."""
        rb = self._rb
        if now_ms != rb.now:
            _check_time(rb, now_ms)
        due = rb.expiry.next_deadline()
        if (due is not None and due <= now_ms) or self._in_flight:
            return None
        batch_ids = self._batch_ids

        def persist(records: tuple[StoreRecord, ...]) -> bool:
            next(batch_ids)  # the batch handle() would have handed out
            return write(records)

        return persist

    def tick(self, now_ms: int) -> Output:
        """Act on every deadline up to ``now_ms``; return what that released."""
        self._advance(now_ms)
        return self._take()

    def persisted(self, batch_id: int, ok: bool, now_ms: int) -> Output:
        """The shell reports the records of batch ``batch_id``: on disk (``ok``) or not.
        Batches are reported in the order they were handed out (``ValueError`` otherwise).
        Releases the responses that waited for them (with COORDINATOR_NOT_AVAILABLE where
        the write failed, as Kafka answers a failed offsets-topic append).

        A later ``now_ms`` acts on the deadlines up to it first, as :meth:`handle` does.
        """
        in_flight = self._in_flight
        if not in_flight or in_flight[0][0] != batch_id:
            expected = in_flight[0][0] if in_flight else None
            raise ValueError(
                f"batch {batch_id} reported out of order: the oldest unreported batch is {expected}"
            )
        _, then = in_flight.popleft()
        rb = self._rb
        if now_ms != rb.now:
            _check_time(rb, now_ms)
            rb.expire(now_ms)
        for callback in then:
            callback(ok)
        return self._take()

    @property
    def unpersisted_batches(self) -> int:
        """Batches handed out whose :meth:`persisted` report has not come yet."""
        return len(self._in_flight)

    def next_deadline(self) -> int | None:
        """When :meth:`tick` should next be called (``None``: nothing is pending)."""
        return self._rb.expiry.next_deadline()

    def group_state(self, group_id: str) -> GroupState | None:
        """The group's state (``None`` if the coordinator does not know it); cheaper than
        :meth:`snapshot` for callers that ask after every request."""
        group = self._rb.groups.get(group_id)
        return None if group is None else group.state

    def group_ids(self) -> list[str]:
        """The classic groups' ids (:meth:`consumer_group_ids` for KIP-848 groups)."""
        return list(self._rb.groups)

    def consumer_group_ids(self) -> list[str]:
        return list(self._rb.consumer_groups)

    def snapshot(self, group_id: str) -> GroupSnapshot | None:
        """A read-only view of a group (``None`` if the coordinator does not know it)."""
        group = self._rb.groups.get(group_id)
        if group is None:
            return None
        return GroupSnapshot(
            group_id=group.group_id,
            state=group.state,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id,
            members=tuple(
                MemberSnapshot(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    assignment=m.assignment,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    awaiting_join=m.awaiting_join,
                    awaiting_sync=m.awaiting_sync,
                    is_new=m.is_new,
                )
                for m in group.members.values()
            ),
            pending_members=tuple(group.pending_members),
            pending_sync=tuple(group.pending_sync),
        )

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (a copy); classic or consumer group."""
        rb = self._rb
        group = rb.groups.get(group_id) or rb.consumer_groups.get(group_id)
        return {} if group is None else dict(group.offsets)

    def update_topics(self, topics: Iterable[TopicMetadata], now_ms: int) -> Output:
        """The topics are now ``topics`` (all of them). Consumer groups whose subscriptions
        they change (partition counts, topics created or deleted, regex matches) get a new
        group epoch, so their next heartbeat computes a new target assignment.
        ``now_ms`` acts on the deadlines up to it first, as :meth:`handle` does."""
        image = TopicImage(topics)
        self._advance(now_ms)
        rb = self._rb
        rb.topics = image
        refresh_all_subscriptions(rb)
        return self._take()

    def consumer_group_snapshot(self, group_id: str) -> ConsumerGroupSnapshot | None:
        """A read-only view of a KIP-848 consumer group (``None`` if there is none)."""
        group = self._rb.consumer_groups.get(group_id)
        if group is None:
            return None
        return ConsumerGroupSnapshot(
            group_id=group.group_id,
            state=group.state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            members=tuple(
                ConsumerMemberSnapshot(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    member_epoch=m.member_epoch,
                    previous_member_epoch=m.previous_member_epoch,
                    state=m.state,
                    assigned=_runs(m.assigned),
                    pending_revocation=_runs(m.pending_revocation),
                    target=_runs(group.target_of(m.member_id)),
                    subscribed_topic_names=m.subscribed_topic_names,
                    subscribed_topic_regex=m.subscribed_topic_regex,
                )
                for m in group.members.values()
            ),
        )

    def __repr__(self) -> str:
        rb = self._rb
        return (
            f"GroupCoordinator(now_ms={rb.now}, groups={len(rb.groups)}, "
            f"next_deadline={self.next_deadline()})"
        )

    # ------------------------------------------------------------------ plumbing

    def _advance(self, now_ms: int) -> None:
        rb = self._rb
        _check_time(rb, now_ms)
        rb.expire(now_ms)

    def _take(self) -> Output:
        rb = self._rb
        flush_dirty_consumer_groups(rb)
        out = rb.out
        rb.out = []
        writes = None
        if rb.records:
            batch_id = next(self._batch_ids)
            writes = WriteBatch(batch_id, tuple(rb.records))
            self._in_flight.append((batch_id, rb.on_persisted))
            rb.records = []
            rb.on_persisted = []
        if rb.events:
            events = tuple(rb.events)
            rb.events = []
            return Output(out, writes, events)
        return Output(out, writes, ())

    def _load(self, stored: StoredState) -> None:
        """Start from what a store holds (Kafka's group load on election)."""
        rb = self._rb
        for group_id, record in stored.groups.items():
            group = Group.from_record(record, rb.now)
            rb.groups[group_id] = group
            for member in group.members.values():
                rb.schedule_heartbeat(group, member)
        for group_id, stored_group in stored.consumer_groups.items():
            if group_id in rb.groups:
                continue  # a store keeps one type per group id; the classic one wins
            consumer_group = load_consumer_group(group_id, stored_group)
            rb.consumer_groups[group_id] = consumer_group
            session = rb.config.group_consumer_session_timeout_ms
            for consumer_member in consumer_group.members.values():
                # sessions (and revocation timeouts) start again now, as on Kafka's
                # coordinator failover
                rb.expiry.heartbeat(group_id, consumer_member.member_id, rb.now, session)
                if consumer_member.state is MemberState.UNREVOKED_PARTITIONS:
                    arm_revocation(rb, consumer_group, consumer_member)
        for group_id, offsets in stored.offsets.items():
            target = (
                rb.groups.get(group_id)
                or rb.consumer_groups.get(group_id)
                or rb.create_group(group_id)
            )
            target.offsets.update(offsets)
        for group in rb.groups.values():
            if group.size > rb.config.group_max_size:
                rb.prepare_rebalance(group, "loaded group is over group.max.size")
        arm_loaded_groups(rb)
        for consumer_group in rb.consumer_groups.values():
            if consumer_group.is_empty():
                rb.check_retention(consumer_group.group_id)
        if rb.groups or rb.consumer_groups:
            log.info(
                "loaded %d classic and %d consumer groups",
                len(rb.groups),
                len(rb.consumer_groups),
            )


def _check_time(rb: Rebalancer, now_ms: int) -> None:
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        raise TypeError(f"now_ms must be an int, not {type(now_ms).__name__}")
    if now_ms < rb.now:
        raise ValueError(f"time went backwards: now_ms={now_ms} < {rb.now}")


#: request type -> handler(rebalancer, request); the handlers append their responses.
_HANDLERS: dict[type[Any], Callable[[Rebalancer, Any], None]] = {
    JoinGroupRequest: handle_join_group,
    SyncGroupRequest: handle_sync_group,
    HeartbeatRequest: handle_heartbeat,
    LeaveGroupRequest: handle_leave_group,
    OffsetCommitRequest: handle_offset_commit,
    OffsetFetchRequest: handle_offset_fetch,
    DescribeGroupsRequest: handle_describe_groups,
    ListGroupsRequest: handle_list_groups,
    DeleteGroupsRequest: handle_delete_groups,
    OffsetDeleteRequest: handle_offset_delete,
    ConsumerGroupHeartbeatRequest: handle_consumer_group_heartbeat,
    ConsumerGroupDescribeRequest: handle_consumer_group_describe,
}
