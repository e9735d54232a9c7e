"""OffsetCommit (v0-v9) and OffsetFetch (v0-v9), as Kafka's coordinator handles them for
classic groups and KIP-848 consumer groups (whose members commit with their member epoch:
STALE_MEMBER_EPOCH when it is not the current one, as Kafka's ``ConsumerGroup`` checks).

With a :class:`~groupcoord.coordinator.topics.TopicView`, partitions of topics that do not
exist are answered UNKNOWN_TOPIC_OR_PARTITION and the rest committed, as Kafka's broker
does; a commit naming no existing partition does not touch the group. A commit is fenced by
generation and member (simple consumers and admins commit with
generation -1 while the group is Empty), checked against offset.metadata.max.bytes, and
handed to the shell as an :class:`~groupcoord.coordinator.offsets.OffsetsRecord`; its
response is released, and the offsets become visible to OffsetFetch, only once the shell
reports the record persisted, so an acknowledged commit is durable. Fetches are served from
memory (only persisted offsets, as Kafka reads its last committed state).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache, partial

from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.group import Group, Member
from groupcoord.coordinator.messages import (
    UNKNOWN_MEMBER_ID,
    ErrorClass,
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
)
from groupcoord.coordinator.offsets import (
    OffsetAndMetadata,
    OffsetsRecord,
    StoreRecord,
    committed_at,
)
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.retention import arm_after_commit
from groupcoord.coordinator.states import GroupState
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    StaleMemberEpochError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from groupcoord.types import TopicPartition

__all__ = [
    "ShellCommit",
    "handle_offset_commit",
    "handle_offset_fetch",
    "quiet_offset_commit",
    "store_shell_commits",
    "store_taken_commits",
]

log = logging.getLogger("groupcoord.coordinator")

#: Distinct accepted partition sets whose answer topics are kept (``_accepted``): one per
#: committing member is the usual working set; each holds one answer's partitions.
_ACCEPTED_CACHE_SIZE = 16_384

_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD


def _metadata_length(metadata: str) -> int:
    """Kafka compares ``String.length()``: UTF-16 code units, not bytes."""
    if metadata.isascii():
        return len(metadata)
    return len(metadata.encode("utf-16-le")) // 2


def _validate_offset_commit(
    rb: Rebalancer, group: Group, generation: int, member_id: str, instance_id: str | None
) -> ErrorClass:
    """Kafka's ``validateOffsetCommit`` (plus REBALANCE_IN_PROGRESS while syncing)."""
    state = group.state
    if state is _DEAD:
        return CoordinatorNotAvailableError
    if generation < 0 and state is _EMPTY:
        return None  # a simple consumer or an admin: no group management
    if generation >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
        error = rb.validate_current_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation != group.generation_id:
            return IllegalGenerationError
    elif state is not _EMPTY:
        return UnknownMemberIdError  # only members commit for a non-empty group
    if state is _COMPLETING:
        return RebalanceInProgressError
    return None


def _validate_consumer_commit(group: ConsumerGroup, req: OffsetCommitRequest) -> ErrorClass:
    """Kafka's ``ConsumerGroup.validateOffsetCommit`` (non-transactional commits)."""
    epoch = req.generation_id_or_member_epoch
    if epoch < 0 and group.is_empty():
        return None  # an admin or a consumer without group management
    member = group.members.get(req.member_id)
    if member is None:
        return UnknownMemberIdError
    if req.version < 9:
        return UnsupportedVersionError  # members of consumer groups commit with v9+
    if epoch != member.member_epoch:
        return StaleMemberEpochError
    return None


def _validate_consumer_fetch(group: ConsumerGroup, member_id: str | None, epoch: int) -> ErrorClass:
    """Kafka's ``ConsumerGroup.validateOffsetFetch``."""
    if member_id is None and epoch < 0:
        return None  # an admin, or a client that does not say
    member = group.members.get(member_id or "")
    if member is None:
        return UnknownMemberIdError
    if epoch != member.member_epoch:
        return StaleMemberEpochError
    return None


