"""The sans-IO group member: the client side of Kafka's classic group protocol.

:class:`MemberMachine` is what Kafka's ``ConsumerCoordinator`` + ``AbstractCoordinator`` +
``Heartbeat`` do, as a state machine that never reads a clock, sleeps, or touches a socket:
inputs are method calls carrying ``now_ms``; outputs are requests (our coordinator message
dataclasses, :mod:`groupcoord.coordinator.messages`), listener calls for the application
thread, and the next deadline. A runner (threaded client, simulator, tests) sends what
:meth:`~MemberMachine.next_requests` returns, feeds the answers back through
:meth:`~MemberMachine.receive` (matched by the request's ``correlation``) and calls
``next_requests`` again at :meth:`~MemberMachine.next_deadline`.

Behaviour, as the Java consumer's (KIP-62, KIP-345, KIP-394, KIP-429, KIP-800):

- A (re)join starts inside :meth:`poll` (the application's thread), as Kafka joins only from
  ``poll()``. Heartbeats go out every heartbeat.interval.ms while joined (also while a
  rebalance is pending: REBALANCE_IN_PROGRESS answers keep the session alive).
- Eager: everything owned is revoked before JoinGroup. Cooperative: owned partitions are kept
  and sent as ``owned_partitions`` with the generation; after SyncGroup only what was taken
  away is revoked, and if anything was, the member rejoins at once.
- A JoinGroup or LeaveGroup that must follow revocation callbacks is held back until the
  runner has taken those callbacks (:meth:`take_callbacks`; with ``hold=True`` until
  :meth:`callbacks_done`), so the application has given the partitions up before the
  coordinator can hand them to someone else.
- max.poll.interval.ms passed without :meth:`poll`: dynamic members send LeaveGroup, static
  members just stop heartbeating; either way the generation is reset and the partitions are
  lost (never committed); the next :meth:`poll` rejoins.
- UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION: reset generation and member id, partitions lost,
  rejoin. FENCED_INSTANCE_ID and other non-retriable join errors are fatal
  (:attr:`~MemberMachine.fatal_error`; the runner raises it from ``poll()``).
- The coordinator moved or went away: :meth:`coordinator_lost`; in-flight requests are
  forgotten and re-sent once :meth:`coordinator_found` is called (after
  :meth:`coordinator_lookup_due` allows a lookup, retry.backoff.ms later).

Beside it: the state and join-phase tables (:mod:`~groupcoord.member.states`), what each
Kafka error answer means per API (:mod:`~groupcoord.member.error_actions`), and the offset
commit/fetch queues and their answers (:mod:`~groupcoord.member.offsets`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import cast

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.assignors.builtin import CooperativeStickyAssignor
from groupcoord.assignors.delayed_imbalance import decode_scheduled_delay
from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    with_correlation,
)
from groupcoord.errors import (
    FencedInstanceIdError,
    GroupcoordError,
    InconsistentGroupProtocolError,
    InvalidAssignorInput,
    InvalidPayload,
    KafkaError,
    NetworkException,
    RebalanceInProgressError,
    UnsupportedVersionError,
)
from groupcoord.member import requests as build
from groupcoord.member.config import MemberConfig
from groupcoord.member.error_actions import (
    ErrorAction,
    action_for,
    commit_action,
    is_coordinator_error,
)
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
    fail_commits,
    fetched_offsets,
    settle_commit,
    split_due_commits,
    split_due_fetches,
)
from groupcoord.member.states import (
    HEARTBEAT_STATES,
    JoinPhase,
    MemberState,
    check_phase_transition,
    check_transition,
)
from groupcoord.protocol import (
    decode_assignment,
    decode_subscription,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from groupcoord.protocol.consumer import OwnershipSource
from groupcoord.protocol.group_messages import error_response
from groupcoord.types import Subscription, TopicPartition

__all__ = ["MemberMachine"]

#: HEARTBEAT_STATES as a tuple: membership by identity, without hashing the enum (hot path)
_HEARTBEAT_STATES = tuple(HEARTBEAT_STATES)

log = logging.getLogger("groupcoord.member")

_A = ErrorAction

_SUBSCRIPTION_VERSION = 3

# the phases by name, for identity tests on hot paths
_IDLE, _WANTED, _STARTED, _SENT = (
    JoinPhase.IDLE,
    JoinPhase.WANTED,
    JoinPhase.STARTED,
    JoinPhase.SENT,
)

# KIP-800 reasons (free text that the coordinator logs).
_REASON_FIRST = "joining the group for the first time"
_REASON_POLL_TIMEOUT = (
    "consumer poll timeout has expired: the time between calls to poll() exceeded "
    "max.poll.interval.ms"
)


@dataclass(slots=True)
class _PendingLeave:
    member_id: str
    reason: str


@dataclass(slots=True)
class _InFlight:
    request: AnyRequest
    commit: CommitHandle | None = None
    fetch: FetchHandle | None = None
    sent_ms: int = 0


@dataclass(slots=True)
class _Timers:
    """Every time the machine reacts to; ``None`` = not armed."""

    last_poll_ms: int = 0
    heartbeat_due_ms: int = 0
    last_heartbeat_ack_ms: int = 0
    join_retry_ms: int = 0
    coordinator_retry_ms: int = 0
    scheduled_rejoin_ms: int | None = None
    #: when we last knew the group was not rebalancing: the send time of the last heartbeat
    #: answered without error (or of our last successful JoinGroup)
    last_clean_ms: int = 0
    #: a rebalance is pending and we have not rejoined: past this the coordinator may have
    #: completed it without us, so our partitions count as lost
    rejoin_deadline_ms: int | None = None


@dataclass(slots=True)
class _Flags:
    coordinator_known: bool = False
    #: where the (re)join sequence is (states.JoinPhase); changed only by _set_phase
    phase: JoinPhase = JoinPhase.WANTED
    rejoin_reason: str = _REASON_FIRST
    #: listener calls that must reach the application before the next JoinGroup/LeaveGroup
    awaiting_delivery: bool = False
    #: the runner took callbacks with ``hold=True`` and has not called callbacks_done yet
    holding: bool = False
    poll_expired: bool = False
    is_leader: bool = False
    leave_sent: bool = False
    #: the generation was reset with partitions lost; cleared by the next successful join
    membership_lost: bool = False
    group_topics: frozenset[str] = field(default_factory=frozenset)

    @property
    def joining(self) -> bool:
        """A join sequence is running: its JoinGroup is due (once the gates allow) or sent."""
        phase = self.phase
        return phase is _STARTED or phase is _SENT


class MemberMachine:
    """One group member; see the module documentation for the behaviour.

    State, read by runners and tests: :attr:`state`, :attr:`member_id`, :attr:`generation`
    (``-1`` unless STABLE), :attr:`assignment`, :attr:`fatal_error`.
    """

    def __init__(
        self, config: MemberConfig, *, correlation_ids: Iterator[int] | None = None
    ) -> None:
        """``correlation_ids``: where request correlations come from (default: 1, 2, ...).
        A runner that routes many machines' answers through one coordinator (the simulator)
        passes one shared counter so that a correlation names its sender."""
        if not isinstance(config, MemberConfig):
            raise TypeError(f"config must be a MemberConfig, not {type(config).__name__}")
        self.config = config
        self.protocol: RebalanceProtocol = config.rebalance_protocol
        self.state = MemberState.UNJOINED
        self.member_id = ""
        #: the generation we last joined; kept while rebalancing (it goes into owned_partitions)
        self._generation_id = -1
        self.protocol_name: str | None = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.fatal_error: GroupcoordError | None = None
        self._assignors: dict[str, Assignor] = {a.name: a for a in config.assignors}
        self._caps: dict[int, int] = dict(config.max_versions)
        self._metadata: dict[str, int] = {}
        self._assignment_snapshot: dict[str, int | None] = {}
        self._last_assigned: tuple[TopicPartition, ...] | None = None
        #: KIP-429: the generation whose assignment revoked partitions, until the round
        #: after it ran (a static rejoin can bring that generation's assignment back)
        self._second_round_owed: int | None = None
        self._callbacks: list[ListenerCall] = []
        self._commits: list[QueuedCommit] = []
        self._fetches: list[QueuedFetch] = []
        self._leave: _PendingLeave | None = None
        self._pending_sync: SyncGroupRequest | None = None
        self._inflight: dict[object, _InFlight] = {}
        #: this generation's heartbeat; every beat is a copy with its own correlation
        self._heartbeat_proto: HeartbeatRequest | None = None
        #: the last OffsetCommit sent: the next one with the same partitions is a copy
        self._last_commit: OffsetCommitRequest | None = None
        self._correlations = itertools.count(1) if correlation_ids is None else correlation_ids
        self._t = _Timers()
        self._f = _Flags()

    # ------------------------------------------------------------------ state

    @property
    def generation(self) -> int:
        """The current generation, or -1 when not in a stable group."""
        return self._generation_id if self.state is MemberState.STABLE else -1

    @property
    def heartbeat_due_ms(self) -> int:
        """When the next heartbeat falls due (one is sent then if none is in flight)."""
        return self._t.heartbeat_due_ms

    @property
    def last_poll_ms(self) -> int:
        """When the application last polled, as far as the machine was told."""
        return self._t.last_poll_ms

    @property
    def coordinator_known(self) -> bool:
        return self._f.coordinator_known

    @property
    def is_leader(self) -> bool:
        """Whether the last JoinGroup made this member the leader."""
        return self._f.is_leader

    @property
    def join_phase(self) -> JoinPhase:
        """Where the member is in a (re)join sequence (see :class:`~.states.JoinPhase`)."""
        return self._f.phase

    @property
    def rejoin_needed(self) -> bool:
        """A rejoin is wanted or running."""
        return self._f.phase is not _IDLE

    @property
    def needs_metadata(self) -> bool:
        """Never: classic assignments name their topics (KIP-848's name topic ids)."""
        return False

    @property
    def settled(self) -> bool:
        """Stable with no rejoin wanted: what ``poll()`` waits for."""
        return self.state is MemberState.STABLE and not self.rejoin_needed

    @property
    def poll_expired(self) -> bool:
        """max.poll.interval.ms passed without a poll; cleared by the next :meth:`poll`."""
        return self._f.poll_expired

    @property
    def done(self) -> bool:
        """After :meth:`close`: nothing is left to send or to wait for."""
        if self.state is not MemberState.CLOSED:
            return False
        return not (self._inflight or self._commits or self._fetches or self._leave)

    def metadata_topics(self) -> frozenset[str]:
        """Topics whose partition counts the member needs (the leader: the whole group's)."""
        return frozenset(self.config.topics) | self._f.group_topics

    def set_max_versions(self, caps: Mapping[int, int]) -> None:
        """Cap request versions (API key -> highest version), e.g. from ApiVersions."""
        self._caps.update(caps)
        self._heartbeat_proto = None

    # ------------------------------------------------------------------ inputs

    def poll(self, now_ms: int) -> None:
        """The application called ``poll()``: reset the poll timer; start a (re)join if due."""
        # Timers first: an application back after max.poll.interval.ms has been out of the
        # group for a while even if no one told the machine the time in between.
        self._advance(now_ms)
        self._t.last_poll_ms = now_ms
        self._f.poll_expired = False
        if self.state in (MemberState.FATAL, MemberState.CLOSED):
            return
        phase = self._f.phase
        if phase is _STARTED or phase is _SENT:
            return
        if phase is _IDLE and self.state is not MemberState.UNJOINED:
            return
        self._set_phase(_STARTED)
        if self.protocol is RebalanceProtocol.EAGER and self.assignment:
            # Eager: give everything up before JoinGroup (Kafka's onJoinPrepare).
            self._queue_callback(CallbackKind.REVOKED, self.assignment, gate=True)
            self.assignment = frozenset()

    def poll_idle(self, now_ms: int, out: list[AnyRequest]) -> int | None:
        """:meth:`poll` for a member with nothing to do but heartbeat, or ``None``.

        A stable member with nothing queued, nothing to rejoin and no timeout due at
        ``now_ms`` only resets its poll timer when polled, and :meth:`next_requests` would
        return at most a heartbeat: then record the poll, append that heartbeat (if one is
        due) to ``out`` as :meth:`next_requests` would have returned it, and return
        :meth:`next_deadline`. Otherwise change nothing and return ``None`` (call
        :meth:`poll` and :meth:`next_requests` as usual). For runners that poll very often
        (the simulator's application loop).
        """
        if self.poll_idle_blocked():
            return None
        return self._poll_quiet(now_ms, out, None)

    def poll_idle_commit(
        self, offsets: Mapping[TopicPartition, int], now_ms: int, out: list[AnyRequest]
    ) -> int | None:
        """:meth:`poll_idle` with a commit of ``offsets`` (not empty) made right after the
        poll, or ``None``.

        For a member that :meth:`poll_idle` would take, :meth:`poll`, :meth:`commit` of
        ``offsets`` and :meth:`next_requests` would record the poll and send the commit
        (and the heartbeat, if one is due, after it): then do that, append the requests
        to ``out`` as :meth:`next_requests` would have returned them, and return
        :meth:`next_deadline`. Otherwise change nothing and return ``None``. Raises as
        :meth:`commit` does for malformed offsets. For runners that auto-commit from
        their poll loop (the simulator)."""
        clean = checked_offsets(offsets)
        if not clean or self._f.membership_lost or self.poll_idle_blocked():
            return None
        return self._poll_quiet(now_ms, out, clean)

    def _poll_quiet(
        self, now_ms: int, out: list[AnyRequest], commit: dict[TopicPartition, int] | None
    ) -> int | None:
        """:meth:`poll_idle` and :meth:`poll_idle_commit` once the member is known to be
        stable and idle."""
        t = self._t
        best = t.last_heartbeat_ack_ms + self.config.session_timeout_ms
        if now_ms >= best or now_ms >= t.last_poll_ms + self.config.max_poll_interval_ms:
            return None  # a timeout is due
        t.last_poll_ms = now_ms
        if commit is not None:
            # commit()'s queue entry and _emit_commits' request, in one step
            out.append(self._send_commit(CommitHandle(commit)))
        heartbeat_due = t.heartbeat_due_ms
        if (now_ms >= heartbeat_due or heartbeat_due < best) and not self._heartbeat_in_flight():
            if now_ms >= heartbeat_due:
                # _emit_heartbeat's work for this state, and next_requests' bookkeeping
                request = self._beat(now_ms)
                self._inflight[request.correlation] = _InFlight(request, sent_ms=now_ms)
                out.append(request)
            else:
                best = heartbeat_due
        poll_deadline = now_ms + self.config.max_poll_interval_ms
        return poll_deadline if poll_deadline < best else best

    def quiet_deadline_base(self) -> int:
        """For a member :meth:`poll_idle` takes: its deadline after a poll at a time before
        this one is the earlier of this and the poll plus ``max.poll.interval.ms`` (what
        :meth:`poll_idle` returns then). This is the next heartbeat, or the session's end
        while one is in flight or when that comes first."""
        t = self._t
        best = t.last_heartbeat_ack_ms + self.config.session_timeout_ms
        if t.heartbeat_due_ms < best and not self._heartbeat_in_flight():
            return t.heartbeat_due_ms
        return best

    def quiet_heartbeat_answered(
        self, sent_ms: int, answered_ms: int, last_poll_ms: int | None = None
    ) -> bool:
        """Record a heartbeat the runner sent at ``sent_ms`` for this machine and saw
        answered without error at ``answered_ms``, the runner polling at both times (the
        simulator's heartbeat lane). The machine must be quiet as :meth:`poll_idle` requires,
        with the heartbeat due by ``sent_ms`` and both times before any timeout; the state
        is then what sending it (:meth:`poll_idle` at ``sent_ms``), :meth:`receive` of its
        answer and :meth:`poll_idle` at ``answered_ms`` leave: a quiet stretch of any number
        of such heartbeats is told by its last one. Otherwise change nothing and return
        ``False``.

        ``last_poll_ms``: the application's last poll was then, not at ``answered_ms`` (the
        simulator's processing lane, whose heartbeats are also sent and read by the
        heartbeat thread while the application processes a batch): no earlier than the
        last poll the machine knows, and the answer before the poll timer's end."""
        if self.poll_idle_blocked():
            return False
        t, config = self._t, self.config
        poll = answered_ms if last_poll_ms is None else last_poll_ms
        # (the timeouts are checked against the stretch's own times: the machine's last
        # acknowledgement and poll may be those before the stretch)
        if not (
            t.last_poll_ms <= sent_ms < answered_ms
            and t.last_poll_ms <= poll
            and sent_ms >= t.heartbeat_due_ms
            and answered_ms - sent_ms < min(config.session_timeout_ms, config.max_poll_interval_ms)
            and answered_ms < poll + config.max_poll_interval_ms
            and not self._heartbeat_in_flight()
        ):
            return False
        t.heartbeat_due_ms = sent_ms + config.heartbeat_interval_ms
        t.last_clean_ms = max(t.last_clean_ms, sent_ms)
        t.last_heartbeat_ack_ms = answered_ms
        t.last_poll_ms = poll
        return True

    @property
    def last_heartbeat_ack_ms(self) -> int:
        """When the last heartbeat answer (or join) that counts for the session arrived."""
        return self._t.last_heartbeat_ack_ms

    def quiet_commit_request(
        self, offsets: Mapping[TopicPartition, int], like: OffsetCommitRequest | None
    ) -> OffsetCommitRequest:
        """The OffsetCommit of ``offsets`` this machine would send now (correlation 0), not
        sent and not tracked: for a runner that hands a quiet commit to the coordinator
        without the machine and tells the machine only what is still in flight when the
        quiet stretch ends (the simulator's processing lane). ``like``: a request this
        method returned before, copied when it has the same fields and partitions."""
        return build.commit_request(
            version=self._version(OffsetCommitRequest),
            correlation=0,
            group_id=self.config.group_id,
            generation_id=self._generation_id,
            member_id=self.member_id,
            group_instance_id=self.config.group_instance_id,
            offsets=offsets,
            like=like,
        )

    def poll_idle_blocked(self) -> bool:
        """Whether :meth:`poll_idle` would return ``None`` whatever the time: the member is
        not stable and idle (something queued, a rejoin, a request other than a heartbeat
        pending, ...)."""
        f, t = self._f, self._t
        return (
            self.state is not MemberState.STABLE
            or not f.coordinator_known
            or f.phase is not _IDLE
            or f.poll_expired
            or f.awaiting_delivery
            or bool(self._callbacks)
            or bool(self._commits)
            or bool(self._fetches)
            or self._leave is not None
            or self._pending_sync is not None
            or t.scheduled_rejoin_ms is not None
            or t.rejoin_deadline_ms is not None
        )

    def coordinator_found(self, now_ms: int) -> None:
        """The runner (re)discovered the group coordinator and can reach it."""
        if not self._f.coordinator_known:
            self._f.coordinator_known = True
            # Heartbeat at once; the session clock keeps running from the last answer (a
            # member that was cut off longer than a session has been expired meanwhile).
            self._t.heartbeat_due_ms = now_ms

    def coordinator_lost(self, now_ms: int) -> None:
        """The coordinator moved or cannot be reached: forget in-flight requests and re-send
        what still matters once it is found again (lookups no sooner than retry.backoff.ms)."""
        if not self._f.coordinator_known:
            return
        log.info("group %s: coordinator lost", self.config.group_id)
        self._f.coordinator_known = False
        self._t.coordinator_retry_ms = now_ms + self.config.retry_backoff_ms
        inflight, self._inflight = self._inflight, {}
        for entry in inflight.values():
            self._requeue(entry)
        self._pending_sync = None
        if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
            # The join phase is lost with the connection; our generation may still be valid.
            # (the phase stays SENT: these states are entered only with a JoinGroup sent)
            self._set_state(MemberState.UNJOINED)
            self._f.rejoin_reason = "coordinator changed during the rebalance"

    def coordinator_lookup_failed(self, now_ms: int) -> None:
        """A FindCoordinator attempt failed: the next one is due retry.backoff.ms later."""
        if not self._f.coordinator_known:
            self._t.coordinator_retry_ms = now_ms + self.config.retry_backoff_ms

    def coordinator_lookup_due(self, now_ms: int) -> bool:
        """Whether the runner should look the coordinator up now."""
        return (
            not self._f.coordinator_known
            and self.state is not MemberState.FATAL
            and not self.done
            and now_ms >= self._t.coordinator_retry_ms
        )

    def set_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None:
        """Partition counts of topics (at least :meth:`metadata_topics`).

        As in Kafka, the leader rejoins when the counts of the group's topics differ from
        what its last assignment was computed with.
        """
        for topic, count in partitions_per_topic.items():
            if not isinstance(topic, str) or isinstance(count, bool) or not isinstance(count, int):
                raise TypeError("partitions_per_topic must map str to int")
            if count < 0:
                raise ValueError(f"topic {topic!r} has a negative partition count {count}")
        self._metadata.update(partitions_per_topic)
        if (
            self._f.is_leader
            and self.state is MemberState.STABLE
            and self._snapshot(self._assignment_snapshot) != self._assignment_snapshot
        ):
            self._request_rejoin("cached metadata of the group's topics has changed")

    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> CommitHandle:
        """Commit ``offsets`` (the next offset to read, per partition) for the group.

        Sent with the current generation. During a rebalance the commit waits and goes out
        once the group is stable again (so does one answered REBALANCE_IN_PROGRESS). Raises
        ``TypeError``/``ValueError`` for malformed offsets.
        """
        clean = checked_offsets(offsets)
        handle = CommitHandle(clean)
        if not clean:
            handle.succeed()
        elif self.fatal_error is not None:
            handle.fail(self.fatal_error)
        elif self._commit_impossible():
            handle.fail(
                CommitFailedError(
                    "the member is not part of an active group (its partitions were lost); "
                    "poll() to rejoin"
                )
            )
        else:
            self._commits.append(QueuedCommit(handle))
        return handle

    def fetch_committed(self, partitions: Iterable[TopicPartition], now_ms: int) -> FetchHandle:
        """Ask the coordinator for the committed offsets of ``partitions``."""
        wanted = frozenset(TopicPartition(tp[0], tp[1]) for tp in partitions)
        handle = FetchHandle(wanted)
        if not wanted:
            handle.succeed({})
        elif self.fatal_error is not None:
            handle.fail(self.fatal_error)
        elif self.state is MemberState.CLOSED:
            handle.fail(MemberClosedError("member is closed"))
        else:
            self._fetches.append(QueuedFetch(handle))
        return handle

    def close(self, now_ms: int) -> None:
        """Leave: revoke (or report lost) what we own, then LeaveGroup unless static."""
        if self.state is MemberState.CLOSED:
            return
        was = self.state
        if was is not MemberState.FATAL and self.assignment:
            lost = self._generation_lost()
            kind = CallbackKind.LOST if lost else CallbackKind.REVOKED
            self._queue_callback(kind, self.assignment, gate=not lost)
            self.assignment = frozenset()
        if (
            was not in (MemberState.FATAL, MemberState.UNJOINED)
            and not self.config.is_static
            and self.member_id
            and self._f.coordinator_known
        ):
            self._leave = _PendingLeave(self.member_id, "the consumer is being closed")
        self._set_state(MemberState.CLOSED)
        self._stop_join()
        self._forget_group_requests()  # their answers no longer matter
        self._pending_sync = None
        for queued in self._fetches:
            queued.handle.fail(MemberClosedError("member closed before the fetch was sent"))
        self._fetches.clear()

    def take_callbacks(self, *, hold: bool = False) -> list[ListenerCall]:
        """The listener calls queued for the application thread, oldest first.

        Taking them lets a held-back JoinGroup/LeaveGroup go out. With ``hold=True`` it
        stays held until :meth:`callbacks_done`, for runners that deliver callbacks while
        another thread may call :meth:`next_requests`.
        """
        calls, self._callbacks = self._callbacks, []
        if hold and calls:
            self._f.holding = True
        elif not self._f.holding:
            self._f.awaiting_delivery = False
        return calls

    @property
    def delivery_due(self) -> bool:
        """Whether :meth:`take_callbacks` would do anything: return calls, or release a
        held-back JoinGroup/LeaveGroup. ``False`` lets a runner skip it."""
        return bool(self._callbacks) or (self._f.awaiting_delivery and not self._f.holding)

    @property
    def has_callbacks(self) -> bool:
        """Whether listener calls are queued (``bool(peek_callbacks())`` without a copy)."""
        return bool(self._callbacks)

    def peek_callbacks(self) -> tuple[ListenerCall, ...]:
        """The queued listener calls, without taking them (for observers and tests)."""
        return tuple(self._callbacks)

    def callbacks_done(self) -> None:
        """The callbacks taken with ``hold=True`` have run."""
        self._f.holding = False
        if not self._callbacks:
            self._f.awaiting_delivery = False

    def request_failed(self, request: AnyRequest, error: type[KafkaError], now_ms: int) -> None:
        """``request`` got no answer (transport failure, timeout): ``error`` says why."""
        entry = self._inflight.get(request.correlation)
        if entry is None or entry.request is not request:
            return
        if not (isinstance(error, type) and issubclass(error, KafkaError)):
            error = NetworkException  # a socket error or the like: the transport failed
        if is_coordinator_error(error):
            del self._inflight[request.correlation]
            self._requeue(entry)
            self.coordinator_lost(now_ms)
            return
        # a member sends classic requests only, so the answer is a classic response
        answer = error_response(
            request.API_KEY, request.version, request, error, correlation=request.correlation
        )
        self.receive(cast(AnyResponse, answer), now_ms)

    def receive(self, response: AnyResponse, now_ms: int) -> None:
        """A response to a request this machine emitted (others are ignored: stale)."""
        entry = self._inflight.pop(response.correlation, None)
        if entry is None:
            log.debug("ignoring a response to no request in flight: %r", response)
            return
        self._advance(now_ms)
        request = entry.request
        if type(response) is HeartbeatResponse and type(request) is HeartbeatRequest:
            # first: by far the most frequent answer
            if response.error is None:
                self._t.last_clean_ms = max(self._t.last_clean_ms, entry.sent_ms)
            self._on_heartbeat(request, response, now_ms)
        elif isinstance(response, JoinGroupResponse) and isinstance(request, JoinGroupRequest):
            if response.error is None:
                # the join phase ended after we sent this; a new rebalance starts later still
                self._t.last_clean_ms = max(self._t.last_clean_ms, entry.sent_ms)
            self._on_join(response, now_ms)
        elif isinstance(response, SyncGroupResponse) and isinstance(request, SyncGroupRequest):
            self._on_sync(request, response, now_ms)
        elif isinstance(response, HeartbeatResponse) and isinstance(request, HeartbeatRequest):
            if response.error is None:
                self._t.last_clean_ms = max(self._t.last_clean_ms, entry.sent_ms)
            self._on_heartbeat(request, response, now_ms)
        elif isinstance(response, LeaveGroupResponse):
            error = response.error
            if error is not None and action_for(LeaveGroupRequest, error) is _A.IGNORE:
                log.info("LeaveGroup answered %s (ignored, as Kafka does)", error.name)
        elif isinstance(response, OffsetCommitResponse) and entry.commit is not None:
            assert isinstance(request, OffsetCommitRequest)
            self._on_commit(request, entry.commit, response, now_ms)
        elif isinstance(response, OffsetFetchResponse) and entry.fetch is not None:
            self._on_fetch(entry.fetch, response, now_ms)
        else:
            raise TypeError(f"{type(response).__name__} does not answer {type(request).__name__}")

    # ------------------------------------------------------------------ outputs

    def next_requests(self, now_ms: int) -> list[AnyRequest]:
        """The requests to send now, in order (commits before a JoinGroup or LeaveGroup)."""
        self._advance(now_ms)
        out: list[AnyRequest] = []
        f = self._f
        if not f.coordinator_known:
            return out
        phase = f.phase
        if (
            (phase is _IDLE or phase is _WANTED)
            and not self._commits
            and not self._fetches
            and self._leave is None
            and self._pending_sync is None
        ):
            # the usual case (a stable member): at most a heartbeat is due; the emitters
            # skipped here would have emitted nothing
            self._emit_heartbeat(now_ms, out)
            if out:
                request = out[0]
                if request.correlation not in self._inflight:
                    self._inflight[request.correlation] = _InFlight(request, sent_ms=now_ms)
            return out
        self._emit_commits(now_ms, out)
        self._emit_fetches(now_ms, out)
        self._emit_leave(out)
        self._emit_join(now_ms, out)
        if self._pending_sync is not None:
            out.append(self._pending_sync)
            self._pending_sync = None
        self._emit_heartbeat(now_ms, out)
        for request in out:
            if request.correlation not in self._inflight:
                self._inflight[request.correlation] = _InFlight(request, sent_ms=now_ms)
        return out

    def next_deadline(self) -> int | None:
        """When to call :meth:`next_requests` again (``None``: only on new input)."""
        t, f, state = self._t, self._f, self.state
        if state is MemberState.FATAL or self.done:
            return None
        heartbeating = state in _HEARTBEAT_STATES and not f.poll_expired
        best: int | None = None
        if not f.coordinator_known:
            best = t.coordinator_retry_ms
        else:
            if heartbeating:
                best = t.last_heartbeat_ack_ms + self.config.session_timeout_ms
                if t.heartbeat_due_ms < best and not self._heartbeat_in_flight():
                    best = t.heartbeat_due_ms
            if (
                (f.phase is _STARTED or f.phase is _SENT)
                and self._join_sendable_except_time()
                and (best is None or t.join_retry_ms < best)
            ):
                best = t.join_retry_ms
            if self._commits and self._commit_sendable():
                for q in self._commits:
                    if self._generation_id >= q.min_generation and (
                        best is None or q.not_before_ms < best
                    ):
                        best = q.not_before_ms
            for fq in self._fetches:
                if best is None or fq.not_before_ms < best:
                    best = fq.not_before_ms
        if heartbeating:
            poll_deadline = t.last_poll_ms + self.config.max_poll_interval_ms
            if best is None or poll_deadline < best:
                best = poll_deadline
        if state is MemberState.STABLE:
            if t.scheduled_rejoin_ms is not None and (best is None or t.scheduled_rejoin_ms < best):
                best = t.scheduled_rejoin_ms
            if t.rejoin_deadline_ms is not None and (best is None or t.rejoin_deadline_ms < best):
                best = t.rejoin_deadline_ms
        return best

    # ------------------------------------------------------------------ timers

    def _advance(self, now_ms: int) -> None:
        t, f = self._t, self._f
        if self.state in _HEARTBEAT_STATES and not f.poll_expired:
            if now_ms >= t.last_poll_ms + self.config.max_poll_interval_ms:
                self._on_poll_timeout(now_ms)
            elif (
                f.coordinator_known
                and now_ms >= t.last_heartbeat_ack_ms + self.config.session_timeout_ms
            ):
                self._on_session_timeout(now_ms)
        if (
            t.rejoin_deadline_ms is not None
            and self.state is MemberState.STABLE
            and now_ms >= t.rejoin_deadline_ms
        ):
            self._on_rejoin_timeout(now_ms)
        if (
            t.scheduled_rejoin_ms is not None
            and self.state is MemberState.STABLE
            and now_ms >= t.scheduled_rejoin_ms
        ):
            t.scheduled_rejoin_ms = None
            self._request_rejoin("scheduled rebalance after a static member's departure (KIP-415)")

    def _on_rejoin_timeout(self, now_ms: int) -> None:
        # Kafka's consumer keeps its partitions until its own poll timer runs out, although
        # the coordinator drops a member that has not rejoined within the rebalance timeout,
        # which started earlier. Giving them up here keeps ownership exclusive.
        log.warning(
            "group %s: did not rejoin the pending rebalance in time; partitions lost",
            self.config.group_id,
        )
        self._timed_out("did not rejoin within the rebalance timeout", stop_join=False)

    def _on_session_timeout(self, now_ms: int) -> None:
        # No heartbeat answer for a whole session: the coordinator has expired us by now, so
        # our partitions may be someone else's. Report them lost at once (as librdkafka does;
        # Java only marks the coordinator unknown and learns it from the next answer).
        log.warning(
            "group %s: no heartbeat answer within the session timeout", self.config.group_id
        )
        self._timed_out("session timed out without a heartbeat answer", stop_join=True)
        self.coordinator_lost(now_ms)

    def _on_poll_timeout(self, now_ms: int) -> None:
        log.warning("group %s: %s", self.config.group_id, _REASON_POLL_TIMEOUT)
        self._f.poll_expired = True
        if not self.config.is_static and self.member_id and self._f.coordinator_known:
            self._leave = _PendingLeave(self.member_id, _REASON_POLL_TIMEOUT)
        self._timed_out(_REASON_POLL_TIMEOUT, stop_join=True)

    def _timed_out(self, reason: str, *, stop_join: bool) -> None:
        """A timeout took the member out of the group: generation and member id forgotten,
        partitions lost, the answers of its group requests no longer wanted; a rejoin is.
        ``stop_join``: a join sequence that poll() started stops (the next poll() starts
        another); the rebalance timeout leaves it running, so that a JoinGroup held back
        only by its gates still goes out once they open."""
        self._reset_generation(lost=True)
        self._forget_group_requests()
        self._pending_sync = None
        self._set_state(MemberState.UNJOINED)
        if stop_join:
            self._stop_join()
        self._request_rejoin(reason)

    # ------------------------------------------------------------------ emitters

    def _emit_commits(self, now_ms: int, out: list[AnyRequest]) -> None:
        if not self._commits or not self._commit_sendable():
            return
        due, self._commits = split_due_commits(self._commits, now_ms, self._generation_id)
        for queued in due:
            out.append(self._send_commit(queued.handle))

    def _send_commit(self, handle: CommitHandle) -> OffsetCommitRequest:
        """The OffsetCommit of ``handle``'s offsets in this generation, in flight from now."""
        correlation = next(self._correlations)
        request = build.commit_request(
            version=self._version(OffsetCommitRequest),
            correlation=correlation,
            group_id=self.config.group_id,
            generation_id=self._generation_id,
            member_id=self.member_id,
            group_instance_id=self.config.group_instance_id,
            offsets=handle.offsets,
            like=self._last_commit,
        )
        self._last_commit = request
        self._inflight[correlation] = _InFlight(request, commit=handle)
        return request

    def _emit_fetches(self, now_ms: int, out: list[AnyRequest]) -> None:
        if not self._fetches:
            return
        due, self._fetches = split_due_fetches(self._fetches, now_ms)
        for queued in due:
            correlation = next(self._correlations)
            request = build.fetch_request(
                version=self._version(OffsetFetchRequest),
                correlation=correlation,
                group_id=self.config.group_id,
                partitions=queued.handle.partitions,
            )
            self._inflight[correlation] = _InFlight(request, fetch=queued.handle)
            out.append(request)

    def _emit_leave(self, out: list[AnyRequest]) -> None:
        if self._leave is None or self._f.awaiting_delivery:
            return
        if any(q.min_generation <= self._generation_id for q in self._commits):
            return  # they go out first
        if any(e.commit is not None for e in self._inflight.values()):
            return  # let the last commits land before the member id goes away
        # (those left wait for a rebalance that leaving rules out)
        fail_commits(
            self._commits, lambda: MemberClosedError("the member left before the commit could go")
        )
        leave, self._leave = self._leave, None
        self._f.leave_sent = True
        out.append(
            build.leave_request(
                version=self._version(LeaveGroupRequest),
                correlation=next(self._correlations),
                group_id=self.config.group_id,
                member_id=leave.member_id,
                reason=leave.reason,
            )
        )

    def _join_sendable_except_time(self) -> bool:
        return (
            self._f.joining
            and self.state in (MemberState.UNJOINED, MemberState.STABLE)
            and not self._f.awaiting_delivery
            and self._leave is None
        )

    def _emit_join(self, now_ms: int, out: list[AnyRequest]) -> None:
        if not self._join_sendable_except_time() or now_ms < self._t.join_retry_ms:
            return
        version = self._version(JoinGroupRequest)
        if self.config.is_static and version < 5:
            self._fail(UnsupportedVersionError("static membership needs JoinGroup v5 or later"))
            return
        request = build.join_request(
            version=version,
            correlation=next(self._correlations),
            group_id=self.config.group_id,
            member_id=self.member_id,
            group_instance_id=self.config.group_instance_id,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            protocols=self._join_protocols(),
            reason=self._f.rejoin_reason,
            client_id=self.config.client_id,
        )
        self._set_state(MemberState.PREPARING_REBALANCE)
        self._set_phase(_SENT)
        self._t.scheduled_rejoin_ms = None
        self._t.rejoin_deadline_ms = None
        out.append(request)

    def _emit_heartbeat(self, now_ms: int, out: list[AnyRequest]) -> None:
        if (
            self.state not in _HEARTBEAT_STATES
            or self._f.poll_expired
            or now_ms < self._t.heartbeat_due_ms
            or self._heartbeat_in_flight()
        ):
            return
        out.append(self._beat(now_ms))

    def _beat(self, now_ms: int) -> HeartbeatRequest:
        """The heartbeat to send now (the next one falls due an interval later)."""
        self._t.heartbeat_due_ms = now_ms + self.config.heartbeat_interval_ms
        proto = self._heartbeat_proto
        if (
            proto is None
            or proto.generation_id != self._generation_id
            or proto.member_id != self.member_id
        ):
            proto = self._heartbeat_proto = build.heartbeat_request(
                version=self._version(HeartbeatRequest),
                correlation=None,
                group_id=self.config.group_id,
                generation_id=self._generation_id,
                member_id=self.member_id,
                group_instance_id=self.config.group_instance_id,
            )
        return with_correlation(proto, next(self._correlations))

    def _join_protocols(self) -> tuple[tuple[str, bytes], ...]:
        owned = tuple(sorted(self.assignment))
        generation = self._generation_id
        protocols: list[tuple[str, bytes]] = []
        for assignor in self.config.assignors:
            user_data: bytes | None = None
            if assignor.ownership is OwnershipSource.COOPERATIVE:
                user_data = encode_cooperative_user_data(generation)
            elif assignor.ownership is OwnershipSource.STICKY and self._last_assigned is not None:
                user_data = encode_sticky_user_data(
                    self._last_assigned, generation if generation >= 0 else None
                )
            subscription = Subscription(
                self.config.topics,
                owned_partitions=owned,
                generation_id=generation,
                user_data=user_data,
            )
            protocols.append(
                (assignor.name, encode_subscription(subscription, _SUBSCRIPTION_VERSION))
            )
        return tuple(protocols)

    # ------------------------------------------------------------------ responses

    def _on_join(self, response: JoinGroupResponse, now_ms: int) -> None:
        if self.state is not MemberState.PREPARING_REBALANCE:
            return
        error = response.error
        if error is None:
            self.member_id = response.member_id
            self._generation_id = response.generation_id
            self._f.membership_lost = False
            self.protocol_name = response.protocol_name
            self._f.is_leader = response.leader == response.member_id
            self._set_state(MemberState.COMPLETING_REBALANCE)
            self._t.heartbeat_due_ms = now_ms + self.config.heartbeat_interval_ms
            self._t.last_heartbeat_ack_ms = now_ms
            assignments: tuple[tuple[str, bytes], ...] = ()
            if self._f.is_leader and not response.skip_assignment:
                try:
                    assignments = self._assign_as_leader(response, now_ms)
                except (
                    InvalidPayload,
                    InvalidAssignorInput,
                    InconsistentGroupProtocolError,
                ) as exc:
                    self._fail(exc)
                    return
            correlation = next(self._correlations)
            request = build.sync_request(
                version=self._version(SyncGroupRequest),
                correlation=correlation,
                group_id=self.config.group_id,
                generation_id=self._generation_id,
                member_id=self.member_id,
                group_instance_id=self.config.group_instance_id,
                protocol_name=self.protocol_name,
                assignments=assignments,
            )
            # Sent by the next next_requests() call, whichever thread makes it.
            self._pending_sync = request
            return
        self._set_state(MemberState.UNJOINED)
        action = action_for(JoinGroupRequest, error)
        if action is _A.ADOPT_MEMBER_ID:
            # KIP-394: the coordinator gave us an id; join again with it, at once.
            self.member_id = response.member_id
            self._f.rejoin_reason = f"need to re-join with the given member id {self.member_id}"
        elif action is _A.RESET_MEMBER:
            self._reset_generation(lost=True)
            self._f.rejoin_reason = f"rebalance failed: {error.name}"
        elif action is _A.REDISCOVER:
            self.coordinator_lost(now_ms)
        elif action is _A.FATAL:
            self._fail(error(f"JoinGroup failed for group {self.config.group_id!r}"))
        else:
            assert action is _A.RETRY, action
            if not (error is RebalanceInProgressError or error.retriable):
                log.warning("JoinGroup failed with %s; retrying after backoff", error.name)
            self._t.join_retry_ms = now_ms + self.config.retry_backoff_ms

    def _assign_as_leader(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        assignor = self._assignors.get(response.protocol_name or "")
        if assignor is None:
            raise InconsistentGroupProtocolError(
                f"the coordinator chose protocol {response.protocol_name!r}, which this "
                "member does not have"
            )
        subscriptions: dict[str, bytes] = {}
        instance_ids: dict[str, str | None] = {}
        topics: set[str] = set()
        for member in response.members:
            subscriptions[member.member_id] = member.metadata
            instance_ids[member.member_id] = member.group_instance_id
            try:
                topics.update(decode_subscription(member.metadata).topics)
            except InvalidPayload as exc:
                raise InvalidPayload(f"subscription of member {member.member_id!r}: {exc}") from exc
        self._f.group_topics = frozenset(topics)
        snapshot = self._snapshot({t: None for t in topics})
        self._assignment_snapshot = snapshot
        partitions_per_topic = {t: n for t, n in snapshot.items() if n is not None}
        if (
            isinstance(assignor, CooperativeStickyAssignor)
            and assignor.scheduled_rebalance_max_delay_ms > 0
        ):
            # KIP-415: the assignor needs the time to hold back a departed member's partitions.
            encoded = assignor.assign_encoded(
                partitions_per_topic, subscriptions, instance_ids, now_ms=now_ms
            )
        else:
            encoded = assignor.assign_encoded(partitions_per_topic, subscriptions, instance_ids)
        return tuple(sorted(encoded.items()))

    def _snapshot(self, topics: Mapping[str, int | None]) -> dict[str, int | None]:
        return {t: self._metadata.get(t) for t in topics}

    def _on_sync(self, request: SyncGroupRequest, response: SyncGroupResponse, now_ms: int) -> None:
        if self.state is not MemberState.COMPLETING_REBALANCE:
            return
        error = response.error
        if error is None and response.protocol_name not in (None, self.protocol_name):
            error = InconsistentGroupProtocolError
        if error is None:
            try:
                assignment = decode_assignment(response.assignment) if response.assignment else None
            except InvalidPayload as exc:
                self._fail(InvalidPayload(f"assignment from the leader: {exc}"))
                return
            self._complete_rebalance(
                frozenset(assignment.partitions) if assignment else frozenset(),
                assignment.user_data if assignment else None,
                now_ms,
            )
            return
        self._set_state(MemberState.UNJOINED)  # the phase stays SENT: the sequence goes on
        action = action_for(SyncGroupRequest, error)
        if action is _A.REJOIN:
            self._f.rejoin_reason = "the group rebalanced again during SyncGroup"
        elif action is _A.RESET_MEMBER:
            self._reset_generation(lost=True)
            self._f.rejoin_reason = f"rebalance failed: {error.name}"
        elif action is _A.REDISCOVER:
            self.coordinator_lost(now_ms)
        elif action is _A.FATAL:
            self._fail(error(f"SyncGroup failed for group {self.config.group_id!r}"))
        else:
            assert action is _A.RETRY, action
            log.warning("SyncGroup failed with %s; rejoining after backoff", error.name)
            self._t.join_retry_ms = now_ms + self.config.retry_backoff_ms

    def _complete_rebalance(
        self,
        assigned: frozenset[TopicPartition],
        user_data: bytes | None,
        now_ms: int,
    ) -> None:
        self._set_state(MemberState.STABLE)
        self._stop_join()
        owned = self.assignment
        owed, self._second_round_owed = self._second_round_owed, None
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - assigned
            added = assigned - owned
            if revoked:
                self._queue_callback(CallbackKind.REVOKED, revoked, gate=True)
                # KIP-429: what we gave up can go to its new owner only in a next round.
                self._request_rejoin("need to revoke partitions and re-join")
                self._set_phase(_STARTED)  # at once, without waiting for a poll
                self._second_round_owed = self._generation_id
            elif owed == self._generation_id:
                # A static rejoin (after a poll timeout) got back the stored assignment of
                # the generation whose second round this member owed and never ran: the
                # partitions it was to give up are still withheld from their new owner.
                # Kafka's member stops here, leaving them unassigned until some other
                # rebalance; run the second round now (once: the owed mark is spent).
                self._request_rejoin("completing a cooperative rebalance a rejoin interrupted")
                self._set_phase(_STARTED)
        else:
            added = assigned
        self.assignment = assigned
        self._last_assigned = tuple(sorted(assigned))
        self._queue_callback(CallbackKind.ASSIGNED, added, gate=False)
        if self.protocol_name == CooperativeStickyAssignor.name:
            delay = decode_scheduled_delay(user_data)
            # KIP-415: partitions are held for a departed static member; rejoin when the
            # delay runs out so that the leader can hand them out.
            self._t.scheduled_rejoin_ms = None if delay is None else now_ms + delay
        unsubscribed = {tp.topic for tp in assigned} - set(self.config.topics)
        if unsubscribed:
            self._request_rejoin(
                f"assigned partitions of unsubscribed topics {sorted(unsubscribed)}"
            )

    def _on_heartbeat(
        self, request: HeartbeatRequest, response: HeartbeatResponse, now_ms: int
    ) -> None:
        error = response.error
        if error is None or error is RebalanceInProgressError:
            self._t.last_heartbeat_ack_ms = now_ms
        if error is None:
            return
        current = (
            request.generation_id == self._generation_id and request.member_id == self.member_id
        )
        action = action_for(HeartbeatRequest, error)
        if action is _A.REJOIN:
            if self.state is MemberState.STABLE:
                self._request_rejoin("group is already rebalancing")
                if self._t.rejoin_deadline_ms is None:
                    # The rebalance began after our last clean heartbeat was sent, so the
                    # coordinator waits for us at least until then + the rebalance timeout.
                    # One heartbeat interval of margin covers when we learn it.
                    self._t.rejoin_deadline_ms = (
                        self._t.last_clean_ms
                        + self.config.rebalance_timeout_ms
                        - self.config.heartbeat_interval_ms
                    )
        elif action is _A.RESET_MEMBER:
            # Stale answers (sent before a rejoin changed our generation) are ignored.
            if current and self.state is MemberState.STABLE:
                self._reset_generation(lost=True)
                self._set_state(MemberState.UNJOINED)
                self._request_rejoin(f"heartbeat failed: {error.name}")
        elif action is _A.FATAL:
            if current:
                self._fail(error(f"group.instance.id {self.config.group_instance_id!r} fenced"))
        elif action is _A.REDISCOVER:
            self.coordinator_lost(now_ms)
        else:
            assert action is _A.RETRY, action
            log.warning("heartbeat failed with %s; retrying", error.name)
            self._t.heartbeat_due_ms = now_ms + self.config.retry_backoff_ms

    def _on_commit(
        self,
        request: OffsetCommitRequest,
        handle: CommitHandle,
        response: OffsetCommitResponse,
        now_ms: int,
    ) -> None:
        errors = commit_errors(response)
        if not errors:
            handle.succeed()
            return
        action = commit_action(errors.values())
        if action is _A.FATAL:
            fenced = FencedInstanceIdError(
                f"group.instance.id {self.config.group_instance_id!r} fenced (offset commit)"
            )
            handle.fail(fenced, errors)
            self._fail(fenced)
            return
        again = settle_commit(
            handle,
            errors,
            action,
            generation_id=request.generation_id,
            now_ms=now_ms,
            retry_backoff_ms=self.config.retry_backoff_ms,
        )
        if again is not None:
            self._commits.append(again)  # before coordinator_lost re-queues what is in flight
        if action is _A.REJOIN:
            if self.state is MemberState.STABLE:
                self._request_rejoin("offset commit found the group rebalancing")
        elif action is _A.REDISCOVER:
            self.coordinator_lost(now_ms)
        elif action is _A.RESET_MEMBER and (
            request.generation_id == self._generation_id
            and request.member_id == self.member_id
            and self.state is MemberState.STABLE
        ):
            self._reset_generation(lost=True)
            self._set_state(MemberState.UNJOINED)
            self._request_rejoin("offset commit found our membership gone")

    def _on_fetch(self, handle: FetchHandle, response: OffsetFetchResponse, now_ms: int) -> None:
        offsets, error = fetched_offsets(response)
        if error is None:
            handle.succeed(offsets)
            return
        action = action_for(OffsetFetchRequest, error)
        if action is _A.REDISCOVER:
            self._fetches.append(QueuedFetch(handle))
            self.coordinator_lost(now_ms)
        elif action is _A.RETRY:
            self._fetches.append(QueuedFetch(handle, now_ms + self.config.retry_backoff_ms))
        else:
            assert action is _A.FAIL, action
            handle.fail(error("OffsetFetch failed"))

    # ------------------------------------------------------------------ helpers

    def _version(self, request_type: type[AnyRequest]) -> int:
        return build.version_for(request_type, self._caps)

    def _set_state(self, target: MemberState) -> None:
        check_transition(self.state, target)
        self.state = target

    def _set_phase(self, target: JoinPhase) -> None:
        check_phase_transition(self._f.phase, target)
        self._f.phase = target

    def _queue_callback(
        self, kind: CallbackKind, partitions: frozenset[TopicPartition], *, gate: bool
    ) -> None:
        if kind is CallbackKind.LOST:
            partitions = self._withdraw_undelivered(partitions)
        if not partitions and kind is not CallbackKind.ASSIGNED:
            return
        self._callbacks.append(
            ListenerCall(kind=kind, partitions=partitions, generation=self._generation_id)
        )
        if gate:
            self._f.awaiting_delivery = True

    def _withdraw_undelivered(self, lost: frozenset[TopicPartition]) -> frozenset[TopicPartition]:
        """Take ``lost`` partitions out of assigned calls the application has not seen yet;
        return the ones it has seen. A busy application must not be told "assigned" for
        partitions that are someone else's by the time it hears it."""
        unseen: set[TopicPartition] = set()
        kept: list[ListenerCall] = []
        for call in self._callbacks:
            overlap = call.partitions & lost if call.kind is CallbackKind.ASSIGNED else None
            if overlap:
                unseen |= overlap
                remaining = call.partitions - overlap
                if not remaining:
                    continue  # nothing left that it could still act on
                call = replace(call, partitions=remaining)
            kept.append(call)
        self._callbacks = kept
        return lost - unseen

    def _request_rejoin(self, reason: str) -> None:
        """Ask for a rejoin; one already running sends a JoinGroup again (a new round)."""
        phase = self._f.phase
        self._set_phase(_STARTED if phase is _STARTED or phase is _SENT else _WANTED)
        self._f.rejoin_reason = reason

    def _stop_join(self) -> None:
        """Stop a running join sequence (a rejoin not yet sent is still wanted)."""
        phase = self._f.phase
        if phase is _STARTED:
            self._set_phase(_WANTED)
        elif phase is _SENT:
            self._set_phase(_IDLE)

    def _generation_lost(self) -> bool:
        return self._generation_id == -1 or not self.member_id

    def _reset_generation(self, *, lost: bool) -> None:
        """Kafka's resetStateAndGeneration: forget generation and member id; what we owned
        may already be someone else's, so it is reported lost (never revoked)."""
        self._generation_id = -1
        self.member_id = ""
        self._f.is_leader = False
        self._t.rejoin_deadline_ms = None
        if not lost:
            return
        self._f.membership_lost = True
        # Commits not sent yet would go out with a later generation, for partitions that
        # may be someone else's by then: fail them (Kafka's CommitFailedException).
        fail_commits(
            self._commits,
            lambda: CommitFailedError(
                "the member fell out of the group before the commit was sent"
            ),
        )
        # A revocation the application has not heard of yet comes too late to be orderly
        # (it could no longer commit): those partitions are lost like the rest.
        pending_revoked = frozenset(
            tp for c in self._callbacks if c.kind is CallbackKind.REVOKED for tp in c.partitions
        )
        if pending_revoked:
            self._callbacks = [c for c in self._callbacks if c.kind is not CallbackKind.REVOKED]
        gone = self.assignment | pending_revoked
        self.assignment = frozenset()
        # Not a gate: lost partitions are gone whatever the application does, and a
        # LeaveGroup after a poll timeout must not wait for the stalled application.
        self._queue_callback(CallbackKind.LOST, gone, gate=False)

    def _forget_group_requests(self) -> None:
        for correlation, entry in list(self._inflight.items()):
            if isinstance(entry.request, (JoinGroupRequest, SyncGroupRequest, HeartbeatRequest)):
                del self._inflight[correlation]

    def _fail(self, error: GroupcoordError) -> None:
        log.error("group %s: fatal: %s", self.config.group_id, error)
        self.fatal_error = error
        if self.state is not MemberState.CLOSED:
            self._set_state(MemberState.FATAL)
        if self.assignment:
            # Whatever we held is no longer ours to process (fenced, or never completed).
            self._queue_callback(CallbackKind.LOST, self.assignment, gate=False)
            self.assignment = frozenset()
        self._stop_join()
        fail_commits(self._commits, lambda: error)  # one error: the member's

    def _heartbeat_in_flight(self) -> bool:
        for entry in self._inflight.values():  # noqa: SIM110 (a loop: no generator per call)
            if isinstance(entry.request, HeartbeatRequest):
                return True
        return False

    def _commit_sendable(self) -> bool:
        if self.state is MemberState.STABLE:
            return True
        return (
            self.state is MemberState.CLOSED
            and not self._f.leave_sent
            and not self._generation_lost()
        )

    def _commit_impossible(self) -> bool:
        if self.state is MemberState.CLOSED:
            return self._f.leave_sent or self._generation_lost()
        # Between losing the membership and the next successful JoinGroup, whatever the
        # application wants to commit belongs to partitions it lost (Kafka refuses it too).
        return self._f.membership_lost

    def _requeue(self, entry: _InFlight) -> None:
        if entry.commit is not None:
            self._commits.append(QueuedCommit(entry.commit))
        elif entry.fetch is not None:
            self._fetches.append(QueuedFetch(entry.fetch))
