"""``ConsumerMemberMachine``: the member side of KIP-848's consumer protocol, sans-IO.

One request keeps the member in the group: ``ConsumerGroupHeartbeat``. The coordinator runs
the assignor and answers each heartbeat with the member's epoch and, when it changed, the
partitions the member may own now. The member *reconciles*: it gives up what is no longer
its own (the application hears ``on_partitions_revoked`` and may commit), takes what is new
(``on_partitions_assigned``), and reports what it owns in its next heartbeat, sent at once.
The coordinator hands a partition to a new owner only after the old one reported it gone,
so there is no group-wide barrier and no JoinGroup/SyncGroup round.

The machine has the surface of the classic :class:`~groupcoord.member.machine.MemberMachine`
that :class:`~groupcoord.member.runner.GroupMember` drives (calls with ``now_ms`` in;
requests, listener calls and the next deadline out), so the same thread model serves both
protocols. Its states and their moves are in :mod:`groupcoord.member.consumer_states`.

What Kafka's ``ConsumerMembershipManager`` does and this follows:
- the member generates its own id (KIP-1082, v1) and joins with epoch 0, its subscription,
  ``max.poll.interval.ms`` as the rebalance timeout and an empty owned list;
- later heartbeats leave out what did not change (``None``), except a full one after the
  coordinator moved or was lost, so that a new coordinator learns everything again;
- FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID: the partitions are *lost* (another member may
  have them), the member rejoins with epoch 0 under the same id once the application heard;
- no poll for ``max.poll.interval.ms``: the member leaves (epoch -1; -2 when static) and
  its partitions are lost; the next poll joins again;
- ``close()`` revokes what the member owns, then leaves (-1, or -2 for a static member,
  which keeps its partitions for its session, KIP-345);
- offsets are committed with the member epoch (OffsetCommit v9+); STALE_MEMBER_EPOCH is
  retried with the epoch the next heartbeat brings.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from groupcoord.coordinator.consumer_messages import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    Request,
    Response,
)
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupcoordError,
    KafkaError,
    NotCoordinatorError,
    StaleMemberEpochError,
    UnknownMemberIdError,
)
from groupcoord.member.config import ConsumerMemberConfig
from groupcoord.member.consumer_states import ConsumerMemberState, check_consumer_transition
from groupcoord.member.handles import (
    CommitFailedError,
    CommitHandle,
    FetchHandle,
    MemberClosedError,
)
from groupcoord.member.listener import CallbackKind, ListenerCall
from groupcoord.member.offsets import (
    QueuedCommit,
    QueuedFetch,
    checked_offsets,
    commit_errors,
    fetched_offsets,
    split_due_commits,
    split_due_fetches,
)
from groupcoord.member.requests import commit_request, fetch_request, version_for
from groupcoord.types import TopicPartition

__all__ = ["CONSUMER_MEMBER_REQUEST_TYPES", "ConsumerMemberMachine"]

_S = ConsumerMemberState

#: The request types a consumer-protocol member sends.
CONSUMER_MEMBER_REQUEST_TYPES: Final[tuple[type[Request], ...]] = (
    ConsumerGroupHeartbeatRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

#: states in which the member is in the group and heartbeats at the coordinator's interval
_IN_GROUP: Final = frozenset({_S.JOINING, _S.RECONCILING, _S.ACKNOWLEDGING, _S.STABLE})
#: states the poll timer runs in (Kafka: a member that joins must keep polling too)
_POLL_TIMED: Final = _IN_GROUP | {_S.FENCED}
#: errors that mean "this coordinator is gone": look it up again, then resend
_COORDINATOR_MOVED: Final = (CoordinatorNotAvailableError, NotCoordinatorError)
#: errors that mean "the coordinator does not know this member at this epoch"
_FENCED: Final = (FencedMemberEpochError, UnknownMemberIdError)


def generate_member_id() -> str:
    """A member id as Kafka's clients make one (KIP-1082): a random UUID."""
    return str(uuid.uuid4())


@dataclass(slots=True)
class _Reconciliation:
    """An assignment being applied: the listener calls that apply it are queued (or out
    with the application); ``target`` becomes the owned set once they have run."""

    target: frozenset[TopicPartition]
    epoch: int