def handle_offset_commit(rb: Rebalancer, req: OffsetCommitRequest) -> None:
    now = rb.now
    requested: dict[TopicPartition, OffsetCommitRequestPartition] = {}
    unknown: list[TopicPartition] = []
    missing_topic = False
    named = 0
    topics = rb.topic_view
    for topic in req.topics:
        name = topic.name
        named += len(topic.partitions)
        if topics is None:
            for p in topic.partitions:
                requested[TopicPartition(name, p.partition_index)] = p
            continue
        count = topics.partition_count(name)
        if count is None:
            missing_topic = True
            count = 0
        for p in topic.partitions:
            index = p.partition_index
            if 0 <= index < count:
                requested[TopicPartition(name, index)] = p
            else:
                unknown.append(TopicPartition(name, index))
    if (unknown or missing_topic) and not requested:
        # As Kafka (KafkaApis.handleOffsetCommitRequest): with nothing that exists left to
        # commit, the group is not looked at, so a refused commit creates no group
        _respond(rb, req, dict.fromkeys(unknown, UnknownTopicOrPartitionError), False)
        return
    # the common case: every partition exists and is named once, so ``results`` below is
    # in the request's order and the response is built from it directly
    in_order = (
        not unknown
        and named == len(requested)
        and (len(req.topics) < 2 or len({t.name for t in req.topics}) == len(req.topics))
    )
    generation = req.generation_id_or_member_epoch
    consumer_group = rb.consumer_groups.get(req.group_id)
    if consumer_group is not None:
        error = _validate_consumer_commit(consumer_group, req)
        _commit(rb, consumer_group, req, requested, unknown, error, in_order, now)
        return
    group = rb.groups.get(req.group_id)
    error = None
    if group is None:
        if generation < 0:
            log.info("creating simple consumer group %s by offset commit", req.group_id)
            group = rb.create_group(req.group_id)
        else:
            error = IllegalGenerationError
    if group is None:
        _commit(rb, None, req, requested, unknown, error, in_order, now)
        return
    error = _validate_offset_commit(rb, group, generation, req.member_id, req.group_instance_id)
    if error is None:
        member = group.members.get(req.member_id)
        if member is not None and group.state in (_STABLE, _PREPARING):
            rb.schedule_heartbeat(group, member)
    _commit(rb, group, req, requested, unknown, error, in_order, now)


def _commit(
    rb: Rebalancer,
    group: Group | ConsumerGroup | None,
    req: OffsetCommitRequest,
    requested: dict[TopicPartition, OffsetCommitRequestPartition],
    unknown: list[TopicPartition],
    error: ErrorClass,
    in_order: bool,
    now: int,
) -> None:
    """Persist the accepted offsets (when the group accepts the commit: ``error`` None),
    then answer; partitions that do not exist are refused whatever the group says of the
    rest."""
    results: dict[TopicPartition, ErrorClass] = dict.fromkeys(requested, error)
    if unknown:
        results.update(dict.fromkeys(unknown, UnknownTopicOrPartitionError))
    if error is None and group is not None:
        offsets = _accepted_offsets(rb, req, requested, results, now)
        if offsets:
            rb.persist(
                (OffsetsRecord(group.group_id, offsets),),
                partial(_on_offsets_persisted, rb, group, req, offsets, results, in_order),
            )
            return
    _respond(rb, req, results, in_order)


def _on_offsets_persisted(
    rb: Rebalancer,
    group: Group | ConsumerGroup,
    req: OffsetCommitRequest,
    offsets: dict[TopicPartition, OffsetAndMetadata],
    results: dict[TopicPartition, ErrorClass],
    in_order: bool,
    ok: bool,
) -> None:
    if ok:
        group.offsets.update(offsets)
        arm_after_commit(rb, group, offsets)
    else:
        log.warning("group %s: offset commit was not persisted", group.group_id)
        for tp in offsets:
            results[tp] = CoordinatorNotAvailableError
    _respond(rb, req, results, in_order)


def _respond(
    rb: Rebalancer,
    req: OffsetCommitRequest,
    results: dict[TopicPartition, ErrorClass],
    in_order: bool,
) -> None:
    """Every partition of the request, in the request's order (a partition named twice is
    answered twice, as Kafka's OffsetMetadataManager answers). ``in_order``: ``results``
    holds each partition of the request once, in its order (cheaper to read than the
    request: no key is built)."""
    rb.out.append(_response(req, results, in_order))


