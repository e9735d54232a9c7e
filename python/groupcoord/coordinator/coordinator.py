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
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.join import handle_join_group
from groupcoord.coordinator.membership import (
    handle_heartbeat,
    handle_leave_group,
    handle_sync_group,
)
from groupcoord.coordinator.messages import (
    UNKNOWN_MEMBER_ID,
    AnyRequest,
    AnyResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorClass,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupRequest,
)
from groupcoord.coordinator.offsets import (
    MemoryOffsetStore,
    OffsetAndMetadata,
    OffsetStore,
    StoreError,
)
from groupcoord.coordinator.rebalance import MemberIdFactory, Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    InvalidPayload,
    NonEmptyGroupError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from groupcoord.protocol import decode_assignment, decode_subscription
from groupcoord.types import Assignment, Subscription, TopicPartition

__all__ = [
    "GroupCoordinator",
    "GroupSnapshot",
    "MemberSnapshot",
    "SequentialMemberIds",
    "default_member_id",
]

log = logging.getLogger("groupcoord.coordinator")

_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD


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


def _metadata_length(metadata: str) -> int:
    """Kafka compares ``String.length()``: UTF-16 code units, not bytes."""
    if metadata.isascii():
        return len(metadata)
    return len(metadata.encode("utf-16-le")) // 2