class ConsumerMemberMachine:
    """KIP-848's member, sans-IO: give it ``(input, now_ms)``, take requests, listener
    calls and :meth:`next_deadline`. Never reads a clock, never blocks."""

    def __init__(self, config: ConsumerMemberConfig, *, member_id: str | None = None) -> None:
        self.config = config
        self.member_id = member_id if member_id is not None else generate_member_id()
        self.member_epoch = 0
        self.state = _S.UNSUBSCRIBED
        self.fatal_error: GroupcoordError | None = None
        self._owned: frozenset[TopicPartition] = frozenset()
        # the latest assignment the coordinator sent, by topic id, until metadata names it
        self._unresolved: tuple[TopicPartitions, ...] | None = None
        self._pending_target: frozenset[TopicPartition] | None = None
        self._reconciling: _Reconciliation | None = None
        self._calls: list[ListenerCall] = []
        self._held = False  # calls are out with the application (take_callbacks(hold=True))
        self._names: dict[uuid.UUID, str] = {}
        self._ids: dict[str, uuid.UUID] = {}
        self.needs_metadata = False
        self._caps: Mapping[int, int] = config.max_versions
        self._correlation = 0
        self._coordinator_known = False
        self._heartbeat_in_flight: ConsumerGroupHeartbeatRequest | None = None
        self._heartbeat_due_ms = 0
        self._interval_ms = 0  # the coordinator's, from its first answer
        self._full = True  # the next heartbeat carries every field
        self._report_owned = False  # the next heartbeat reports the owned partitions
        self._leave_epoch: int | None = None  # a leave heartbeat to send (-1 / -2)
        self._closing = False
        self._last_poll_ms: int | None = None
        self._commits: list[QueuedCommit] = []
        self._fetches: list[QueuedFetch] = []
        self._in_flight: dict[object, QueuedCommit | QueuedFetch] = {}

    # ------------------------------------------------------------------------------
    # what the runner reads
    # ------------------------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions the application owns now (what the listener calls told it)."""
        return self._owned

    @property
    def generation(self) -> int:
        """The member epoch while in the group, else -1 (as the classic generation)."""
        return self.member_epoch if self.state in _IN_GROUP and self.member_epoch > 0 else -1

    @property
    def settled(self) -> bool:
        """In the group and owning exactly what the coordinator last sent."""
        return self.state is _S.STABLE and self._pending_target is None

    @property
    def coordinator_known(self) -> bool:
        return self._coordinator_known

    @property
    def done(self) -> bool:
        """Closed and out of the group, or failed: nothing more to send."""
        if self.state is _S.FATAL:
            return True
        return self._closing and self.state is _S.UNSUBSCRIBED and not self._in_flight

    def metadata_topics(self) -> frozenset[str]:
        return frozenset(self.config.topics)

    def set_max_versions(self, caps: Mapping[int, int]) -> None:
        self._caps = dict(caps)

    # ------------------------------------------------------------------------------
    # inputs
    # ------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> None:
        """The application polled: restart the poll timer; join (again) if out of the group."""
        self._check_poll_timer(now_ms)
        self._last_poll_ms = now_ms
        if self._closing or self.state is _S.FATAL:
            return
        if self.state in (_S.UNSUBSCRIBED, _S.STALE):
            self._rejoin()

    def coordinator_found(self, now_ms: int) -> None:
        self._coordinator_known = True
        # a coordinator that may not be the one we talked to learns everything again
        self._full = True
        self._heartbeat_due_ms = now_ms

    def coordinator_lookup_due(self, now_ms: int) -> bool:
        return not self._coordinator_known and not self.done

    def set_metadata(
        self,
        partitions_per_topic: Mapping[str, int],
        now_ms: int,
        topic_ids: Mapping[str, uuid.UUID] | None = None,
    ) -> None:
        """Topic ids from Metadata (v10+): assignments name topics by id."""
        for name, topic_id in (topic_ids or {}).items():
            old = self._ids.get(name)
            if old is not None and old != topic_id:
                self._names.pop(old, None)  # the topic was deleted and made again
            self._ids[name] = topic_id
            self._names[topic_id] = name
        self.needs_metadata = False
        self._resolve()

    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> CommitHandle:
        """Commit ``offsets`` with the member's epoch; the handle completes on the answer."""
        handle = CommitHandle(checked_offsets(offsets))
        if self.fatal_error is not None:
            handle.fail(self.fatal_error)
        elif self.done:
            handle.fail(MemberClosedError("the member is closed"))
        elif not handle.offsets:
            handle.succeed()
        else:
            self._commits.append(QueuedCommit(handle))
        return handle

    def fetch_committed(self, partitions: Iterable[TopicPartition], now_ms: int) -> FetchHandle:
        handle = FetchHandle(frozenset(TopicPartition(tp[0], tp[1]) for tp in partitions))
        if self.fatal_error is not None:
            handle.fail(self.fatal_error)
        elif self.done:
            handle.fail(MemberClosedError("the member is closed"))
        elif not handle.partitions:
            handle.succeed({})
        else:
            self._fetches.append(QueuedFetch(handle))
        return handle

    def close(self, now_ms: int) -> None:
        """Revoke what the member owns (the application may commit), then leave."""
        if self._closing or self.state is _S.FATAL:
            return
        self._closing = True
        self._drop_undelivered()
        self._give_up_owned(CallbackKind.REVOKED)
        in_group = self.member_epoch > 0 and self.state in _IN_GROUP
        pending_leave = self.state is _S.STALE and self._leave_epoch is not None
        self._set_state(_S.LEAVING)
        if in_group:
            self._leave_epoch = self._leave_group_epoch()
            self._heartbeat_due_ms = now_ms
        elif not pending_leave and self._heartbeat_in_flight is None:
            self._left()  # never joined: nothing to tell the coordinator
        # else: a join in flight is answered into a leave (_on_heartbeat), or the stale
        # member's leave still goes out

    def take_callbacks(self, *, hold: bool = False) -> list[ListenerCall]:
        """The listener calls to run now, in order. With ``hold`` the machine waits for
        :meth:`callbacks_done` before acting on them (reporting a revocation, rejoining,
        leaving): the application must have run them first."""
        calls, self._calls = self._calls, []
        if not calls:
            return calls
        if hold:
            self._held = True
        else:
            self._delivered()
        return calls

    def peek_callbacks(self) -> tuple[ListenerCall, ...]:
        """The listener calls waiting for the application, without taking them."""
        return tuple(self._calls)

    def callbacks_done(self) -> None:
        if self._held:
            self._held = False
            self._delivered()

    def receive(self, response: Response, now_ms: int) -> None:
        if isinstance(response, ConsumerGroupHeartbeatResponse):
            self._on_heartbeat(response, now_ms)
            return
        entry = self._in_flight.pop(response.correlation, None)
        if isinstance(entry, QueuedCommit) and isinstance(response, OffsetCommitResponse):
            self._on_commit(entry, response, now_ms)
        elif isinstance(entry, QueuedFetch) and isinstance(response, OffsetFetchResponse):
            self._on_fetch(entry, response, now_ms)

    def request_failed(self, request: Request, error: type[KafkaError], now_ms: int) -> None:
        """``request`` got no answer (connection lost, timed out) or could not be sent."""
        if isinstance(request, ConsumerGroupHeartbeatRequest):
            if request is self._heartbeat_in_flight:
                self._heartbeat_in_flight = None
                if request.member_epoch < 0 or self.state is _S.LEAVING:
                    # Kafka completes a leave whatever happens to its request
                    self._left()
                    return
        else:
            entry = self._in_flight.pop(request.correlation, None)
            if entry is not None:
                entry.not_before_ms = now_ms + self.config.retry_backoff_ms
                self._requeue(entry)
        if error.retriable or issubclass(error, _COORDINATOR_MOVED):
            self._coordinator_lost()
        else:
            self._fail(error(f"{type(request).__name__} failed: {error.name}"))

    # ------------------------------------------------------------------------------
    # outputs
    # ------------------------------------------------------------------------------

    def next_requests(self, now_ms: int) -> list[Request]:
        self._check_poll_timer(now_ms)
        out: list[Request] = []
        if not self._coordinator_known or self.state is _S.FATAL:
            return out
        if self._heartbeat_sendable(now_ms):
            request = self._heartbeat(now_ms)
            self._heartbeat_in_flight = request
            out.append(request)
        due, self._commits = split_due_commits(self._commits, now_ms, -1)
        for queued in due:
            correlation = self._next_correlation()
            self._in_flight[correlation] = queued
            in_group = self.member_epoch > 0 and self.state in _IN_GROUP
            out.append(
                commit_request(
                    version=version_for(OffsetCommitRequest, self._caps),
                    correlation=correlation,
                    group_id=self.config.group_id,
                    generation_id=self.member_epoch if in_group else -1,
                    member_id=self.member_id if in_group else "",
                    group_instance_id=self.config.group_instance_id if in_group else None,
                    offsets=queued.handle.offsets,
                )
            )
        due_fetches, self._fetches = split_due_fetches(self._fetches, now_ms)
        for fetch in due_fetches:
            correlation = self._next_correlation()
            self._in_flight[correlation] = fetch
            out.append(
                fetch_request(
                    version=version_for(OffsetFetchRequest, self._caps),
                    correlation=correlation,
                    group_id=self.config.group_id,
                    partitions=fetch.handle.partitions,
                )
            )
        return out

    def next_deadline(self) -> int | None:
        """When the machine next has something to do (None: only on an input)."""
        if self.state is _S.FATAL:
            return None
        due: list[int] = []
        if self._coordinator_known and self._heartbeat_gates_open():
            due.append(self._heartbeat_due_ms)
        if self._last_poll_ms is not None and self.state in _POLL_TIMED:
            due.append(self._last_poll_ms + self.config.max_poll_interval_ms)
        if self._coordinator_known:
            due.extend(q.not_before_ms for q in self._commits)
            due.extend(q.not_before_ms for q in self._fetches)
        return min(due) if due else None

    # ------------------------------------------------------------------------------
    # heartbeats
    # ------------------------------------------------------------------------------

    def _heartbeat_gates_open(self) -> bool:
        if self._heartbeat_in_flight is not None:
            return False
        if self.state is _S.STALE:
            # the application is stuck: leave at once, its lost call waits for its next poll
            return self._leave_epoch is not None
        if self.state is _S.LEAVING:
            # a leave goes out once the application has run the revocations (and commits)
            return self._leave_epoch is not None and not self._calls and not self._held
        if self.state is _S.JOINING:
            # a rejoin waits for the application to hear of its lost partitions
            return not self._calls and not self._held
        return self.state in _IN_GROUP

    def _heartbeat_sendable(self, now_ms: int) -> bool:
        return self._heartbeat_gates_open() and now_ms >= self._heartbeat_due_ms

    def _heartbeat(self, now_ms: int) -> ConsumerGroupHeartbeatRequest:
        version = version_for(ConsumerGroupHeartbeatRequest, self._caps)
        config = self.config
        if self._leave_epoch is not None:
            epoch = self._leave_epoch
            return ConsumerGroupHeartbeatRequest(
                version=version,
                correlation=self._next_correlation(),
                group_id=config.group_id,
                member_id=self.member_id,
                member_epoch=epoch,
                instance_id=config.group_instance_id,
            )
        joining = self.member_epoch == 0
        full = joining or self._full
        owned: tuple[TopicPartitions, ...] | None = None
        if joining:
            owned = ()
        elif full or self._report_owned:
            owned = self._owned_by_id()
        return ConsumerGroupHeartbeatRequest(
            version=version,
            correlation=self._next_correlation(),
            group_id=config.group_id,
            # v0 lets the coordinator name a joining member (v1: KIP-1082, the member does)
            member_id="" if version == 0 and joining else self.member_id,
            member_epoch=self.member_epoch,
            instance_id=config.group_instance_id if full else None,
            rack_id=config.rack_id if full else None,
            rebalance_timeout_ms=config.max_poll_interval_ms if full else -1,
            subscribed_topic_names=tuple(config.topics) if full else None,
            server_assignor=config.server_assignor if full else None,
            topic_partitions=owned,
        )

    def _owned_by_id(self) -> tuple[TopicPartitions, ...]:
        by_topic: dict[str, list[int]] = {}
        for tp in self._owned:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        out = []
        for topic in sorted(by_topic):
            topic_id = self._ids.get(topic)
            if topic_id is not None:  # a topic deleted meanwhile: nothing to report
                out.append(
                    TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(by_topic[topic])))
                )
        return tuple(out)

    def _on_heartbeat(self, response: ConsumerGroupHeartbeatResponse, now_ms: int) -> None:
        request = self._heartbeat_in_flight
        if request is None or request.correlation != response.correlation:
            return  # an answer from a coordinator we gave up
        self._heartbeat_in_flight = None
        error = response.error
        if request.member_epoch < 0:
            self._left()  # whatever the answer: Kafka's member is out either way
            return
        if self.state is _S.STALE:
            return
        if self.state is _S.LEAVING:
            # closed while this heartbeat was out: leave, if it left us in the group
            if error is None and response.member_epoch > 0:
                self.member_id = response.member_id or self.member_id
                self.member_epoch = response.member_epoch
                self._leave_epoch = self._leave_group_epoch()
                self._heartbeat_due_ms = now_ms
            elif self._leave_epoch is None or error is not None:
                self._left()
            return
        if error is None:
            self._heartbeat_succeeded(request, response, now_ms)
        elif issubclass(error, _FENCED):
            self._fence()
        elif issubclass(error, _COORDINATOR_MOVED):
            self._coordinator_lost()
        elif error.retriable:
            self._heartbeat_due_ms = now_ms + self.config.retry_backoff_ms
        else:
            self._fail(error(response.error_message or "ConsumerGroupHeartbeat refused"))

    def _leave_group_epoch(self) -> int:
        """-2 keeps a static member's partitions for its session (KIP-345), -1 leaves."""
        if self.config.is_static:
            return LEAVE_GROUP_STATIC_MEMBER_EPOCH
        return LEAVE_GROUP_MEMBER_EPOCH

    def _heartbeat_succeeded(
        self,
        request: ConsumerGroupHeartbeatRequest,
        response: ConsumerGroupHeartbeatResponse,
        now_ms: int,
    ) -> None:
        if response.member_id:
            self.member_id = response.member_id
        self.member_epoch = response.member_epoch
        if response.heartbeat_interval_ms > 0:
            self._interval_ms = response.heartbeat_interval_ms
        self._heartbeat_due_ms = now_ms + self._interval_ms
        if request.subscribed_topic_names is not None:
            self._full = False
        if request.topic_partitions is not None:
            self._report_owned = False
            if self.state is _S.ACKNOWLEDGING:
                self._set_state(_S.STABLE)
        if response.assignment is not None:
            self._unresolved = response.assignment
            self._resolve()
        elif self.state is _S.JOINING:
            # a join is always answered with an assignment; without one, ask in full again
            self._full = True

    # ------------------------------------------------------------------------------
    # reconciliation
    # ------------------------------------------------------------------------------

    def _resolve(self) -> None:
        """Name the topics of the latest assignment; wait for metadata for unknown ids."""
        raw = self._unresolved
        if raw is None:
            return
        target: set[TopicPartition] = set()
        for tps in raw:
            name = self._names.get(tps.topic_id)
            if name is None:
                self.needs_metadata = True
                return
            target.update(TopicPartition(name, p) for p in tps.partitions)
        self._unresolved = None
        self._pending_target = frozenset(target)
        self._reconcile()

    def _reconcile(self) -> None:
        """Start applying the pending assignment unless one is being applied already."""
        target = self._pending_target
        if target is None or self._reconciling is not None or self.state not in _IN_GROUP:
            return
        self._pending_target = None
        first = self.state is _S.JOINING
        if target == self._owned and not first:
            return  # nothing moves (e.g. the answer to a full heartbeat)
        revoked = self._owned - target
        added = target - self._owned
        if revoked:
            self._queue(CallbackKind.REVOKED, revoked)
        # always, possibly empty: the application learns that a reconciliation completed
        self._queue(CallbackKind.ASSIGNED, added)
        self._reconciling = _Reconciliation(target, self.member_epoch)
        self._set_state(_S.RECONCILING)

    def _delivered(self) -> None:
        """The application ran the listener calls handed out."""
        reconciliation = self._reconciling
        if reconciliation is not None and self.state is _S.RECONCILING:
            self._reconciling = None
            self._owned = reconciliation.target
            self._report_owned = True
            self._heartbeat_due_ms = 0  # report it now
            self._set_state(_S.ACKNOWLEDGING)
            self._reconcile()  # a newer assignment arrived meanwhile
        elif self.state is _S.FENCED and not self._calls:
            self._rejoin()

    def _queue(self, kind: CallbackKind, partitions: frozenset[TopicPartition]) -> None:
        self._calls.append(
            ListenerCall(kind=kind, partitions=partitions, generation=self.member_epoch)
        )

    def _drop_undelivered(self) -> None:
        """Calls of an unfinished reconciliation not yet handed out are void: the member
        gives up what it owns instead. Calls already out with the application complete."""
        if self._held and self._reconciling is not None:
            # those calls are with the application now: it owns their target
            self._owned = self._reconciling.target
        if not self._held:
            self._calls.clear()
        self._reconciling = None
        self._pending_target = None
        self._unresolved = None

    def _give_up_owned(self, how: CallbackKind) -> None:
        if self._owned:
            self._queue(how, self._owned)
        self._owned = frozenset()

    # ------------------------------------------------------------------------------
    # leaving the group: fenced, stale, closed, failed
    # ------------------------------------------------------------------------------

    def _rejoin(self) -> None:
        self.member_epoch = 0
        self._full = True
        self._report_owned = False
        self._leave_epoch = None
        self._heartbeat_due_ms = 0
        self._set_state(_S.JOINING)

    def _fence(self) -> None:
        """The coordinator dropped this member: its partitions are lost; rejoin under the
        same id (epoch 0) once the application has heard."""
        self._drop_undelivered()
        self._give_up_owned(CallbackKind.LOST)
        self.member_epoch = 0
        self._set_state(_S.FENCED)
        if not self._calls and not self._held:
            self._rejoin()

    def _check_poll_timer(self, now_ms: int) -> None:
        last = self._last_poll_ms
        if last is None or self.state not in _POLL_TIMED or self._held:
            return
        if now_ms < last + self.config.max_poll_interval_ms:
            return
        # Kafka: "consumer poll timeout has expired": leave, the partitions are lost
        in_group = self.member_epoch > 0
        self._drop_undelivered()
        self._give_up_owned(CallbackKind.LOST)
        self._set_state(_S.STALE)
        if in_group:
            self._leave_epoch = self._leave_group_epoch()
            self._heartbeat_due_ms = now_ms

    def _left(self) -> None:
        self._leave_epoch = None
        self.member_epoch = 0
        if self.state is _S.LEAVING:
            self._set_state(_S.UNSUBSCRIBED)

    def _coordinator_lost(self) -> None:
        self._coordinator_known = False
        self._heartbeat_in_flight = None
        for entry in self._in_flight.values():
            self._requeue(entry)
        self._in_flight.clear()

    def _fail(self, error: GroupcoordError) -> None:
        self.fatal_error = error
        self._set_state(_S.FATAL)
        for queued in self._commits:
            queued.handle.fail(error)
        for fetch in self._fetches:
            fetch.handle.fail(error)
        for entry in self._in_flight.values():
            entry.handle.fail(error)
        self._commits.clear()
        self._fetches.clear()
        self._in_flight.clear()

    # ------------------------------------------------------------------------------
    # offsets
    # ------------------------------------------------------------------------------

    def _on_commit(self, entry: QueuedCommit, response: OffsetCommitResponse, now_ms: int) -> None:
        errors = commit_errors(response)
        if not errors:
            entry.handle.succeed()
            return
        kinds = set(errors.values())
        if any(issubclass(k, _COORDINATOR_MOVED) for k in kinds):
            self._coordinator_lost()
            self._commits.append(entry)
        elif kinds <= {StaleMemberEpochError} or all(k.retriable for k in kinds):
            # the epoch moved on since the commit was built: send it again with the new one
            entry.not_before_ms = now_ms + self.config.retry_backoff_ms
            self._commits.append(entry)
        elif any(issubclass(k, _FENCED) for k in kinds):
            first = next(k for k in kinds if issubclass(k, _FENCED))
            entry.handle.fail(
                CommitFailedError(f"the member was fenced and its partitions lost ({first.name})"),
                errors,
            )
        else:
            first_error = min(kinds, key=lambda k: k.code)
            entry.handle.fail(
                first_error(f"offset commit refused for {len(errors)} partitions"), errors
            )

    def _on_fetch(self, entry: QueuedFetch, response: OffsetFetchResponse, now_ms: int) -> None:
        offsets, error = fetched_offsets(response)
        if error is None:
            entry.handle.succeed(offsets)
        elif issubclass(error, _COORDINATOR_MOVED):
            self._coordinator_lost()
            self._fetches.append(entry)
        elif error.retriable:
            entry.not_before_ms = now_ms + self.config.retry_backoff_ms
            self._fetches.append(entry)
        else:
            entry.handle.fail(error("offset fetch refused"))

    def _requeue(self, entry: QueuedCommit | QueuedFetch) -> None:
        if isinstance(entry, QueuedCommit):
            self._commits.append(entry)
        else:
            self._fetches.append(entry)

    # ------------------------------------------------------------------------------

    def _next_correlation(self) -> int:
        self._correlation += 1
        return self._correlation

    def _set_state(self, target: ConsumerMemberState) -> None:
        check_consumer_transition(self.state, target)
        self.state = target

    def __repr__(self) -> str:
        return (
            f"<ConsumerMemberMachine group={self.config.group_id!r} member_id={self.member_id!r}"
            f" epoch={self.member_epoch} state={self.state.name}>"
        )