def _response(
    req: OffsetCommitRequest, results: dict[TopicPartition, ErrorClass], in_order: bool
) -> OffsetCommitResponse:
    """``_respond``'s answer."""
    if in_order:
        if not any(results.values()):
            # every partition accepted (nearly every commit): the topics part depends only
            # on the partitions, and a member commits the same ones again and again
            return OffsetCommitResponse(
                version=req.version, correlation=req.correlation, topics=_accepted(tuple(results))
            )
        topics = _by_topic(results.items())
    else:
        topics = tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error=results[TopicPartition(t.name, p.partition_index)],
                    )
                    for p in t.partitions
                ),
            )
            for t in req.topics
        )
    return OffsetCommitResponse(version=req.version, correlation=req.correlation, topics=topics)


def _by_topic(
    results: Iterable[tuple[TopicPartition, ErrorClass]],
) -> tuple[OffsetCommitResponseTopic, ...]:
    """The answer's topics for ``results`` in request order (a topic's partitions together)."""
    by_topic: dict[str, list[OffsetCommitResponsePartition]] = {}
    for tp, e in results:
        by_topic.setdefault(tp.topic, []).append(
            OffsetCommitResponsePartition(partition_index=tp.partition, error=e)
        )
    return tuple(
        OffsetCommitResponseTopic(name=name, partitions=tuple(parts))
        for name, parts in by_topic.items()
    )


@lru_cache(maxsize=_ACCEPTED_CACHE_SIZE)
def _accepted(partitions: tuple[TopicPartition, ...]) -> tuple[OffsetCommitResponseTopic, ...]:
    """:func:`_by_topic` when every one of ``partitions`` was accepted. Immutable, so one
    object serves every such answer."""
    return _by_topic((tp, None) for tp in partitions)


def quiet_offset_commit(
    rb: Rebalancer,
    req: OffsetCommitRequest,
    now: int,
    write: Callable[[tuple[StoreRecord, ...]], bool],
) -> OffsetCommitResponse | None:
    """``handle_offset_commit``'s common case, for a coordinator with no deadline due at
    ``now`` and nothing else to hand out (the caller checks that): a current member of a
    Stable classic group commits in its generation, every partition named once, every
    metadata within offset.metadata.max.bytes, and no topic view to check the partitions
    against. Then do what ``handle_offset_commit`` and the shell's report of its record
    do: move time to ``now``, refresh the member's session, hand the record to ``write``
    (the shell's store: ``False`` if the write failed), keep the offsets if it did, and
    return the answer. Otherwise change nothing and return ``None``."""
    found = _quiet_member(rb, req)
    if found is None:
        return None
    requested: dict[TopicPartition, OffsetCommitRequestPartition] = {}
    named = 0
    for topic in req.topics:
        name = topic.name
        named += len(topic.partitions)
        for p in topic.partitions:
            requested[TopicPartition(name, p.partition_index)] = p
    if named != len(requested) or (
        len(req.topics) > 1 and len({t.name for t in req.topics}) != len(req.topics)
    ):
        return None  # a partition or topic named twice: handle()'s other answer order
    results: dict[TopicPartition, ErrorClass] = dict.fromkeys(requested)
    offsets = _accepted_offsets(rb, req, requested, results, now)
    if not offsets or len(offsets) != len(requested):
        return None  # metadata too long for some
    if not _quiet_store(rb, found, offsets, now, write):
        for tp in offsets:
            results[tp] = CoordinatorNotAvailableError
    return _response(req, results, True)