class GroupCoordinator:
    """Kafka's classic group coordinator as a pure state machine.

    ``config``: a :class:`~groupcoord.config.CoordinatorConfig`, or a mapping of Kafka
    setting names (``{"group.initial.rebalance.delay.ms": 0}``). ``store``: where offsets
    and group metadata go (default: a new :class:`MemoryOffsetStore`); whatever it holds is
    loaded now, as after a restart. ``member_id_factory(client_id, group_instance_id)``
    makes member ids (default :func:`default_member_id`; :class:`SequentialMemberIds` is
    reproducible). ``now_ms``: the current time.
    """

    __slots__ = ("_dispatch", "_rb")

    def __init__(
        self,
        config: CoordinatorConfig | Mapping[str, object] | None = None,
        store: OffsetStore | None = None,
        member_id_factory: MemberIdFactory | None = None,
        now_ms: int = 0,
    ) -> None:
        if config is None:
            config = CoordinatorConfig()
        elif not isinstance(config, CoordinatorConfig):
            config = CoordinatorConfig.from_dict(config)
        if isinstance(now_ms, bool) or not isinstance(now_ms, int):
            raise TypeError(f"now_ms must be an int, not {type(now_ms).__name__}")
        self._rb = Rebalancer(
            config,
            MemoryOffsetStore() if store is None else store,
            default_member_id if member_id_factory is None else member_id_factory,
            now_ms,
        )
        self._dispatch: dict[type[Any], Callable[[Any], None]] = {
            JoinGroupRequest: self._join_group,
            SyncGroupRequest: self._sync_group,
            HeartbeatRequest: self._heartbeat,
            LeaveGroupRequest: self._leave_group,
            OffsetCommitRequest: self._offset_commit,
            OffsetFetchRequest: self._offset_fetch,
            DescribeGroupsRequest: self._describe_groups,
            ListGroupsRequest: self._list_groups,
            DeleteGroupsRequest: self._delete_groups,
        }
        self._load()

    # ------------------------------------------------------------------ public API

    @property
    def config(self) -> CoordinatorConfig:
        return self._rb.config

    @property
    def store(self) -> OffsetStore:
        return self._rb.store

    @property
    def now_ms(self) -> int:
        """The latest time the coordinator was told."""
        return self._rb.now

    def handle(self, request: AnyRequest, now_ms: int) -> list[AnyResponse]:
        """Handle ``request`` at ``now_ms``; return every response released now.

        Deadlines that passed by ``now_ms`` take effect first, as if :meth:`tick` had been
        called on time. With a durable store, an OffsetCommit response is returned only
        after the commit is durable. ``now_ms`` must not go backwards (``ValueError``);
        an unknown request type raises ``TypeError``.
        """
        handler = self._dispatch.get(type(request))
        if handler is None:
            raise TypeError(f"not a coordinator request: {type(request).__name__}")
        self._advance(now_ms)
        handler(request)
        return self._take()

    def tick(self, now_ms: int) -> list[AnyResponse]:
        """Act on every deadline up to ``now_ms``; return the responses released."""
        self._advance(now_ms)
        return self._take()

    def next_deadline(self) -> int | None:
        """When :meth:`tick` should next be called (``None``: nothing is pending)."""
        return self._rb.expiry.next_deadline()

    def group_ids(self) -> list[str]:
        return list(self._rb.groups)

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
        """The group's committed offsets (a copy)."""
        group = self._rb.groups.get(group_id)
        return {} if group is None else dict(group.offsets)

    def close(self) -> None:
        """Close the store."""
        self._rb.store.close()

    def __repr__(self) -> str:
        rb = self._rb
        return (
            f"GroupCoordinator(now_ms={rb.now}, groups={len(rb.groups)}, "
            f"next_deadline={self.next_deadline()})"
        )

    # ------------------------------------------------------------------ plumbing

    def _advance(self, now_ms: int) -> None:
        rb = self._rb
        if isinstance(now_ms, bool) or not isinstance(now_ms, int):
            raise TypeError(f"now_ms must be an int, not {type(now_ms).__name__}")
        if now_ms < rb.now:
            raise ValueError(f"time went backwards: now_ms={now_ms} < {rb.now}")
        rb.expire(now_ms)

    def _take(self) -> list[AnyResponse]:
        rb = self._rb
        out = rb.out
        rb.out = []
        return out

    def _load(self) -> None:
        """Start from what the store holds (Kafka's group load on election)."""
        rb = self._rb
        stored = rb.store.load()
        for group_id, record in stored.groups.items():
            group = Group.from_record(record, rb.now)
            rb.groups[group_id] = group
            for member in group.members.values():
                rb.schedule_heartbeat(group, member)
        for group_id, offsets in stored.offsets.items():
            group = rb.groups.get(group_id) or rb.create_group(group_id)
            group.offsets.update(offsets)
        for group in rb.groups.values():
            if group.size > rb.config.group_max_size:
                rb.prepare_rebalance(group, "loaded group is over group.max.size")
        if rb.groups:
            log.info("loaded %d groups", len(rb.groups))

    # ------------------------------------------------------------------ membership

    def _join_group(self, req: JoinGroupRequest) -> None:
        handle_join_group(self._rb, req)

    def _sync_group(self, req: SyncGroupRequest) -> None:
        handle_sync_group(self._rb, req)

    def _heartbeat(self, req: HeartbeatRequest) -> None:
        handle_heartbeat(self._rb, req)

    def _leave_group(self, req: LeaveGroupRequest) -> None:
        handle_leave_group(self._rb, req)

    # ------------------------------------------------------------------ offsets

    def _validate_offset_commit(
        self, group: Group, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorClass:
        """Kafka's ``validateOffsetCommit`` (plus REBALANCE_IN_PROGRESS while syncing)."""
        state = group.state
        if state is _DEAD:
            return CoordinatorNotAvailableError
        if generation < 0 and state is _EMPTY:
            return None  # a simple consumer or an admin: no group management
        if generation >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            error = self._rb.validate_current_member(group, member_id, instance_id)
            if error is not None:
                return error
            if generation != group.generation_id:
                return IllegalGenerationError
        elif state is not _EMPTY:
            return UnknownMemberIdError  # only members commit for a non-empty group
        if state is _COMPLETING:
            return RebalanceInProgressError
        return None

    def _offset_commit(self, req: OffsetCommitRequest) -> None:
        rb = self._rb
        now = rb.now
        requested: dict[TopicPartition, OffsetCommitRequestPartition] = {}
        for topic in req.topics:
            for p in topic.partitions:
                requested[TopicPartition(topic.name, p.partition_index)] = p
        generation = req.generation_id_or_member_epoch
        group = rb.groups.get(req.group_id)
        error: ErrorClass = None
        if group is None:
            if generation < 0:
                log.info("creating simple consumer group %s by offset commit", req.group_id)
                group = rb.create_group(req.group_id)
            else:
                error = IllegalGenerationError
        if group is not None:
            error = self._validate_offset_commit(
                group, generation, req.member_id, req.group_instance_id
            )
        results: dict[TopicPartition, ErrorClass] = dict.fromkeys(requested, error)
        if error is None and group is not None:
            member = group.members.get(req.member_id)
            if member is not None and group.state in (_STABLE, _PREPARING):
                rb.schedule_heartbeat(group, member)
            self._store_offsets(group, req, requested, results, now)
        by_topic: dict[str, list[OffsetCommitResponsePartition]] = {}
        for tp, e in results.items():
            by_topic.setdefault(tp.topic, []).append(
                OffsetCommitResponsePartition(partition_index=tp.partition, error=e)
            )
        rb.out.append(
            OffsetCommitResponse(
                version=req.version,
                correlation=req.correlation,
                topics=tuple(
                    OffsetCommitResponseTopic(name=name, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )

    def _store_offsets(
        self,
        group: Group,
        req: OffsetCommitRequest,
        requested: dict[TopicPartition, OffsetCommitRequestPartition],
        results: dict[TopicPartition, ErrorClass],
        now: int,
    ) -> None:
        max_metadata = self._rb.config.offset_metadata_max_bytes
        expire = -1 if req.retention_time_ms == -1 else now + req.retention_time_ms
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, p in requested.items():
            metadata = p.committed_metadata or ""
            if _metadata_length(metadata) > max_metadata:
                results[tp] = OffsetMetadataTooLargeError
                continue
            offsets[tp] = OffsetAndMetadata(
                committed_offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=metadata,
                commit_timestamp_ms=now if p.commit_timestamp == -1 else p.commit_timestamp,
                expire_timestamp_ms=expire,
            )
        if not offsets:
            return
        try:
            self._rb.store.commit_offsets(group.group_id, offsets)
        except StoreError as e:
            log.warning("group %s: offset commit failed: %s", group.group_id, e)
            for tp in offsets:
                results[tp] = CoordinatorNotAvailableError
            return
        group.offsets.update(offsets)

    def _offset_fetch(self, req: OffsetFetchRequest) -> None:
        results = tuple(self._fetch_group(g) for g in req.requested_groups())
        if req.version >= 8:
            response = OffsetFetchResponse(
                version=req.version, correlation=req.correlation, groups=results
            )
        else:
            response = OffsetFetchResponse(
                version=req.version,
                correlation=req.correlation,
                error=results[0].error,
                topics=results[0].topics,
            )
        self._rb.out.append(response)

    def _fetch_group(self, request: OffsetFetchRequestGroup) -> OffsetFetchResponseGroup:
        group = self._rb.groups.get(request.group_id)
        offsets = {} if group is None or group.state is _DEAD else group.offsets
        topics: list[OffsetFetchResponseTopic] = []
        if request.topics is None:
            by_topic: dict[str, list[OffsetFetchResponsePartition]] = {}
            for tp in sorted(offsets):
                by_topic.setdefault(tp.topic, []).append(_fetched(tp.partition, offsets[tp]))
            topics = [
                OffsetFetchResponseTopic(name=name, partitions=tuple(parts))
                for name, parts in by_topic.items()
            ]
        else:
            for t in request.topics:
                topics.append(
                    OffsetFetchResponseTopic(
                        name=t.name,
                        partitions=tuple(
                            _fetched(i, offsets.get(TopicPartition(t.name, i)))
                            for i in t.partition_indexes
                        ),
                    )
                )
        return OffsetFetchResponseGroup(group_id=request.group_id, topics=tuple(topics))

    # ------------------------------------------------------------------ administration

    def _describe_groups(self, req: DescribeGroupsRequest) -> None:
        self._rb.out.append(
            DescribeGroupsResponse(
                version=req.version,
                correlation=req.correlation,
                groups=tuple(self._describe(group_id) for group_id in req.groups),
            )
        )

    def _describe(self, group_id: str) -> DescribedGroup:
        group = self._rb.groups.get(group_id)
        if group is None:
            return DescribedGroup(
                group_id=group_id, group_state=_DEAD.value, protocol_type="", protocol_data=""
            )
        stable = group.state is _STABLE and group.protocol_name is not None
        consumer = group.protocol_type == "consumer"
        members = []
        for m in group.members.values():
            metadata = m.metadata(group.protocol_name) if stable and group.protocol_name else b""
            assignment = m.assignment if stable else b""
            members.append(
                DescribedGroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=metadata,
                    member_assignment=assignment,
                    subscription=_decode_subscription(metadata) if consumer else None,
                    assignment=_decode_assignment(assignment) if consumer else None,
                )
            )
        return DescribedGroup(
            group_id=group_id,
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(members),
        )

    def _list_groups(self, req: ListGroupsRequest) -> None:
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        listed: list[ListedGroup] = []
        if not types or "classic" in types:
            for group in self._rb.groups.values():
                if states and group.state.value.lower() not in states:
                    continue
                listed.append(
                    ListedGroup(
                        group_id=group.group_id,
                        protocol_type=group.protocol_type or "",
                        group_state=group.state.value,
                    )
                )
        self._rb.out.append(
            ListGroupsResponse(
                version=req.version, correlation=req.correlation, groups=tuple(listed)
            )
        )

    def _delete_groups(self, req: DeleteGroupsRequest) -> None:
        rb = self._rb
        results: list[DeletableGroupResult] = []
        for group_id in dict.fromkeys(req.groups_names):
            group = rb.groups.get(group_id)
            error: ErrorClass
            if group is None or group.state is _DEAD:
                error = GroupIdNotFoundError
            elif group.state is not _EMPTY:
                error = NonEmptyGroupError
            else:
                try:
                    rb.store.delete_group(group_id)
                except StoreError as e:
                    log.warning("group %s: delete failed: %s", group_id, e)
                    error = CoordinatorNotAvailableError
                else:
                    group.transition_to(_DEAD, rb.now)
                    del rb.groups[group_id]
                    rb.expiry.remove_group(group_id)
                    log.info("group %s deleted (%d offsets)", group_id, len(group.offsets))
                    error = None
            results.append(DeletableGroupResult(group_id=group_id, error=error))
        rb.out.append(
            DeleteGroupsResponse(
                version=req.version, correlation=req.correlation, results=tuple(results)
            )
        )


def _fetched(partition: int, offset: OffsetAndMetadata | None) -> OffsetFetchResponsePartition:
    if offset is None:
        return OffsetFetchResponsePartition(partition_index=partition)
    return OffsetFetchResponsePartition(
        partition_index=partition,
        committed_offset=offset.committed_offset,
        committed_leader_epoch=offset.leader_epoch,
        metadata=offset.metadata,
    )


def _decode_subscription(data: bytes) -> Subscription | None:
    if not data:
        return None
    try:
        return decode_subscription(data)
    except InvalidPayload:
        return None


def _decode_assignment(data: bytes) -> Assignment | None:
    if not data:
        return None
    try:
        return decode_assignment(data)
    except InvalidPayload:
        return None