def quiet_commit_offsets(
    rb: Rebalancer,
    like: OffsetCommitRequest,
    offsets: dict[TopicPartition, int],
    now: int,
    write: Callable[[tuple[StoreRecord, ...]], bool],
) -> bool | None:
    """:func:`quiet_offset_commit` of the request ``like`` with ``offsets`` instead of its
    partitions and offsets (the request a member sends again and again, as
    ``MemberMachine.quiet_commit_request`` builds it: its partitions in order, each with
    no leader epoch, timestamp or metadata), without building that request or its answer:
    ``True`` (taken: the answer accepts every partition, :func:`quiet_commit_answer`),
    ``False`` (its record was not persisted: the answer names COORDINATOR_NOT_AVAILABLE
    for each), or ``None`` (not the quiet case, or ``like`` has other partition fields:
    nothing changed)."""
    if not offsets or like.retention_time_ms != -1:
        return None
    for topic in like.topics:
        for p in topic.partitions:
            if p.committed_leader_epoch != -1 or p.commit_timestamp != -1 or p.committed_metadata:
                return None
    found = _quiet_member(rb, like)
    if found is None:
        return None
    # the request's partitions are in order (topic after topic, ascending)
    stored = {
        tp: committed_at(offsets[tp], now)
        for tp in (offsets if len(offsets) == 1 else sorted(offsets))
    }
    return _quiet_store(rb, found, stored, now, write)


def store_taken_commits(
    rb: Rebalancer,
    group_id: str,
    records: Sequence[OffsetsRecord],
    write: Callable[[tuple[StoreRecord, ...]], bool],
) -> None:
    """Store commits that were taken already, in order: each of ``records`` the record
    :func:`quiet_commit_offsets` wrote for a commit it took from a current member of the
    Stable classic group ``group_id`` (its offsets :func:`offsets.committed_at` the commit's
    time, its partitions sorted), whose member's session the caller refreshed at that
    time (by its expiry handle), with nothing else reaching the coordinator since. They go
    to ``write`` in one batch, then into the group's offsets, and time moves to the last
    commit's.

    Why: the simulator's processing lane (``groupcoord._core.LaneSet``) takes a known
    member's auto-commit without a call into Python and hands its record over before any
    Python code runs again, so nothing can tell that it was stored later. Only for a
    group whose committed offsets cannot expire while it has members (a classic consumer
    group: ``arm_after_commit`` would arm nothing); ``RuntimeError`` for anything else, or a
    failed write, since the commits were answered already."""
    group = rb.groups.get(group_id)
    if group is None or group.state is not _STABLE or not group.protocol_type:
        raise RuntimeError(
            f"group {group_id!r}: taken commits to store, but the group is not a Stable "
            "classic consumer group"
        )
    if not records:
        return
    if not write(tuple(records)):
        raise RuntimeError(f"group {group_id!r}: taken commits were not persisted")
    update = group.offsets.update
    for record in records:
        update(record.offsets)
    last = next(iter(records[-1].offsets.values())).commit_timestamp_ms
    if last > rb.now:
        rb.now = last


#: a commit a shell took itself (``GroupCoordinator.store_shell_commits``): its group,
#: when it was taken, and its topics, each ``(name, partitions)``, each partition
#: ``(index, offset, leader_epoch, metadata or None)``
ShellCommit = tuple[str, int, Sequence[tuple[str, Sequence[tuple[int, int, int, str | None]]]]]


def store_shell_commits(
    rb: Rebalancer, commits: Sequence[ShellCommit], then: Callable[[bool], None]
) -> None:
    """Persist commits a shell took itself, in order (see
    ``GroupCoordinator.store_shell_commits`` for what the shell checked): their offsets go
    to the store as one record per group, become the groups' once persisted, and
    ``then(ok)`` is told how the write went (the shell answers them). No check and no
    session refresh here: the shell did both, as ``handle_offset_commit`` would have."""
    by_group: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    for group_id, at, topics in commits:
        offsets = by_group.get(group_id)
        if offsets is None:
            offsets = by_group[group_id] = {}
        for name, partitions in topics:
            for index, offset, epoch, metadata in partitions:
                offsets[TopicPartition(name, index)] = committed_at(
                    offset, at, epoch, metadata or ""
                )
    groups = [(rb.groups[group_id], offsets) for group_id, offsets in by_group.items()]
    rb.persist(
        tuple(OffsetsRecord(group.group_id, offsets) for group, offsets in groups),
        partial(_on_shell_commits_persisted, rb, groups, then),
    )


def _on_shell_commits_persisted(
    rb: Rebalancer,
    groups: list[tuple[Group, dict[TopicPartition, OffsetAndMetadata]]],
    then: Callable[[bool], None],
    ok: bool,
) -> None:
    if ok:
        for group, offsets in groups:
            group.offsets.update(offsets)
            arm_after_commit(rb, group, offsets)
    else:
        log.warning("offset commits taken by the shell were not persisted")
    then(ok)


def quiet_commit_answer(req: OffsetCommitRequest, taken: bool) -> OffsetCommitResponse:
    """The answer :func:`quiet_offset_commit` gives ``req`` when its partitions are taken
    (``taken``: every one accepted) or their record was not persisted (each
    COORDINATOR_NOT_AVAILABLE)."""
    error = None if taken else CoordinatorNotAvailableError
    results: dict[TopicPartition, ErrorClass] = {
        TopicPartition(t.name, p.partition_index): error for t in req.topics for p in t.partitions
    }
    return _response(req, results, True)


def _quiet_member(rb: Rebalancer, req: OffsetCommitRequest) -> tuple[Group, Member] | None:
    """The group and member of a quiet commit: a current member of a Stable classic group
    committing in its generation, with no topic view to check partitions against."""
    if rb.topic_view is not None or rb.dirty_consumer_groups:
        return None
    group_id = req.group_id
    if group_id in rb.consumer_groups:
        return None
    group = rb.groups.get(group_id)
    generation = req.generation_id_or_member_epoch
    if group is None or group.state is not _STABLE or generation != group.generation_id:
        return None
    member_id, instance_id = req.member_id, req.group_instance_id
    member = group.members.get(member_id)
    # rb.validate_current_member, without its log line (a fenced member is handle()'s)
    if member is None or (
        instance_id is not None and group.static_members.get(instance_id) != member_id
    ):
        return None
    return group, member


def _quiet_store(
    rb: Rebalancer,
    found: tuple[Group, Member],
    offsets: dict[TopicPartition, OffsetAndMetadata],
    now: int,
    write: Callable[[tuple[StoreRecord, ...]], bool],
) -> bool:
    """What ``handle_offset_commit`` and the shell's report do with accepted offsets: time
    moves to ``now``, the member's session is refreshed, the record goes to ``write`` and
    the offsets are kept if it was persisted (``False`` if not)."""
    group, member = found
    rb.now = now
    rb.schedule_heartbeat(group, member)
    if write((OffsetsRecord(group.group_id, offsets),)):
        group.offsets.update(offsets)
        arm_after_commit(rb, group, offsets)
        return True
    log.warning("group %s: offset commit was not persisted", group.group_id)
    return False


def _accepted_offsets(
    rb: Rebalancer,
    req: OffsetCommitRequest,
    requested: dict[TopicPartition, OffsetCommitRequestPartition],
    results: dict[TopicPartition, ErrorClass],
    now: int,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The offsets to persist; partitions whose metadata is too long get their error in
    ``results``."""
    max_metadata = rb.config.offset_metadata_max_bytes
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
    return offsets


def handle_offset_fetch(rb: Rebalancer, req: OffsetFetchRequest) -> None:
    results = tuple(_fetch_group(rb, g) for g in req.requested_groups())
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
    rb.out.append(response)


def _fetch_group(rb: Rebalancer, request: OffsetFetchRequestGroup) -> OffsetFetchResponseGroup:
    consumer_group = rb.consumer_groups.get(request.group_id)
    offsets: dict[TopicPartition, OffsetAndMetadata]
    if consumer_group is not None:
        error = _validate_consumer_fetch(consumer_group, request.member_id, request.member_epoch)
        if error is not None:
            return OffsetFetchResponseGroup(group_id=request.group_id, error=error)
        offsets = consumer_group.offsets
    else:
        group = rb.groups.get(request.group_id)
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


def _fetched(partition: int, offset: OffsetAndMetadata | None) -> OffsetFetchResponsePartition:
    if offset is None:
        return OffsetFetchResponsePartition(partition_index=partition)
    return OffsetFetchResponsePartition(
        partition_index=partition,
        committed_offset=offset.committed_offset,
        committed_leader_epoch=offset.leader_epoch,
        metadata=offset.metadata,
    )
