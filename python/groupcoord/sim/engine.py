"""The simulator's engine: the real coordinator and real member machines in virtual time.

One event queue orders everything; nothing reads a clock. The coordinator is
:class:`~groupcoord.coordinator.GroupCoordinator` on a
:class:`~groupcoord.coordinator.MemoryOffsetStore` behind a
:class:`~groupcoord.coordinator.SyncShell` (records are persisted at once; the store
outlives a coordinator failover, as Kafka's offsets topic does); each member process is a
:class:`~groupcoord.member.MemberMachine` plus a model of the application that owns it:

- **The application loop** (what a Kafka consumer application does): ``poll()``, then
  process the returned batch record by record (each record's time drawn from
  ``workload.record_time_ms``), then ``poll()`` again. A poll with nothing to return waits
  inside ``poll()`` until a record arrives; while it waits, the member reacts at once (Java's
  ``poll()`` runs the coordinator's work in its loop). Listener calls run inside ``poll()``:
  revoked partitions are committed there (``commit_on_revoke``), newly assigned ones are
  looked up with OffsetFetch before processing starts. Offsets are committed every
  ``auto.commit.interval.ms`` from ``poll()`` (``enable_auto_commit``) or after every batch.
- **The heartbeat thread** (KIP-62): the machine's own deadlines (heartbeats, timeouts) are
  acted on whenever they fall due. With ``heartbeat_thread = false`` (the client before
  KIP-62) the member does network I/O only inside ``poll()``: a batch that takes longer than
  the session timeout gets the member expired.
- **The network**: every request and response takes a latency drawn from
  ``network.latency_ms``, in order per connection. FindCoordinator is a round trip too.

Heartbeats are simulated one by one, through the same code a real member and the server run.

**The order of simultaneous events.** Time is in whole milliseconds, so many events fall
in the same one. They run in an order that depends only on what they are, never on when
they were queued: each queued event has the key (t, round, rank, process, sub-order), and
the smallest key runs first.

- *round*: 0 for an event queued before its millisecond began; an event queued for the
  millisecond being run (a zero delay: a latency or a downtime of 0, a coordinator
  deadline already due) gets the round of the event that queued it plus one, so it runs
  after that event and after everything already due in that millisecond (a cause always
  comes before its effect).
- *rank*, within a round: timeline events (by their index in the timeline), a coordinator
  coming back up, the next member of a rolling restart starting (by member number), a
  pause ending, a network partition ending, the coordinator's timers, requests reaching
  the coordinator, answers and failures reaching members, coordinator lookups ending,
  members' own wake-ups, members' metadata refreshes.
- *process*: the member's number, then its incarnation (a restarted member is a new one).
- *sub-order*: on one connection, the order in which requests were sent (at the
  coordinator) or answers were sent (at the member).

Every order of simultaneous events at different places is one a real system can show (none
of them can see the others within the millisecond), and within one place a cause precedes
its effects. Only a live event and superseded copies of it (a wake-up, a coordinator tick
replaced by an earlier one, which are ignored when they run) can share a whole key;
a queue counter breaks such ties. So the order, and the outputs, do not change when work
is skipped or done at another moment, as long as the same events run.

**Lazy application steps** (``Engine(lazy=True)``, the default; ``lazy=False`` is the
reference the tests compare it with). Most of a member's wake-ups are its application
loop: a batch ends, ``poll()`` returns the next one or waits for a record. For a member
with the heartbeat thread and auto-commit whose machine is idle and stable
(``MemberMachine.poll_idle`` returns a deadline and sends nothing; nothing buffered, no
OffsetFetch, not closing, paused or cut off), such a step has no effect outside its
process until the machine's next deadline (a heartbeat due, a timeout) or the next
auto-commit, whichever comes first: it finishes a batch (the recorder's counts: sums and
a maximum, and per partition the end of what was processed), polls (the machine only
notes the time) and starts a batch (the process's own random stream). Those steps are
not queued: the process keeps the time of its next one and a single ``_boundary`` event
is queued at that first deadline. Whenever an event touches the process (an answer, a
lookup, a metadata refresh, a timeline action, the boundary) its pending steps whose keys
are smaller than that event's run first, in order, as their own events would have; at
the end of the run, all steps up to the end. Steps of different processes only commute
if they process different partitions, so at most one lazy process may hold a partition,
and a non-lazy process that finishes a batch of a partition brings that partition's lazy
holder up to date first (a zombie and the partition's new owner). With the canonical
order above, the run is the same event for event: every heartbeat and every other
request is still sent and answered by the real machine and coordinator at the same key.

The steps' loop runs in Rust (``_core.app_loop``: the same arithmetic in the same order,
so the same floats; the record times come from the process's own stream, or are the
constant); ``Engine(native=False)`` runs it in Python, the reference the tests compare
it with.

A step that ends a lazy period (an answer's arrival, a boundary, an auto-commit's send)
makes the following steps lazy again when it leaves the machine idle and stable, so a
member that processes records is lazy between its exchanges; an answer's arrival does not
queue the process's next wake-up until its step has decided whether it is still wanted.
And a heartbeat request that the coordinator can take quietly
(:meth:`~groupcoord.coordinator.GroupCoordinator.quiet_heartbeat`) skips ``handle``: the
engine builds the answer ``handle`` would have; so does an OffsetCommit (an auto-commit)
that it can take quietly
(:meth:`~groupcoord.coordinator.GroupCoordinator.quiet_offset_commit`: the session
refreshed, the offsets written to the store and kept, the answer built). The answer of
such a quiet exchange to a lazy process is not even queued: it is *folded* into the
process's lazy steps (``_fold``) and read by its next catch-up at its own key, between the
steps before and after it (``_read_folded``: what its arrival and step would do), unless
the process leaves the lazy state first, which queues it at that key.

**The heartbeat lane** (also ``lazy=True``). A member with the heartbeat thread and no
application work of its own (no records to process: none produced, or no partition) that
has just read a heartbeat's answer, with nothing else outstanding, buffered, paused, cut
or closing and its machine idle and stable, does nothing until its next heartbeat but
that heartbeat. Its heartbeats then run in the lane: one queued event per heartbeat, its
arrival at the coordinator, at the key the eager engine's request has. There the
coordinator's :meth:`~groupcoord.coordinator.GroupCoordinator.quiet_heartbeat` refreshes
the member's session exactly as ``handle`` would (it declines, changing nothing, when the
group is not Stable in the member's generation, the member is not current, or a deadline
is due first); the answer's latency is drawn, and the next heartbeat's send and arrival
are decided by the machine's own rules (the next one an interval after this one's send,
sent before any timeout, answered before the machine would wake for anything else);
where a rule does not hold, or the coordinator declines, the process leaves the lane.
The process's own steps at each send and each answer (the poll, the auto-commit timer,
the connection's order) are committed as the arrivals run; its machine is told only of
the last heartbeat (``MemberMachine.quiet_heartbeat_answered``: the state after a quiet
stretch is that of its last heartbeat). Whenever an event touches the process, it
leaves the lane as the eager engine has it at that event: the machine sends for real
the heartbeat whose answer or arrival is still to come (the answer or the request is
queued at its key), or the process wakes to send the next one; a latency drawn for a
send that had not happened yet is handed back. The coordinator sees every heartbeat at
its time; the outputs are the same as the eager engine's.

**The processing lane** (also ``lazy=True``; ``Engine(processing_lane=False)`` turns it
off for comparisons). The heartbeat lane for members that process records. A lazy process
whose boundary finds nothing in flight, on a connection of constant latency, enters it if
nothing can reach a timeout while it stays: a heartbeat's round trip shorter than the
heartbeat and auto-commit intervals, and a heartbeat interval plus the longest possible
batch (``max.poll.records`` times the largest record time; none for lognormal) plus a
round trip shorter than the session and the poll interval. Then its machine is not
called: the lane keeps the machine's timers (next heartbeat due, last answer, last poll)
and its application steps stay lazy with no end, the heartbeat thread's sends and the
answers' reads being steps among them (``_plane_steps``; in Rust, ``_core.LaneApp``).
The queue holds, per process, the next heartbeat's arrival at the coordinator (sent when
it falls due, an interval after the previous one, whose answer comes first), the next
auto-commit's check and the commit's arrival. At an arrival the coordinator takes the
request quietly (``quiet_heartbeat``, ``SyncShell.quiet_commit_offsets``) and the answer's
read is scheduled for the process, or the process leaves the lane and the request arrives
for real. The check, at the auto-commit's due time, finds the first poll at or after it
(the process's next step when it waits for a record, or the next answer's read if that
comes first; the end of the batch in hand otherwise) and decides there what the poll
commits: the offsets consumed, or nothing (the timer moves). A request whose answer is not
scheduled yet could be read before that poll: the check then waits for its arrival. When
an event touches the process (``_touch``: a timeline action, a metadata refresh, a lookup,
the end of the run) it leaves the lane as the eager engine has it at that event
(``_plane_leave``): its steps run up to the event, the machine is told of the last
heartbeat answered (``MemberMachine.quiet_heartbeat_answered`` with the last poll), then
sends for real what is still out, in the order it was sent, each after the poll before it
(``poll_idle_commit``, ``poll_idle``, ``next_requests`` inside a batch), then hears of the
last poll; a request still on its way is queued at its key, an answer at its own.

With the Rust loops (``native``) and a constant record time, the lane's members and their
events live in a ``_core.LaneSet`` instead: its own queue of the same events with the same
keys, handled in Rust as the Python handlers above handle them (``rust/src/lane_set.rs``),
the coordinator reached through the same quiet calls. The run loop hands it the key of the
next event of the engine's queue; it runs its events that come before it and stops early
where the engine must act: the coordinator declined a request (the process is taken back,
``_plane_native_take``, its events queued here at their keys, and the Python handler runs
the declined one), the coordinator's timers must be scheduled, or a commit's record was not
persisted. Whatever touches a member in the set takes it back first. Three things the
Python lane does through the engine the set does itself, each shown equal to it by the
differential tests: a member known current (the coordinator took one of its heartbeats,
or commits, since the groups last changed: ``_coordinator_version``, which a tick with no
deadline due does not move) has its next ones taken straight by the coordinator's expiry
table, by handle; such a commit's record (built in Rust as ``quiet_commit_offsets`` builds
it) waits in the set and is handed to ``SyncShell.store_taken_commits`` before any Python
code runs again; and a member's metadata refresh runs its loop once in the set
(``lane_loop::extra_step``: a poll, or inside a batch nothing) and queues the next, unless
a partition count changed since its machine looked (``_metadata_epoch``) or that poll
would send the due auto-commit: then the engine's handler runs it (``_refresh_metadata``
takes a token, so the refresh the set took is stale in the engine's queue). Between a
member's events, when it polls one partition only, its loop runs the stretch before its
next heartbeat, read or timeout in one go (``AppLoop::sole_steps``: a batch in hand is its
first offset, count and start, not a vector of completions), the same steps and floats.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from groupcoord import _core
from groupcoord.assignors import Assignor, CooperativeStickyAssignor
from groupcoord.assignors.base import RebalanceProtocol
from groupcoord.coordinator import (
    GroupCoordinator,
    GroupState,
    MemoryOffsetStore,
    SequentialMemberIds,
    SyncShell,
)
from groupcoord.coordinator.commits import quiet_commit_answer
from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
)
from groupcoord.coordinator.output import CoordinatorResponse
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    KafkaError,
    NetworkException,
    NotCoordinatorError,
)
from groupcoord.member.config import MemberConfig
from groupcoord.member.handles import FetchHandle
from groupcoord.member.listener import CallbackKind
from groupcoord.member.machine import MemberMachine
from groupcoord.member.protocol_choice import choose_protocol
from groupcoord.member.states import MemberState
from groupcoord.sim.invariants import InvariantChecker
from groupcoord.sim.metrics import Recorder
from groupcoord.sim.scenario import ASSIGNORS, Scenario, TimelineEvent
from groupcoord.sim.workload import PartitionStream
from groupcoord.types import TopicPartition

__all__ = ["Engine"]

# The order of simultaneous events (see the module documentation): a queued event is the
# tuple (t, round << _ROUND_SHIFT | rank, process, sub-order, queue counter, handler, args).
_ROUND_SHIFT = 4
_INCARNATION_BITS = 16
_INCARNATION_MASK = (1 << _INCARNATION_BITS) - 1
# ranks, in the order they run within one millisecond and round
_TIMELINE = 0  # process field: the event's index in the timeline
_COORDINATOR_UP = 1
_RESTART = 2  # the next member of a rolling restart starts (process field: its number)
_RESUME = 3  # a pause ends
_HEAL = 4  # a network partition ends
_TICK = 5  # the coordinator's timers
_REQUEST = 6  # a request reaches the coordinator (sub-order: its place on the connection)
_ANSWER = 7  # an answer (or a failure) reaches a member (sub-order: place on the connection)
_LOOKUP = 8  # FindCoordinator's round trip ends
_WAKE = 9  # a member's own wake-up (application loop, heartbeat thread, timers)
_METADATA = 10  # a member's metadata refresh
#: the lazy period of a process in the processing lane: it has no end
_FOREVER = 1 << 62

Progress = Callable[[int, int], None]
#: (hb_due, last_ack, last_poll, hb_sent, hb_sent_poll, hb_poll_before, told_sent,
#: told_answered, last_hb_send)
_LaneTimers = tuple[int, int, int, int | None, bool, int, int | None, int, int | None]


@dataclass(slots=True, eq=False)
class _Owned:
    """A partition the application holds; ``position`` is None until OffsetFetch answers."""

    position: int | None = None
    active: bool = False


@dataclass(slots=True, eq=False)
class _Segment:
    """Records of one partition in the batch being processed."""

    tp: TopicPartition
    first_offset: int
    completions_ms: list[float]


class _Draws:
    """A process's latency draws, one of which can be handed back: the heartbeat lane draws
    a heartbeat's latency before its send and hands it back if the send does not happen in
    the lane (the next draw gets it, as if it had never been drawn)."""

    __slots__ = ("_back", "_sample")

    def __init__(self, sample: Callable[[], float]) -> None:
        self._sample = sample
        self._back: float | None = None

    def __call__(self) -> float:
        back = self._back
        if back is None:
            return self._sample()
        self._back = None
        return back

    def unread(self, value: float) -> None:
        assert self._back is None, "two draws handed back"
        self._back = value


@dataclass(slots=True, eq=False)
class _Lane:
    """A process whose heartbeats run in the lane (see "The heartbeat lane" in the module
    documentation). Times are virtual milliseconds."""

    # what the coordinator's quiet heartbeat names
    member_id: str
    generation: int
    instance_id: str | None
    # the heartbeat on its way: sent at ``sent`` (not yet told to the process: the send's
    # effects are committed when it arrives), reaching the coordinator at ``arrival`` as the
    # ``up_seq``-th request on the connection; ``deadline`` is the wake-up the machine asks
    # for once it is sent (the earlier of its poll and session timeouts)
    sent: int
    up_draw: float | None
    up_arrival: float
    arrival: int
    up_seq: int
    deadline: int
    # the heartbeat before it, answered at ``prev_answered`` (the ``prev_down_seq``-th answer
    # on the connection), when the machine has not been told of it (``prev_sent`` None: it
    # has); and the one before that, for when the process leaves while that answer travels
    prev_sent: int | None = None
    prev_answered: int = 0
    prev_down_seq: int = 0
    prev_deadline: int = 0
    older_sent: int | None = None
    older_answered: int = 0


@dataclass(slots=True, eq=False)
class _CommitPlan:
    """An auto-commit the processing lane decided on: the first poll at or after the
    auto-commit's due time is the step at ``key`` (its time, rank and place); ``offsets``
    None: nothing was consumed since the last commit, the step only moves the timer."""

    key: tuple[int, int, int]
    offsets: dict[TopicPartition, int] | None
    #: the commit's arrival at the coordinator: (time, place on the connection)
    arrival: int = 0
    up_seq: int = 0
    #: once the coordinator took it: its answer's arrival at the member and place on the
    #: connection, and whether its record was persisted (the answer accepts every
    #: partition; ``commits.quiet_commit_answer``)
    answer: tuple[int, int, bool] | None = None
    #: its answer was read (the commit is complete)
    read: bool = False
    #: the application's last poll before that step
    poll_before: int = 0
    #: its step came before an event that saw the process: its effects are committed
    applied: bool = False


@dataclass(slots=True, eq=False)
class _ProcessingLane:
    """A member that processes records and whose heartbeats and auto-commits run in the
    processing lane (see "The processing lane" in the module documentation). Its machine
    is not called while it is in the lane: the lane keeps the machine's timers as the
    machine would (``hb_due``, ``last_ack``, ``last_poll``) and tells it when the process
    leaves. Times are virtual milliseconds."""

    member_id: str
    generation: int
    instance_id: str | None
    hb_due: int
    last_ack: int
    last_poll: int
    #: the heartbeat in flight: sent at ``hb_sent`` by a poll (``hb_sent_poll``) or by the
    #: heartbeat thread inside a batch, the application's last poll before that step
    hb_sent: int | None = None
    hb_sent_poll: bool = False
    hb_poll_before: int = 0
    #: the last heartbeat answered in the lane and not yet told to the machine
    told_sent: int | None = None
    told_answered: int = 0
    #: the heartbeat whose arrival is queued: sent (or to be sent) at ``next_sent``,
    #: arriving at ``next_arrival`` as the ``next_up_seq``-th request on the connection
    next_sent: int = 0
    next_arrival: int = 0
    next_up_seq: int = 0
    #: answers to read, in order: (arrival at the member, place on the connection,
    #: a heartbeat's (True) or the commit's)
    reads: list[tuple[int, int, bool]] = field(default_factory=list)
    #: the auto-commit decided on and not yet complete, and the next check's time
    commit: _CommitPlan | None = None
    commit_like: OffsetCommitRequest | None = None
    check_at: int = 0
    #: the connection's order: requests numbered so far, answers scheduled so far
    up_seq: int = 0
    down_seq: int = 0
    down_last_ms: float = 0.0
    #: the latest heartbeat and commit sends the lane made (for the connection's order)
    last_hb_send: int | None = None
    last_commit_send: int | None = None
    #: bumped to make queued events of the lane stale
    hb_token: int = 0
    commit_token: int = 0
    check_token: int = 0
    #: in the engine's ``_core.LaneSet`` (its slot there; the fields above and the
    #: process's application fields are stale until ``Engine._plane_native_take``), with
    #: the streams and the partitions of its application, in its order
    native_slot: int | None = None
    native_held: list[PartitionStream] = field(default_factory=list)
    native_tps: list[TopicPartition] = field(default_factory=list)

    @property
    def timers(self) -> _LaneTimers:
        """The machine's timers as the Rust lane takes them (``_core.LaneApp.run``)."""
        return (
            self.hb_due,
            self.last_ack,
            self.last_poll,
            self.hb_sent,
            self.hb_sent_poll,
            self.hb_poll_before,
            self.told_sent,
            self.told_answered,
            self.last_hb_send,
        )

    @timers.setter
    def timers(self, timers: _LaneTimers) -> None:
        (
            self.hb_due,
            self.last_ack,
            self.last_poll,
            self.hb_sent,
            self.hb_sent_poll,
            self.hb_poll_before,
            self.told_sent,
            self.told_answered,
            self.last_hb_send,
        ) = timers


@dataclass(slots=True, eq=False)
class Process:
    """One incarnation of a member: its machine, its application, its connection."""

    name: str
    number: int
    machine: MemberMachine
    sample_record_ms: Callable[[], float]
    sample_latency_ms: _Draws
    alive: bool = True
    #: the application stopped polling (close() under way); the machine finishes its I/O
    closing: bool = False
    close_requested: bool = False
    on_stopped: Callable[[int], None] | None = None
    close_deadline_ms: int = 0
    paused_until: int | None = None
    cut_until: int | None = None
    busy_until: int | None = None
    batch: list[_Segment] = field(default_factory=list)
    owned: dict[TopicPartition, _Owned] = field(default_factory=dict)
    fetches: list[tuple[FetchHandle, dict[TopicPartition, _Owned]]] = field(default_factory=list)
    #: requests sent and not yet answered (a cut or failover fails them)
    outstanding: dict[object, AnyRequest] = field(default_factory=dict)
    #: answers read later (the process is paused, or has no heartbeat thread and is busy)
    buffered: list[AnyResponse] = field(default_factory=list)
    lookup_in_flight: bool = False
    #: this incarnation's place in the order of simultaneous events: number << 16 | incarnation
    key: int = 0
    #: requests sent / answers (or failures) scheduled on its connection: the order of
    #: simultaneous arrivals on one connection
    up_seq: int = 0
    down_seq: int = 0
    #: lazy (``Engine(lazy=True)``): the application steps before this time are not queued
    #: (``wake_at`` is then not in the queue); a ``_boundary`` event is queued at it
    lazy_until: int | None = None
    #: the time of the last ``_boundary`` event queued for it
    boundary_at: int | None = None
    wake_at: int | None = None
    #: ``wake_at`` when that wake-up is not queued yet: set only while the process waits
    #: for a heartbeat's answer, whose arrival steps it first (see ``Engine._set_wake``)
    held_wake: int | None = None
    #: its heartbeats run in the lane (``Engine(lazy=True)``)
    lane: _Lane | None = None
    #: its heartbeats and auto-commits run in the processing lane
    plane: _ProcessingLane | None = None
    #: while in the processing lane: the application's state in Rust, and the streams of
    #: its partitions (see ``Engine._plane_steps_native``)
    native_lane: tuple[_core.LaneApp, list[PartitionStream]] | None = None
    #: ``wake_at`` when an answer's arrival ended its lazy steps and that wake-up is not
    #: queued yet: the answer's step may go lazy again from it (see ``Engine._at_member``)
    unqueued_wake: int | None = None
    #: a quiet exchange's answer folded into the lazy steps (see ``Engine._fold``): its
    #: arrival time, its place on the connection and the response; not queued
    folded: tuple[int, int, AnyResponse] | None = None
    up_last_ms: float = 0.0
    down_last_ms: float = 0.0
    next_auto_commit_ms: int = 0
    committed_positions: dict[TopicPartition, int] = field(default_factory=dict)
    rr: int = 0
    poll_expired_seen: bool = False
    #: the next metadata refresh queued (its event is live while its token is the
    #: process's: the LaneSet takes the refreshes of the members in it)
    metadata_at: int | None = None
    metadata_token: int = 0
    #: the engine's ``_metadata_epoch`` when the machine last got the partition counts
    metadata_epoch: int = 0

    @property
    def running(self) -> bool:
        """Alive and its application still working (not closing)."""
        return self.alive and not self.closing and not self.close_requested


class Engine:
    """Runs one scenario with one seed; :meth:`run` returns the :class:`Recorder`."""

    def __init__(
        self,
        scenario: Scenario,
        seed: int,
        progress: Progress | None = None,
        *,
        check_invariants: bool = False,
        lazy: bool = True,
        native: bool = True,
        processing_lane: bool = True,
    ) -> None:
        """``lazy=False``: every application step is a queued event and every heartbeat
        goes through the machine and ``GroupCoordinator.handle`` (the reference the tests
        compare the lazy engine with; the outputs are the same). ``native=False``: the lazy
        application steps run in Python (``_catch_up``'s loop) instead of in Rust
        (``_core.app_loop``): the reference the native loop is compared with."""
        self.scenario = scenario
        self.checker = (
            InvariantChecker(heartbeat_thread=scenario.consumer.heartbeat_thread)
            if check_invariants
            else None
        )
        self.seed = seed
        self.progress = progress
        self.now = 0
        self.end_ms = scenario.duration_ms
        self._queue: list[tuple[int, int, int, int, int, Callable[..., None], tuple[Any, ...]]] = []
        #: breaks ties between equal keys only (see the module documentation)
        self._seq = itertools.count()
        #: the event being handled (lazy steps with smaller keys are run first)
        self._event: tuple[Any, ...] = (-1, 0, 0, 0)
        g, c = scenario.group, scenario.consumer
        self.group_id: str = g.group_id
        self.thread: bool = c.heartbeat_thread
        # settings read on every step, looked up once
        self._auto_commit: bool = c.enable_auto_commit
        self._auto_commit_interval_ms: int = c.auto_commit_interval_ms
        self._max_poll_records: int = c.max_poll_records
        protocol = choose_protocol([ASSIGNORS[n]() for n in g.assignors])
        self.recorder = Recorder(eager=protocol is RebalanceProtocol.EAGER)
        self.partitions_per_topic: dict[str, int] = dict(g.topics)
        #: bumped whenever a partition count changes (see ``Process.metadata_epoch``)
        self._metadata_epoch = 0
        rate = scenario.workload.records_per_second_per_partition
        self.streams: dict[TopicPartition, PartitionStream] = {}
        self._add_partitions(self.partitions_per_topic, rate)
        self._rate = rate
        # Lazy application loops (see "Lazy application steps" in the module documentation):
        # with the heartbeat thread, records to process, and auto-commit (without it every
        # batch's end commits: it acts outside the process)
        self._lazy: bool = lazy and self.thread and rate > 0 and c.enable_auto_commit
        #: a partition -> the lazy process that may process it (at most one)
        self._lazy_owner: dict[TopicPartition, Process] = {}
        #: set while lazy steps run: their wake-ups are not queued
        self._catching_up = False
        #: application steps run lazily (not as queued events)
        self.lazy_steps = 0
        #: answers whose step left the process lazy (its next wake-up never queued)
        self.lazy_answers = 0
        #: of those, answers folded into the lazy steps (never queued)
        self.folded_answers = 0
        self._native = native
        record_time = scenario.workload.record_time_ms
        #: a constant record processing time (the Rust loop then draws nothing)
        self._record_ms: float | None = (
            float(record_time.params[0]) if record_time.dist == "constant" else None
        )
        # The heartbeat lane (see "The heartbeat lane" in the module documentation): members
        # with the heartbeat thread and no application work of their own
        self._lane_ok: bool = lazy and self.thread
        #: a heartbeat or OffsetCommit request that the coordinator can take quietly skips
        #: handle() (the same state and answer; ``lazy=False`` keeps handle() for every
        #: request)
        self._quiet_heartbeats: bool = lazy
        #: heartbeats answered in the lane
        self.lane_heartbeats = 0
        #: auto-commits sent by one machine call (``MemberMachine.poll_idle_commit``)
        self.quick_commits = 0
        #: OffsetCommits the coordinator took quietly
        self.quiet_commits = 0
        self._heartbeat_interval_ms: int = c.heartbeat_interval_ms
        self._session_timeout_ms: int = c.session_timeout_ms
        self._max_poll_interval_ms: int = c.max_poll_interval_ms
        # The processing lane (see "The processing lane" in the module documentation): for
        # lazy processes on a connection of constant latency (no draws, so nothing depends
        # on the order of sends) whose steps cannot reach a timeout while the coordinator
        # answers their heartbeats
        latency = scenario.network.latency_ms
        self._latency_ms: float | None = (
            float(latency.params[0]) if latency.dist == "constant" else None
        )
        longest_record = record_time.maximum
        self._plane_ok: bool = False
        #: a bound on a request's round trip and on a batch's length (the lane's conditions)
        self._round_trip_ms = self._longest_batch_ms = 0
        if (
            processing_lane
            and self._lazy
            and self._latency_ms is not None
            and self._latency_ms > 0
            and longest_record is not None
        ):
            round_trip = self._round_trip_ms = 2 * math.ceil(self._latency_ms) + 2
            longest_batch = self._longest_batch_ms = (
                math.ceil(c.max_poll_records * longest_record) + 1
            )
            self._plane_ok = (
                round_trip < c.heartbeat_interval_ms
                and round_trip < c.auto_commit_interval_ms
                and c.heartbeat_interval_ms + longest_batch + round_trip
                < min(c.session_timeout_ms, c.max_poll_interval_ms)
            )
        self._plane_settings = (
            c.session_timeout_ms,
            c.max_poll_interval_ms,
            c.heartbeat_interval_ms,
        )
        #: the processing lane's members and events in Rust (``native``, a constant record
        #: time): see "The processing lane" in the module documentation
        self._lanes: _core.LaneSet | None = None
        if self._plane_ok and native and self._record_ms is not None:
            assert self._latency_ms is not None
            self._lanes = _core.LaneSet(
                g.group_id,
                self._latency_ms,
                c.auto_commit_interval_ms,
                self._record_ms,
                self._plane_settings,
                c.max_poll_records,
                c.metadata_max_age_ms,
            )
        #: a LaneSet slot -> its process
        self._lane_procs: dict[int, Process] = {}
        #: bumped before every call that may change the coordinator's groups (handle,
        #: tick, a new coordinator): the LaneSet's members known current stay so until then
        self._coordinator_version = 0
        #: heartbeats and auto-commits the coordinator took from processes in the processing
        #: lane, and how often processes entered it
        self.plane_heartbeats = 0
        self.plane_commits = 0
        self.plane_entries = 0
        # coordinator
        k = scenario.coordinator
        self._coordinator_settings: dict[str, object] = {
            "group.initial.rebalance.delay.ms": k.group_initial_rebalance_delay_ms,
            "group.min.session.timeout.ms": k.group_min_session_timeout_ms,
            "group.max.session.timeout.ms": k.group_max_session_timeout_ms,
            "group.max.size": k.group_max_size,
        }
        self.store = MemoryOffsetStore()
        self._member_ids = SequentialMemberIds()
        self.coordinator: GroupCoordinator | None = None
        self._coordinator_wake: int | None = None
        self._start_coordinator()
        self._correlations = itertools.count(1)
        #: correlation -> (process, request) for requests the coordinator has not answered
        self._routes: dict[object, tuple[Process, AnyRequest]] = {}
        #: what MemberMachine.poll_idle sends (empty between calls)
        self._sent: list[AnyRequest] = []
        self.processes: dict[str, Process] = {}
        self._incarnations: dict[str, int] = {}
        self._next_number = 0

    # ------------------------------------------------------------------ the loop

    def run(self) -> Recorder:
        # Why: a run allocates a few container objects per event (the queue's tuples, the
        # coordinator's offsets) and keeps many of them a while, so with CPython's default
        # young generation (700 objects) the collector ran every few events and a
        # 1,000-member hour spent about 15% of its time in it; the run creates almost no
        # reference cycles. The caller's thresholds come back at the end.
        thresholds = gc.get_threshold()
        gc.set_threshold(100_000, 50, 1_000)
        try:
            return self._run()
        finally:
            gc.set_threshold(*thresholds)

    def _run(self) -> Recorder:
        for _ in range(self.scenario.group.members):
            self._start_member(self._next_number)
        for i, action in enumerate(self.scenario.timeline):
            self._push(action.at_ms, _TIMELINE, i, 0, self._timeline, (i, action))
        queue, end = self._queue, self.end_ms
        progress, events = self.progress, 0
        pop = heapq.heappop
        lanes = self._lanes
        recorder = self.recorder
        while True:
            if lanes is not None and len(lanes):
                # the lane's events that come before the next one here
                head = queue[0] if queue else None
                coordinator = self.coordinator
                stop, slot, key, (heartbeats, commits, steps, ran) = lanes.run(
                    (end + 1, 0, 0, 0) if head is None else (head[0], head[1], head[2], head[3]),
                    end,
                    self,
                    coordinator,
                    self._shell,
                    None if coordinator is None else coordinator.member_expiry,
                    self._coordinator_version,
                )
                recorder.requests += heartbeats + commits
                recorder.heartbeats += heartbeats
                self.plane_heartbeats += heartbeats
                self.quiet_commits += commits
                self.plane_commits += commits
                self.lazy_steps += steps
                if progress is not None and (events + ran) >> 14 != events >> 14:
                    progress(key[0] if stop else self.now, end)
                events += ran
                if stop:
                    self._lane_stop(stop, slot, key)
                    continue
            if not queue or queue[0][0] > end:
                break
            event = self._event = pop(queue)
            self.now = event[0]
            event[5](*event[6])
            events += 1
            if progress is not None and events & 0x3FFF == 0:
                progress(self.now, end)
        self.now = end
        # every event at or before the end ran in the eager run
        self._event = (end + 1, 0, 0, 0)
        for process in self.processes.values():
            if process.lane is not None:
                self._lane_leave(process)
            if process.plane is not None:
                self._plane_leave(process)
        if self._lazy:
            # the lazy steps up to the end
            for process in self.processes.values():
                if process.lazy_until is not None:
                    self._catch_up(process)
        for process in self.processes.values():
            if process.alive and process.busy_until is not None:
                self._apply_batch(process, until_ms=end)
        self.recorder.close(end, self.streams)
        if progress is not None:
            progress(end, end)
        return self.recorder

    def _push(
        self,
        t: int,
        rank: int,
        proc: int,
        sub: int,
        handler: Callable[..., None],
        args: tuple[Any, ...],
    ) -> None:
        """Queue ``handler(*args)`` at ``t`` with the canonical key of (rank, proc, sub)."""
        now = self.now
        if t < now:
            raise AssertionError(f"queued in the past: {t} < {now}")
        if t == now:
            # one round after the event being handled (-1: none yet, setting up)
            current = self._event[1] >> _ROUND_SHIFT if self._event[0] >= 0 else -1
            rank |= (current + 1) << _ROUND_SHIFT
        heapq.heappush(self._queue, (t, rank, proc, sub, next(self._seq), handler, args))

    # ------------------------------------------------------------------ coordinator

    def _start_coordinator(self) -> None:
        # the simulated store acknowledges at once: a SyncShell persists before returning
        shell = SyncShell(
            self.store,
            self._coordinator_settings,
            member_id_factory=self._member_ids,
            now_ms=self.now,
        )
        shell.add_rebalance_listener(self.recorder.on_rebalance_completed)
        shell.add_member_listener(self.recorder.on_member_removed)
        self._shell = shell
        self.coordinator = shell.coordinator
        self._coordinator_version += 1
        self._coordinator_wake = None
        self._schedule_coordinator()

    def _schedule_coordinator(self) -> None:
        coordinator = self.coordinator
        if coordinator is None:
            return
        deadline = coordinator.next_deadline()
        if deadline is None:
            return
        deadline = max(deadline, self.now)
        if self._coordinator_wake is None or deadline < self._coordinator_wake:
            self._coordinator_wake = deadline
            self._push(deadline, _TICK, 0, 0, self._coordinator_tick, (coordinator, deadline))

    def _coordinator_tick(self, coordinator: GroupCoordinator, at: int) -> None:
        if coordinator is not self.coordinator or self._coordinator_wake != at:
            return  # stale
        self._coordinator_wake = None
        due = coordinator.next_deadline()
        if due is not None and due <= self.now:
            # a tick acts on the deadlines due; with none due (a session that a heartbeat
            # moved on since the wake was set) it only moves the coordinator's time, so
            # the members known current stay known (the lane's fast path)
            self._coordinator_version += 1
        self._route(self._shell.tick(self.now))
        self._schedule_coordinator()

    def _at_coordinator(self, process: Process, request: AnyRequest) -> None:
        """A request reaches the coordinator."""
        coordinator = self.coordinator
        if coordinator is None:
            # nobody listens: the member hears of it one latency later
            self._routes.pop(request.correlation, None)
            answer_ms = self._down_arrival(process)
            self._release_held_wake(process, answer_ms)
            self._push(
                answer_ms,
                _ANSWER,
                process.key,
                process.down_seq,
                self._failed_at_member,
                (process, request, CoordinatorNotAvailableError),
            )
            return
        if (
            type(request) is HeartbeatRequest
            and self._quiet_heartbeats
            and coordinator.quiet_heartbeat(
                request.group_id,
                request.member_id,
                request.generation_id,
                request.group_instance_id,
                self.now,
            )
        ):
            # what handle() does and answers for a current member of a Stable group (the
            # session refreshed, nothing else), without its request path
            self._route(
                [HeartbeatResponse(version=request.version, correlation=request.correlation)],
                quiet=True,
            )
            self._schedule_coordinator()
            return
        if type(request) is OffsetCommitRequest and self._quiet_heartbeats:
            # a current member's commit to the Stable group (an auto-commit): the answer
            # handle() would release, the offsets stored, without its request path
            answer = self._shell.quiet_offset_commit(request, self.now)
            if answer is not None:
                self.quiet_commits += 1
                self._route([answer], quiet=True)
                self._schedule_coordinator()
                return
        self._coordinator_version += 1
        self._route(self._shell.handle(request, self.now))
        if isinstance(request, SyncGroupRequest) and (
            coordinator.group_state(self.group_id) is GroupState.STABLE
        ):
            rows = self.recorder.rebalances
            if rows:
                self.recorder.on_stable(rows[-1].generation, self.now)
        self._schedule_coordinator()

    def _route(self, responses: list[CoordinatorResponse], *, quiet: bool = False) -> None:
        """Send the coordinator's answers to their members. ``quiet``: the one answer of a
        quiet exchange (a heartbeat or commit the coordinator took quietly), which may be
        folded into its process's lazy steps instead of queued."""
        for response in responses:
            entry = self._routes.pop(response.correlation, None)
            if entry is None:
                continue  # its connection is gone (failover)
            process = entry[0]
            answer_ms = self._down_arrival(process)
            if process.held_wake is not None:
                self._release_held_wake(process, answer_ms)
            if (
                quiet
                and process.lazy_until is not None
                and answer_ms > self.now
                and self._fold(process, response, answer_ms)
            ):
                continue
            if answer_ms > self.now:  # _push, inline
                heapq.heappush(
                    self._queue,
                    (
                        answer_ms,
                        _ANSWER,
                        process.key,
                        process.down_seq,
                        next(self._seq),
                        self._at_member,
                        (process, response),
                    ),
                )
            else:
                self._push(
                    answer_ms,
                    _ANSWER,
                    process.key,
                    process.down_seq,
                    self._at_member,
                    (process, response),
                )

    def _down_arrival(self, process: Process) -> int:
        arrival = max(self.now + process.sample_latency_ms(), process.down_last_ms)
        process.down_last_ms = arrival
        process.down_seq += 1
        return math.ceil(arrival)

    # ------------------------------------------------------------------ members: lifecycle

    def _member_config(self, name: str, number: int) -> MemberConfig:
        g, c = self.scenario.group, self.scenario.consumer
        assignors: list[Assignor] = []
        for assignor_name in g.assignors:
            if assignor_name == "cooperative-sticky":
                assignors.append(
                    CooperativeStickyAssignor(
                        scheduled_rebalance_max_delay_ms=c.scheduled_rebalance_max_delay_ms
                    )
                )
            else:
                assignors.append(ASSIGNORS[assignor_name]())
        # Before KIP-62 there was no poll timer and JoinGroup v0 carried no rebalance
        # timeout: the coordinator used the session timeout for both.
        max_poll = c.max_poll_interval_ms if self.thread else c.session_timeout_ms
        return MemberConfig(
            group_id=self.group_id,
            topics=sorted(g.topics),
            assignors=assignors,
            session_timeout_ms=c.session_timeout_ms,
            heartbeat_interval_ms=c.heartbeat_interval_ms,
            max_poll_interval_ms=max_poll,
            group_instance_id=name if g.static else None,
            client_id=name,
            retry_backoff_ms=c.retry_backoff_ms,
        )

    def _start_member(self, number: int) -> Process:
        name = f"member-{number}"
        self._next_number = max(self._next_number, number + 1)
        incarnation = self._incarnations.get(name, 0) + 1
        self._incarnations[name] = incarnation
        machine = MemberMachine(
            self._member_config(name, number), correlation_ids=self._correlations
        )
        machine.set_metadata(self.partitions_per_topic, self.now)
        metadata_epoch = self._metadata_epoch
        stream_seed = f"{self.seed}:{name}:{incarnation}"
        process = Process(
            name=name,
            number=number,
            machine=machine,
            sample_record_ms=self.scenario.workload.record_time_ms.sampler(
                random.Random(stream_seed + ":records")
            ),
            sample_latency_ms=_Draws(
                self.scenario.network.latency_ms.sampler(random.Random(stream_seed + ":network"))
            ),
        )
        process.up_last_ms = process.down_last_ms = self.now
        assert incarnation <= _INCARNATION_MASK and number < 1 << 23, (number, incarnation)
        process.key = (number << _INCARNATION_BITS) | incarnation
        process.next_auto_commit_ms = self.now + self.scenario.consumer.auto_commit_interval_ms
        process.metadata_epoch = metadata_epoch
        self.processes[name] = process
        self.recorder.event(self.now, "member_started", name, detail=f"incarnation {incarnation}")
        self._push_metadata(process, self.now + self.scenario.consumer.metadata_max_age_ms)
        self._step(process)
        return process

    def _crash(self, process: Process) -> None:
        """The process dies: no LeaveGroup, nothing more sent or heard."""
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        self._apply_batch(process, until_ms=self.now)
        process.alive = False
        self._release_all(process)
        process.outstanding.clear()
        self.recorder.event(self.now, "member_crashed", process.name)

    def _request_close(self, process: Process, on_stopped: Callable[[int], None] | None) -> None:
        """The application shuts down: it finishes the batch in hand, then closes."""
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        process.close_requested = True
        process.on_stopped = on_stopped
        self.recorder.event(self.now, "member_closing", process.name)
        if process.busy_until is None and process.paused_until is None:
            self._step(process)

    def _close_now(self, process: Process) -> None:
        machine = process.machine
        process.closing = True
        process.close_deadline_ms = self.now + self.scenario.consumer.close_timeout_ms
        if (
            self.scenario.consumer.enable_auto_commit
            and not self.scenario.consumer.commit_on_revoke
        ):
            self._commit_positions(process, only_changed=True)  # Java's close(): commitSync
        machine.close(self.now)
        self._deliver(process)
        self._release_all(process)

    def _stop(self, process: Process) -> None:
        process.alive = False
        self._release_all(process)
        self.recorder.event(self.now, "member_stopped", process.name)
        if process.on_stopped is not None:
            process.on_stopped(self.now)

    def _release_all(self, process: Process) -> None:
        paused = process.paused_until is not None  # a paused owner already stopped processing
        for tp, owned in process.owned.items():
            if owned.active:
                owned.active = False
                if not paused:
                    self.recorder.owner_stopped(tp, self.now)
        process.owned.clear()
        process.fetches.clear()

    # ------------------------------------------------------------------ members: one step

    def _wake(self, process: Process, at: int) -> None:
        if process.plane is not None:
            return  # queued before it entered the processing lane: superseded
        if process.lazy_until is not None:
            self._catch_up(process)
            if process.wake_at != at:
                return  # superseded
            self._leave_lazy(process)
        elif process.wake_at != at:
            return  # superseded
        process.wake_at = None
        process.held_wake = None
        if process.alive and process.paused_until is None:
            self._step_process(process)
            if self.checker is not None:
                self.checker.after_step(self.now, self.processes.values(), self._group_members())

    def _set_wake(self, process: Process, at: int | None, hold_until: int | None = None) -> None:
        """Wake the process at ``at`` (``None``: nothing of its own is due) unless an earlier
        wake-up is queued.

        A wake-up later than ``hold_until`` (the time a heartbeat just sent reaches the
        coordinator) is held back, not queued: almost always the answer arrives first and
        steps the process, which then wants an earlier wake-up (the next heartbeat) and
        the held one would only have been popped and ignored, once per heartbeat. It is
        queued as soon as it may still be needed: when the answer's arrival is known to
        be later (``_release_held_wake``) or a step wants no earlier wake-up.
        """
        now = self.now
        if at is not None and at <= now:
            at = now + 1
        wake_at = process.wake_at
        if at is not None and (wake_at is None or at < wake_at or wake_at < now):
            process.wake_at = at
            if hold_until is not None and at > hold_until:
                process.held_wake = at
            else:
                process.held_wake = None
                # _push, inline (at > now)
                heapq.heappush(
                    self._queue,
                    (at, _WAKE, process.key, 0, next(self._seq), self._wake, (process, at)),
                )
        elif process.held_wake is not None:
            self._queue_held_wake(process)

    def _queue_held_wake(self, process: Process) -> None:
        at, process.held_wake = process.held_wake, None
        assert at is not None and at == process.wake_at, (process.name, at, process.wake_at)
        self._push(at, _WAKE, process.key, 0, self._wake, (process, at))

    def _release_held_wake(self, process: Process, answer_ms: int) -> None:
        """The answer to the heartbeat reaches the process at ``answer_ms``: a held wake-up
        due by then must be queued (a step at the answer decides about a later one)."""
        if process.held_wake is not None and process.held_wake <= answer_ms:
            self._queue_held_wake(process)

    # ------------------------------------------------------------------ lazy steps

    @staticmethod
    def _wake_replaceable(process: Process, at: int, now: int) -> bool:
        """Whether a step at ``now`` wanting its next wake-up at ``at`` may take the lazy
        path: no wake-up is queued, or the queued one is later, past, or the very one
        left unqueued at ``at``."""
        wake_at = process.wake_at
        return (
            wake_at is None
            or at < wake_at
            or wake_at < now
            or (at == wake_at and wake_at == process.unqueued_wake)
        )

    def _go_lazy(self, process: Process, at: int, deadline: int) -> bool:
        """A quick step at ``now`` wants its next wake-up at ``at``: make the application
        steps before the first one that may act outside the process lazy (not queued).

        That first one is at ``deadline`` (the machine's, from ``poll_idle``: a heartbeat
        due, a timeout) or at the next auto-commit, whichever is earlier; until then every
        step is an idle poll, a batch's end or start. Possible only while no other lazy
        process may process the same partitions (the recorder's counts per partition
        depend on the order of batches)."""
        until = deadline
        if self._auto_commit and process.next_auto_commit_ms < until:
            until = process.next_auto_commit_ms
        if at >= until:
            return False
        owners = self._lazy_owner
        for tp in process.owned:
            other = owners.get(tp)
            if other is not None and other is not process:
                return False
        for tp in process.owned:
            owners[tp] = process
        process.wake_at = at
        process.held_wake = None
        process.lazy_until = until
        if process.boundary_at != until:
            process.boundary_at = until
            heapq.heappush(
                self._queue,
                (until, _WAKE, process.key, 0, next(self._seq), self._boundary, (process, until)),
            )
        return True

    def _leave_lazy(self, process: Process) -> None:
        process.lazy_until = None
        folded = process.folded
        if folded is not None:
            # not read yet (its key is after the event's): queued at its key after all
            process.folded = None
            answered, down_seq, response = folded
            heapq.heappush(
                self._queue,
                (
                    answered,
                    _ANSWER,
                    process.key,
                    down_seq,
                    next(self._seq),
                    self._at_member,
                    (process, response),
                ),
            )
        owners = self._lazy_owner
        for tp in process.owned:
            if owners.get(tp) is process:
                del owners[tp]

    def _catch_up(self, process: Process) -> None:
        """Run the lazy process's steps whose keys are smaller than the current event's,
        as their own events would have.

        Each is the quick step of ``_step_process`` for an idle, stable machine before its
        deadline: finish the batch in hand, poll (the machine only notes the time: ``poll_idle``
        returns its deadline, unchanged but for the poll timer, and sends nothing), start
        the next batch, wake at its end or at the next record, or at the machine's deadline
        if that is earlier. Before the lazy period's end (``lazy_until``, at most that
        deadline) the deadline is never the earlier, so the machine is told only of the last
        poll (the same state as after every one of them) and asked its deadline only for a
        step whose next wake-up falls at or beyond that end.

        A folded answer (``Engine._fold``) whose key is smaller than the event's is read in
        between: the steps before its arrival, then its step, then the rest."""
        if process.plane is not None:
            self._plane_catch_up(process)
            return
        event = self._event
        folded = process.folded
        if folded is not None and (folded[0], _ANSWER, process.key, folded[1]) < (
            event[0],
            event[1],
            event[2],
            event[3],
        ):
            # (a wake-up at the answer's millisecond runs after it: _WAKE > _ANSWER)
            self._lazy_steps(process, folded[0])
            self._read_folded(process)
        limit = event[0]  # steps before it run; at it, those that precede the event too
        if (_WAKE, process.key) < (event[1], event[2]):
            limit += 1
        self._lazy_steps(process, limit)

    def _lazy_steps(self, process: Process, limit: int) -> None:
        """The lazy process's steps before ``limit`` (and before the lazy period's end)."""
        until = process.lazy_until
        assert until is not None
        wake_at = process.wake_at
        if wake_at is None or wake_at >= limit:
            return
        if self._native and self._catch_up_native(process, wake_at, until, limit):
            return
        now, catching_up = self.now, self._catching_up
        self._catching_up = True
        machine, sent = process.machine, self._sent
        polled: int | None = None
        steps = 0
        try:
            while wake_at is not None and wake_at < until and wake_at < limit:
                self.now = t = wake_at
                busy_until = process.busy_until
                if busy_until is not None and t >= busy_until:
                    self._apply_batch(process, until_ms=None)
                    process.busy_until = None  # (no commit: lazy needs auto-commit)
                at = self._poll_records(process)
                if at is not None and at < until:
                    polled = t
                else:
                    deadline = machine.poll_idle(t, sent)
                    assert deadline is not None and not sent, (process.name, t, deadline)
                    polled = None
                    if at is None or deadline < at:
                        at = deadline
                if at <= t:
                    at = t + 1  # as _set_wake does
                process.wake_at = wake_at = at
                steps += 1
            if polled is not None:
                self.now = polled
                deadline = machine.poll_idle(polled, sent)
                assert deadline is not None and not sent, (process.name, polled, deadline)
        finally:
            self.now, self._catching_up = now, catching_up
            self.lazy_steps += steps

    def _catch_up_native(self, process: Process, wake_at: int, until: int, limit: int) -> bool:
        """``_catch_up``'s loop in Rust (``_core.app_loop``: the same steps, the same
        floats). The machine's deadline after a poll, which the Python loop asks
        ``poll_idle`` for at a step whose next wake-up is past ``until``, is handed to it
        (``MemberMachine.quiet_deadline_base``); the machine is told of the last poll, and
        its answer checked against that deadline. ``False`` (nothing done): a batch in
        hand names a partition the process no longer holds (revoked while it processed
        it); the Python loop handles that."""
        app = self._native_app(process)
        if app is None:
            return False
        parts, batch, held = app
        machine, recorder = process.machine, self.recorder
        base = machine.quiet_deadline_base()
        max_poll = self._max_poll_interval_ms
        state, ran, counts = _core.app_loop(
            parts,
            batch,
            process.rr,
            process.busy_until,
            wake_at,
            until,
            limit,
            self._max_poll_records,
            self._record_ms,
            process.sample_record_ms,
            recorder.max_lag_ms,
            base,
            max_poll,
        )
        process.wake_at, polled, steps, _ = ran
        self._native_app_store(process, held, state, counts)
        if polled is not None:
            deadline = machine.poll_idle(polled, self._sent)
            expected = polled + max_poll
            assert deadline == (base if base < expected else expected) and not self._sent, (
                process.name,
                polled,
                deadline,
                base,
            )
        self.lazy_steps += steps
        return True

    def _native_app(
        self, process: Process
    ) -> (
        tuple[
            list[tuple[bool, int, int, float, int]],
            list[tuple[int, int, list[float]]],
            list[PartitionStream],
        ]
        | None
    ):
        """The process's application state as the Rust loops take it (partitions, the
        batch in hand, and the partitions' streams in the same order), or ``None`` when
        the batch names a partition the process no longer holds (revoked while it
        processed it): the Python loops handle that."""
        owned = process.owned
        batch: list[tuple[int, int, list[float]]] = []
        if process.batch:
            index = {tp: i for i, tp in enumerate(owned)}
            for segment in process.batch:
                i = index.get(segment.tp)
                if i is None:
                    return None
                batch.append((i, segment.first_offset, segment.completions_ms))
        streams = self.streams
        held: list[PartitionStream] = []
        parts: list[tuple[bool, int, int, float, int]] = []
        for tp, o in owned.items():
            stream = streams[tp]
            held.append(stream)
            position = o.position
            parts.append(
                (
                    o.active,
                    -1 if position is None else position,
                    stream.start_ms,
                    stream.rate_per_s,
                    stream.processed_end,
                )
            )
        return parts, batch, held

    def _native_app_store(
        self,
        process: Process,
        held: list[PartitionStream],
        state: tuple[list[tuple[int, int]], int, int | None, list[tuple[int, int, list[float]]]],
        counts: tuple[int, int, float, list[tuple[int, int]]],
    ) -> None:
        """Take back the application state and the recorder's counts a Rust loop returned."""
        ends, process.rr, process.busy_until, batch = state
        recorder = self.recorder
        records, duplicates, max_lag_ms, lags = counts
        if max_lag_ms > recorder.max_lag_ms:
            recorder.max_lag_ms = max_lag_ms
        recorder.records_processed += records
        recorder.duplicates += duplicates
        if lags:
            lag_counts = recorder.lag_counts
            for lag, n in lags:
                lag_counts[lag] += n
        owned = process.owned
        for o, stream, (position, end) in zip(owned.values(), held, ends, strict=True):
            if o.active:
                o.position = position
            stream.processed_end = end
        if batch:
            tps = list(owned)
            process.batch = [_Segment(tps[i], first, c) for i, first, c in batch]
        else:
            process.batch = []

    def _fold(self, process: Process, response: CoordinatorResponse, answer_ms: int) -> bool:
        """The answer of a quiet exchange reaches the lazy process at ``answer_ms``: fold it
        into its lazy steps instead of queuing it, when its step there is one more quiet
        step (``_read_folded``) and the lazy period can still end no later than the
        machine's next deadline after it. ``False``: nothing changed (it is queued).

        The process's only request in flight is this one; a heartbeat's answer without
        error or a commit's with every partition accepted. After a commit's answer the
        machine's deadline is what it was; after a heartbeat's it is the next heartbeat
        (an interval after the send), unless a timeout comes first: the session, counted
        from this answer, or the poll timer, counted from a poll no earlier than the last
        one the machine knows. The lazy period then ends no later than the earliest of
        these (``_read_folded`` checks that the machine agrees)."""
        if process.folded is not None or len(process.outstanding) != 1:
            return False
        until = process.lazy_until
        assert until is not None
        if answer_ms >= until:
            return False
        if isinstance(response, HeartbeatResponse):
            if response.error is not None:
                return False
            machine = process.machine
            bound = min(
                machine.heartbeat_due_ms,
                answer_ms + self._session_timeout_ms,
                machine.last_poll_ms + self._max_poll_interval_ms,
            )
            if bound <= answer_ms:
                return False
            if bound < until:
                until = process.lazy_until = bound
                if process.boundary_at != until:
                    process.boundary_at = until
                    heapq.heappush(
                        self._queue,
                        (
                            until,
                            _WAKE,
                            process.key,
                            0,
                            next(self._seq),
                            self._boundary,
                            (process, until),
                        ),
                    )
        elif isinstance(response, OffsetCommitResponse):
            for topic in response.topics:
                for partition in topic.partitions:
                    if partition.error is not None:
                        return False
        else:
            return False
        process.folded = (answer_ms, process.down_seq, response)
        self.lazy_answers += 1
        self.folded_answers += 1
        return True

    def _read_folded(self, process: Process) -> None:
        """The folded answer's arrival, during a catch-up whose steps before it have run:
        what ``_at_member`` and its step do there for a lazy process. The machine reads the
        answer; inside a batch the heartbeat thread only looks for requests to send (none),
        otherwise the application polls (finishing a batch that ends now, perhaps starting
        the next). The next step is the earlier of the one due and the one this step wants
        (a wake-up due at this very millisecond still runs, after it: a lazy step if the
        process is still idle, a step that only wakes it at the batch's end if not)."""
        folded, process.folded = process.folded, None
        assert folded is not None
        answered, _, response = folded
        if not process.alive or process.outstanding.pop(response.correlation, None) is None:
            return  # (as _answer: the request was failed meanwhile)
        now, catching_up = self.now, self._catching_up
        self.now, self._catching_up = answered, True
        try:
            machine = process.machine
            machine.receive(response, answered)
            busy_until = process.busy_until
            if busy_until is not None and answered < busy_until:
                sent = machine.next_requests(answered)
                assert not sent, (process.name, answered, sent)
                deadline = machine.next_deadline()
                at: int | None = busy_until
            else:
                if busy_until is not None:
                    self._apply_batch(process, until_ms=None)
                    process.busy_until = None  # (no commit: lazy needs auto-commit)
                deadline = machine.poll_idle(answered, self._sent)
                assert not self._sent, (process.name, answered, self._sent)
                polled = self._poll_records(process)
                at = polled if polled is not None else deadline
            lazy_until = process.lazy_until
            assert deadline is not None and lazy_until is not None and lazy_until <= deadline, (
                process.name,
                answered,
                deadline,
                lazy_until,
            )
            if at is None or deadline < at:
                at = deadline
            if at <= answered:
                at = answered + 1  # as _set_wake does
            wake_at = process.wake_at
            if wake_at is None or at < wake_at:
                process.wake_at = at
            elif wake_at == answered and process.busy_until is not None:
                # the wake-up due now still runs, inside the batch this step started: the
                # heartbeat thread finds nothing to send (next_requests, as above) and
                # wakes at the batch's end or the deadline, which is ``at``
                process.wake_at = at
        finally:
            self.now, self._catching_up = now, catching_up

    def _unlazy(self, process: Process) -> None:
        """An event touches the process: bring its lazy steps up to the event; its next
        wake-up is queued as in the eager engine."""
        self._catch_up(process)
        self._leave_lazy(process)
        at = process.wake_at
        if at is not None:
            assert at >= self.now
            heapq.heappush(
                self._queue, (at, _WAKE, process.key, 0, next(self._seq), self._wake, (process, at))
            )

    def _boundary(self, process: Process, at: int) -> None:
        """The end of a process's lazy steps: the step due now (if any) runs for real."""
        if process.lazy_until != at:
            return  # it left the lazy mode (or chose another boundary) since
        self._catch_up(process)
        if self._plane_ok and self._plane_enter(process, at):
            return
        self._leave_lazy(process)
        wake_at = process.wake_at
        if wake_at == at:
            self._wake(process, at)
        elif wake_at is not None:
            heapq.heappush(
                self._queue,
                (wake_at, _WAKE, process.key, 0, next(self._seq), self._wake, (process, wake_at)),
            )

    def _touch(self, process: Process) -> None:
        """An event touches a process that is lazy or in the heartbeat lane: bring it up to
        the event, as the eager engine has it."""
        if process.plane is not None:
            self._plane_leave(process)
            return
        if process.lazy_until is not None:
            self._unlazy(process)
        if process.lane is not None:
            self._lane_leave(process)

    # ------------------------------------------------------------------ the heartbeat lane

    def _lane_enter(self, process: Process) -> None:
        """A heartbeat's answer was just read and the process's next wake-up is its next
        heartbeat: if nothing else of the process can happen until then (the heartbeat
        thread; no records of its own to process; nothing outstanding, buffered, paused,
        cut or closing; the machine idle and stable), its heartbeats run in the lane."""
        now = self.now
        machine = process.machine
        at = process.wake_at
        session, max_poll = self._session_timeout_ms, self._max_poll_interval_ms
        if (
            at is None
            or at <= now
            or process.held_wake is not None
            or at != machine.heartbeat_due_ms
            # the send is before a timeout (the answer just read and the poll are at now)
            or at - now >= session
            or at - now >= max_poll
            or not process.running
            or process.paused_until is not None
            or process.cut_until is not None
            or process.lazy_until is not None
            or process.outstanding
            or process.buffered
            or process.fetches
            or process.lookup_in_flight
            or process.poll_expired_seen
            or (self._rate > 0 and process.owned)
            or self.coordinator is None
            or machine.poll_idle_blocked()
        ):
            return
        if self._auto_commit:
            # every auto-commit in the lane must find nothing to commit (_auto_commit_idle)
            committed = process.committed_positions
            for tp, o in process.owned.items():
                if o.position is not None and committed.get(tp) != o.position:
                    return
        deadline = min(at + max_poll, now + session)
        draws = process.sample_latency_ms
        up = draws()
        up_arrival = max(at + up, process.up_last_ms)
        arrival = math.ceil(up_arrival)
        if arrival <= at or deadline <= arrival:
            draws.unread(up)
            return
        lane = _Lane(
            member_id=machine.member_id,
            generation=machine.generation,
            instance_id=machine.config.group_instance_id,
            sent=at,
            up_draw=up,
            up_arrival=up_arrival,
            arrival=arrival,
            up_seq=process.up_seq + 1,
            deadline=deadline,
        )
        process.lane = lane
        process.wake_at = None  # the queued wake-up at ``at`` is superseded
        heapq.heappush(
            self._queue,
            (
                arrival,
                _REQUEST,
                process.key,
                lane.up_seq,
                next(self._seq),
                self._lane_arrive,
                (process, lane),
            ),
        )

    def _lane_arrive(self, process: Process, lane: _Lane) -> None:
        """A lane heartbeat reaches the coordinator: the coordinator's quiet heartbeat, and
        the next heartbeat's send decided; or, if it is not the quiet case, the process
        leaves the lane and the heartbeat arrives as a real request."""
        if process.lane is not lane:
            return  # the process left the lane: its heartbeat was sent as a real request
        now = self.now
        coordinator = self.coordinator
        if coordinator is None or not coordinator.quiet_heartbeat(
            self.group_id, lane.member_id, lane.generation, lane.instance_id, now
        ):
            request = self._lane_leave(process, arriving=True)
            assert request is not None
            self._at_coordinator(process, request)
            return
        # what the process did before this arrival: the step at the previous answer, the
        # send (_lane_auto_commit_timer and _lane_commit_send, inline: the same arithmetic)
        sent, deadline = lane.sent, lane.deadline
        if self._auto_commit:
            interval = self._auto_commit_interval_ms
            if lane.prev_sent is not None and lane.prev_answered >= process.next_auto_commit_ms:
                process.next_auto_commit_ms = lane.prev_answered + interval
            if sent >= process.next_auto_commit_ms:
                process.next_auto_commit_ms = sent + interval
        recorder = self.recorder
        recorder.requests += 1
        recorder.heartbeats += 1
        process.up_last_ms = lane.up_arrival
        process.up_seq = lane.up_seq
        self.lane_heartbeats += 1
        # the answer leaves now (_down_arrival, inline)
        draws = process.sample_latency_ms
        down_arrival = max(now + draws(), process.down_last_ms)
        process.down_last_ms = down_arrival
        process.down_seq += 1
        answered = math.ceil(down_arrival)
        lane.older_sent, lane.older_answered = lane.prev_sent, lane.prev_answered
        lane.prev_sent, lane.prev_answered = sent, answered
        lane.prev_down_seq, lane.prev_deadline = process.down_seq, deadline
        lane.up_draw = None
        # the machine, reading the answer, asks to wake for the next heartbeat; it sends it
        # then, before any timeout (the answer and the poll at ``answered``)
        session, max_poll = self._session_timeout_ms, self._max_poll_interval_ms
        after = sent + self._heartbeat_interval_ms
        if not (
            now < answered < after
            and answered < deadline
            and after - answered < session
            and after - answered < max_poll
        ):
            self._lane_leave(process, answer_now=True)
            return
        next_deadline = min(after + max_poll, answered + session)
        up = draws()
        up_arrival = max(after + up, process.up_last_ms)
        arrival = math.ceil(up_arrival)
        if arrival <= after or next_deadline <= arrival:
            draws.unread(up)
            self._lane_leave(process, answer_now=True)
            return
        lane.sent, lane.up_draw, lane.up_arrival, lane.arrival = after, up, up_arrival, arrival
        lane.up_seq, lane.deadline = process.up_seq + 1, next_deadline
        heapq.heappush(
            self._queue,
            (
                arrival,
                _REQUEST,
                process.key,
                lane.up_seq,
                next(self._seq),
                self._lane_arrive,
                (process, lane),
            ),
        )

    def _lane_leave(
        self, process: Process, *, arriving: bool = False, answer_now: bool = False
    ) -> AnyRequest | None:
        """Take the process out of the lane at the current event: its machine, connection,
        queued events and wake-up become what the eager engine has before this event.
        ``arriving``: the event is the lane heartbeat's arrival; it is sent for real and
        returned. ``answer_now``: the event is the arrival of the previous one, whose answer
        was just scheduled (as ``_route`` does)."""
        lane = process.lane
        assert lane is not None
        process.lane = None
        machine, pkey, now = process.machine, process.key, self.now
        event = self._event
        key = (event[0], event[1], event[2], event[3])
        if lane.prev_sent is not None:  # the machine has not been told of the previous one
            if not answer_now and (lane.prev_answered, _ANSWER, pkey, lane.prev_down_seq) < key:
                self._lane_auto_commit_timer(process, lane.prev_answered)
                told = machine.quiet_heartbeat_answered(lane.prev_sent, lane.prev_answered)
                assert told, (process.name, lane)
            else:
                # its answer is on the way: it was sent for real, the next one is not
                if lane.up_draw is not None:
                    process.sample_latency_ms.unread(lane.up_draw)
                if lane.older_sent is not None:
                    told = machine.quiet_heartbeat_answered(lane.older_sent, lane.older_answered)
                    assert told, (process.name, lane)
                request = self._lane_send(process, lane.prev_sent, lane.prev_deadline)
                process.outstanding[request.correlation] = request
                answered = lane.prev_answered
                # the wake-up held since the send, queued by the answer's scheduling if due
                # by its arrival (_release_held_wake)
                process.wake_at = lane.prev_deadline
                if lane.prev_deadline <= answered:
                    process.held_wake = None
                    self._push(
                        lane.prev_deadline,
                        _WAKE,
                        pkey,
                        0,
                        self._wake,
                        (process, lane.prev_deadline),
                    )
                else:
                    process.held_wake = lane.prev_deadline
                response = HeartbeatResponse(
                    version=request.version, correlation=request.correlation
                )
                if answered > now or not answer_now:  # queued before this millisecond
                    heapq.heappush(
                        self._queue,
                        (
                            answered,
                            _ANSWER,
                            pkey,
                            lane.prev_down_seq,
                            next(self._seq),
                            self._at_member,
                            (process, response),
                        ),
                    )
                else:
                    self._push(
                        answered,
                        _ANSWER,
                        pkey,
                        lane.prev_down_seq,
                        self._at_member,
                        (process, response),
                    )
                return None
        assert lane.up_draw is not None
        if arriving or (lane.sent, _WAKE, pkey, 0) < key:
            # the heartbeat on its way was sent (for real, now)
            self._lane_commit_send(process, lane)
            request = self._lane_send(process, lane.sent, lane.deadline)
            process.outstanding[request.correlation] = request
            self._routes[request.correlation] = (process, request)
            process.wake_at = process.held_wake = lane.deadline  # held until its answer
            if arriving:
                return request
            heapq.heappush(
                self._queue,
                (
                    lane.arrival,
                    _REQUEST,
                    pkey,
                    lane.up_seq,
                    next(self._seq),
                    self._at_coordinator,
                    (process, request),
                ),
            )
            return None
        # not sent yet: the process wakes to send it
        process.sample_latency_ms.unread(lane.up_draw)
        process.wake_at, process.held_wake = lane.sent, None
        heapq.heappush(
            self._queue,
            (lane.sent, _WAKE, pkey, 0, next(self._seq), self._wake, (process, lane.sent)),
        )
        return None

    def _lane_send(self, process: Process, at: int, deadline: int) -> AnyRequest:
        """The machine sends the heartbeat due at ``at`` (``poll_idle``, as the step did)."""
        sent = self._sent
        asked = process.machine.poll_idle(at, sent)
        assert asked == deadline and len(sent) == 1, (process.name, at, asked, deadline, sent)
        return sent.pop()

    def _lane_commit_send(self, process: Process, lane: _Lane) -> None:
        """The effects of the step that sent the lane heartbeat (``_send``'s bookkeeping)."""
        self._lane_auto_commit_timer(process, lane.sent)
        recorder = self.recorder
        recorder.requests += 1
        recorder.heartbeats += 1
        process.up_last_ms = lane.up_arrival
        process.up_seq = lane.up_seq

    def _lane_auto_commit_timer(self, process: Process, at: int) -> None:
        """A step at ``at`` with nothing consumed moves the auto-commit timer
        (``_auto_commit_idle``)."""
        if self._auto_commit and at >= process.next_auto_commit_ms:
            process.next_auto_commit_ms = at + self._auto_commit_interval_ms

    # ------------------------------------------------------------------ the processing lane

    def _plane_enter(self, process: Process, at: int) -> bool:
        """The boundary at ``at`` of a lazy process that has nothing in flight: if its
        heartbeats and auto-commits can run in the processing lane from here, put it there
        (its application steps stay lazy, with no end) and queue the lane's first events:
        the arrival of the next heartbeat and the next auto-commit's check."""
        machine = process.machine
        hb_due = machine.heartbeat_due_ms
        next_commit = process.next_auto_commit_ms
        if (
            not self._plane_ok
            or process.folded is not None
            or process.outstanding
            or process.buffered
            or process.fetches
            or process.lookup_in_flight
            or process.poll_expired_seen
            or not process.running
            or process.paused_until is not None
            or process.cut_until is not None
            or not process.owned
            or self.coordinator is None
            or process.wake_at is None
            or hb_due < at
            or next_commit <= at
            # the next heartbeat is answered, and the application polls, before a timeout
            or hb_due + self._round_trip_ms
            >= machine.last_heartbeat_ack_ms + self._session_timeout_ms
            or hb_due + self._longest_batch_ms + self._round_trip_ms
            >= machine.last_poll_ms + self._max_poll_interval_ms
            or machine.poll_idle_blocked()
        ):
            return False
        latency = self._latency_ms
        assert latency is not None
        lane = _ProcessingLane(
            member_id=machine.member_id,
            generation=machine.generation,
            instance_id=machine.config.group_instance_id,
            hb_due=hb_due,
            last_ack=machine.last_heartbeat_ack_ms,
            last_poll=machine.last_poll_ms,
            up_seq=process.up_seq,
            down_seq=process.down_seq,
            down_last_ms=process.down_last_ms,
        )
        process.plane = lane
        process.lazy_until = _FOREVER
        process.boundary_at = None
        self.plane_entries += 1
        lanes = self._lanes
        if lanes is not None and process.native_lane is None:
            app = self._native_app(process)
            if app is not None:
                parts, batch, held = app
                tps = list(process.owned)
                committed = process.committed_positions
                slot = lanes.enter(
                    process.key,
                    parts,
                    batch,
                    process.rr,
                    process.busy_until,
                    process.wake_at,
                    lane.timers,
                    (lane.up_seq, lane.down_seq, lane.down_last_ms),
                    next_commit,
                    [committed.get(tp) for tp in tps],
                    [None if o.active else o.position for o in process.owned.values()],
                    hb_due,
                    next_commit,
                    lane.member_id,
                    lane.generation,
                    lane.instance_id,
                    tps,
                    machine.quiet_commit_request,
                    process.metadata_at,
                    process.metadata_epoch,
                )
                # (the refresh queued here is the LaneSet's now)
                process.metadata_token += 1
                lane.native_slot, lane.native_held, lane.native_tps = slot, held, tps
                self._lane_procs[slot] = process
                return True
        self._plane_queue_heartbeat(process, lane, hb_due)
        self._plane_queue_check(process, lane, next_commit)
        return True

    def _plane_native_take(self, process: Process, lane: _ProcessingLane) -> None:
        """Take the process's lane back from the ``LaneSet``: its fields, its application's,
        and its queued events (the next heartbeat's arrival, the check, a commit on its
        way), queued here at their keys for the Python handlers."""
        lanes, slot = self._lanes, lane.native_slot
        assert lanes is not None and slot is not None
        lane.native_slot = None
        del self._lane_procs[slot]
        (
            state,
            counts,
            process.wake_at,
            timers,
            reads,
            connection,
            plan,
            (lane.check_at, lane.last_commit_send, process.next_auto_commit_ms),
            committed,
            lane.commit_like,
            metadata_at,
        ) = lanes.take(slot)
        if metadata_at is not None:
            self._push_metadata(process, metadata_at)
        self._native_app_store(process, lane.native_held, state, counts)
        lane.timers = timers
        lane.reads = reads
        (
            lane.next_sent,
            lane.next_arrival,
            lane.next_up_seq,
            lane.up_seq,
            lane.down_seq,
            lane.down_last_ms,
        ) = connection
        tps = lane.native_tps
        positions = process.committed_positions
        for tp, offset in zip(tps, committed, strict=True):
            if offset is not None:
                positions[tp] = offset
        if plan is None:
            lane.commit = None
        else:
            key, offsets, arrival, up_seq, answer, read, poll_before, applied = plan
            lane.commit = _CommitPlan(
                key=key,
                offsets=None if offsets is None else {tps[i]: o for i, o in offsets},
                arrival=arrival,
                up_seq=up_seq,
                answer=answer,
                read=read,
                poll_before=poll_before,
                applied=applied,
            )
        pkey, push, seq = process.key, heapq.heappush, self._seq
        lane.hb_token += 1
        push(
            self._queue,
            (
                lane.next_arrival,
                _REQUEST,
                pkey,
                lane.next_up_seq,
                next(seq),
                self._plane_heartbeat_arrives,
                (process, lane, lane.hb_token),
            ),
        )
        lane.check_token += 1
        push(
            self._queue,
            (
                lane.check_at,
                _ANSWER,
                pkey,
                -1,
                next(seq),
                self._plane_check,
                (process, lane, lane.check_token),
            ),
        )
        commit = lane.commit
        if commit is not None and commit.offsets is not None and commit.answer is None:
            lane.commit_token += 1
            push(
                self._queue,
                (
                    commit.arrival,
                    _REQUEST,
                    pkey,
                    commit.up_seq,
                    next(seq),
                    self._plane_commit_arrives,
                    (process, lane, lane.commit_token),
                ),
            )

    def _lane_stop(self, stop: int, slot: int, key: tuple[int, int, int, int]) -> None:
        """The ``LaneSet`` stopped after (or, declined, before) its event at ``key``."""
        self.now = key[0]
        self._event = key
        if stop == 2:
            self._schedule_coordinator()
            return
        process = self._lane_procs[slot]
        lane = process.plane
        assert lane is not None
        self._plane_native_take(process, lane)
        if stop == 3:  # a commit not persisted: read as the eager engine reads it
            self._schedule_coordinator()
            self._plane_leave(process)

    def _plane_queue_heartbeat(self, process: Process, lane: _ProcessingLane, sent: int) -> None:
        """Queue the arrival of the heartbeat the lane sends at ``sent`` (the machine's
        rule: an interval after the previous one, whose answer comes before it)."""
        lane.up_seq += 1
        lane.next_sent = sent
        lane.next_arrival = math.ceil(sent + self._latency_ms)  # type: ignore[operator]
        lane.next_up_seq = lane.up_seq
        lane.hb_token += 1
        heapq.heappush(
            self._queue,
            (
                lane.next_arrival,
                _REQUEST,
                process.key,
                lane.up_seq,
                next(self._seq),
                self._plane_heartbeat_arrives,
                (process, lane, lane.hb_token),
            ),
        )

    def _plane_queue_check(self, process: Process, lane: _ProcessingLane, at: int) -> None:
        """Queue the auto-commit's check at ``at``, before anything of the process at that
        millisecond (an answer read then is a poll the commit may be sent from)."""
        lane.check_at = at
        lane.check_token += 1
        heapq.heappush(
            self._queue,
            (
                at,
                _ANSWER,
                process.key,
                -1,
                next(self._seq),
                self._plane_check,
                (process, lane, lane.check_token),
            ),
        )

    def _plane_limits(self, process: Process) -> tuple[int, int]:
        """The steps of the lane's process that come before the current event: its wake-ups
        before the first limit, its answers before the second."""
        event = self._event
        t, rank, proc = event[0], event[1], event[2]
        return (
            t + 1 if (_WAKE, process.key) < (rank, proc) else t,
            t + 1 if (_ANSWER, process.key) < (rank, proc) else t,
        )

    def _plane_catch_up(self, process: Process, *, keep: bool = False) -> None:
        """Run the lane's process's steps that come before the current event, as their own
        events would have: the application's lazy steps, the heartbeat thread's sends and
        the answers' reads. ``keep``: the application's state may stay in its ``LaneApp``
        (the lane's own check; every other caller reads the process's fields)."""
        lane = process.plane
        assert lane is not None
        if lane.native_slot is not None:
            self._plane_native_take(process, lane)
        limit, read_limit = self._plane_limits(process)
        self._plane_steps(process, limit, read_limit)
        if not keep:
            self._plane_sync(process)

    def _plane_steps(self, process: Process, limit: int, read_limit: int) -> None:
        """The steps of a process in the processing lane: each is a wake-up (the
        application's, or the heartbeat thread's at the next heartbeat) or an answer's
        read, which comes before a wake-up of the same millisecond. A step finishes the
        batch in hand if it is done; then either the application polls (the poll timer
        restarts, a due heartbeat is sent, the next batch starts or the process waits for a
        record) or, inside a batch, the heartbeat thread sends a due heartbeat. The next
        wake-up is the earliest of the batch's end or the next record, and the machine's
        deadline; an answer's step leaves an earlier wake-up in place (``_set_wake``)."""
        lane = process.plane
        assert lane is not None
        if self._native and self._plane_steps_native(process, lane, limit, read_limit):
            return
        reads = lane.reads
        now, catching_up = self.now, self._catching_up
        self._catching_up = True
        session, max_poll = self._session_timeout_ms, self._max_poll_interval_ms
        interval = self._heartbeat_interval_ms
        steps = 0
        try:
            while True:
                wake_at = process.wake_at
                assert wake_at is not None, process.name
                if reads and reads[0][0] < read_limit and reads[0][0] <= wake_at:
                    t, _, heartbeat = reads.pop(0)
                    read = True
                    # (the machine's timers are checked before it reads the answer)
                    assert t < lane.last_ack + session and t < lane.last_poll + max_poll, (
                        process.name,
                        t,
                        lane,
                    )
                    if heartbeat:
                        assert lane.hb_sent is not None, (process.name, t, lane)
                        lane.told_sent, lane.told_answered = lane.hb_sent, t
                        lane.hb_sent = None
                        lane.last_ack = t
                    else:
                        plan = lane.commit
                        assert plan is not None and plan.answer is not None
                        plan.read = True
                elif wake_at < limit:
                    t = wake_at
                    read = False
                    assert t < lane.last_ack + session and t < lane.last_poll + max_poll, (
                        process.name,
                        t,
                        lane,
                    )
                else:
                    break
                self.now = t
                busy_until = process.busy_until
                if busy_until is not None and t >= busy_until:
                    self._apply_batch(process, until_ms=None)
                    process.busy_until = busy_until = None
                if lane.hb_sent is None and t >= lane.hb_due:
                    # the heartbeat falls due: sent with the application's poll, or by the
                    # heartbeat thread inside a batch
                    assert t == lane.hb_due, (process.name, t, lane)
                    lane.hb_sent, lane.hb_sent_poll = t, busy_until is None
                    lane.hb_poll_before = lane.last_poll
                    lane.hb_due = t + interval
                    lane.last_hb_send = t
                if busy_until is None:  # the application polls
                    lane.last_poll = t
                    at = self._poll_records(process)
                else:
                    at = busy_until
                # the machine's deadline (next_deadline, poll_idle)
                best = lane.last_ack + session
                if lane.hb_sent is None and lane.hb_due < best:
                    best = lane.hb_due
                deadline = lane.last_poll + max_poll
                if best < deadline:
                    deadline = best
                if at is None or deadline < at:
                    at = deadline
                if at <= t:
                    at = t + 1  # as _set_wake does
                if not read or at < wake_at or (wake_at == t and process.busy_until is not None):
                    # (an answer's step leaves an earlier wake-up queued; one due now runs
                    # after it, and inside the batch it just started it only wakes at ``at``)
                    process.wake_at = at
                steps += 1
        finally:
            self.now, self._catching_up = now, catching_up
            self.lazy_steps += steps

    def _plane_steps_native(
        self, process: Process, lane: _ProcessingLane, limit: int, read_limit: int
    ) -> bool:
        """``_plane_steps`` in Rust (``_core.LaneApp``: the same steps, timers and floats);
        ``False`` (nothing done) where the Python loop must run (see ``_native_app``). The
        application's state moves into the ``LaneApp`` at the first call and stays there
        (the process's own fields are stale) until ``_plane_sync`` takes it back."""
        wake_at = process.wake_at
        assert wake_at is not None
        reads = lane.reads
        if wake_at >= limit and not (reads and reads[0][0] < read_limit):
            return True  # nothing to run
        native = process.native_lane
        if native is None:
            app = self._native_app(process)
            if app is None:
                return False
            parts, batch, held = app
            native = process.native_lane = (
                _core.LaneApp(
                    parts,
                    batch,
                    process.rr,
                    process.busy_until,
                    self._max_poll_records,
                    self._record_ms,
                    process.sample_record_ms,
                    self._plane_settings,
                ),
                held,
            )
        ran, timers = native[0].run(
            wake_at,
            limit,
            read_limit,
            lane.timers,
            reads,
        )
        process.wake_at, steps, done, commit_read, process.busy_until = ran
        lane.timers = timers
        if done:
            del reads[:done]
        if commit_read:
            plan = lane.commit
            assert plan is not None and plan.answer is not None, (process.name, lane)
            plan.read = True
        self.lazy_steps += steps
        return True

    def _plane_sync(self, process: Process) -> None:
        """Take the application's state back from the process's ``LaneApp`` (if it has
        one): its partitions' positions, the streams' processed ends, the batch in hand,
        the turn, and the recorder's counts of what it processed."""
        native = process.native_lane
        if native is None:
            return
        process.native_lane = None
        app, held = native
        state, counts = app.take()
        self._native_app_store(process, held, state, counts)

    def _plane_heartbeat_arrives(self, process: Process, lane: _ProcessingLane, token: int) -> None:
        """A lane heartbeat reaches the coordinator: taken quietly, its answer is scheduled
        for the process to read and the next heartbeat's arrival is queued; otherwise the
        process leaves the lane and the heartbeat arrives as a real request."""
        if process.plane is not lane or lane.hb_token != token:
            return  # stale
        now = self.now
        coordinator = self.coordinator
        if coordinator is None or not coordinator.quiet_heartbeat(
            self.group_id, lane.member_id, lane.generation, lane.instance_id, now
        ):
            request = self._plane_leave(process, arriving=True)
            assert request is not None
            self._at_coordinator(process, request)
            return
        recorder = self.recorder
        recorder.requests += 1
        recorder.heartbeats += 1
        self.plane_heartbeats += 1
        answered = self._plane_answer(lane, heartbeat=True)
        sent = lane.next_sent + self._heartbeat_interval_ms
        assert answered < sent, (process.name, answered, sent)
        self._plane_queue_heartbeat(process, lane, sent)
        if self._coordinator_wake is None:
            # (a refreshed session ends later than before: a queued tick stays the first)
            self._schedule_coordinator()

    def _plane_answer(self, lane: _ProcessingLane, *, heartbeat: bool) -> int:
        """The coordinator answers a lane request now: the answer's arrival at the member,
        in order on the connection (``_down_arrival``); queued for the lane to read."""
        arrival = max(self.now + self._latency_ms, lane.down_last_ms)  # type: ignore[operator]
        lane.down_last_ms = arrival
        lane.down_seq += 1
        answered = math.ceil(arrival)
        lane.reads.append((answered, lane.down_seq, heartbeat))
        return answered

    def _plane_check(self, process: Process, lane: _ProcessingLane, token: int) -> None:
        """The auto-commit falls due: the first poll at or after now commits what was
        consumed (or only moves the timer when nothing was). That poll is the process's
        next step if it waits for a record (or the next answer's read, if that comes first),
        or the end of the batch in hand: decided now, the commit's arrival queued. An
        answer not yet scheduled could be read first; the check then waits for the
        request's arrival."""
        if process.plane is not lane or lane.check_token != token:
            return  # stale
        self._plane_catch_up(process, keep=True)
        self._plane_commit_passed(process, lane)
        key: tuple[int, int, int]
        reads = lane.reads
        busy_until = process.busy_until
        if busy_until is not None:
            # (answers read before the batch's end are read inside it: no poll)
            key = (busy_until, _WAKE, 0)
            for read in reads:
                if read[0] >= busy_until:
                    if read[0] == busy_until:
                        key = (busy_until, _ANSWER, read[1])
                    break
        else:
            at = process.wake_at
            assert at is not None
            if reads and reads[0][0] <= at:
                key = (reads[0][0], _ANSWER, reads[0][1])
            else:
                key = (at, _WAKE, 0)
        at = key[0]
        # a request on its way whose answer might be read by then
        pending: int | None = None
        if lane.next_sent < at and lane.next_arrival <= at:
            pending = lane.next_arrival
        plan = lane.commit
        if (
            plan is not None
            and plan.offsets is not None
            and plan.answer is None
            and plan.arrival <= at
        ):
            pending = plan.arrival if pending is None else min(pending, plan.arrival)
        if pending is not None:
            assert pending > self.now, (process.name, pending, lane)
            self._plane_queue_check(process, lane, pending)
            return
        offsets = self._uncommitted(process)
        old = lane.commit
        assert old is None or (old.applied and (old.offsets is None or old.read)), (
            process.name,
            old,
        )
        plan = lane.commit = _CommitPlan(
            key=key, offsets=offsets or None, poll_before=lane.last_poll
        )
        if offsets:
            plan.arrival = math.ceil(at + self._latency_ms)  # type: ignore[operator]
            if lane.hb_sent is None and lane.next_sent == at:
                # the heartbeat due at the same poll is sent after the commit
                # (poll_idle_commit): the commit takes its place on the connection
                plan.up_seq = lane.next_up_seq
                self._plane_queue_heartbeat(process, lane, at)
            else:
                lane.up_seq += 1
                plan.up_seq = lane.up_seq
            lane.commit_token += 1
            heapq.heappush(
                self._queue,
                (
                    plan.arrival,
                    _REQUEST,
                    process.key,
                    plan.up_seq,
                    next(self._seq),
                    self._plane_commit_arrives,
                    (process, lane, lane.commit_token),
                ),
            )
        self._plane_queue_check(process, lane, at + self._auto_commit_interval_ms)

    @staticmethod
    def _uncommitted(process: Process) -> dict[TopicPartition, int]:
        """The positions an auto-commit of the process commits now: those that differ from
        the offsets it last committed, in the order it holds its partitions."""
        committed = process.committed_positions
        native = process.native_lane
        if native is None:
            return {
                tp: o.position
                for tp, o in process.owned.items()
                if o.position is not None and committed.get(tp) != o.position
            }
        # (the positions of the partitions the application processes are in the LaneApp;
        # the others' stay None until OffsetFetch answers)
        offsets = {}
        for (tp, o), position in zip(process.owned.items(), native[0].positions(), strict=True):
            if not o.active:
                if o.position is None:
                    continue
                position = o.position
            if committed.get(tp) != position:
                offsets[tp] = position
        return offsets

    def _plane_commit_passed(self, process: Process, lane: _ProcessingLane) -> None:
        """The step of the planned auto-commit came before the current event: its effects
        on the process (the timer, what it committed) are committed."""
        plan = lane.commit
        if plan is None or plan.applied:
            return
        event = self._event
        if (plan.key[0], plan.key[1], process.key, plan.key[2]) >= (
            event[0],
            event[1],
            event[2],
            event[3],
        ):
            return
        plan.applied = True
        at = plan.key[0]
        process.next_auto_commit_ms = at + self._auto_commit_interval_ms
        if plan.offsets is not None:
            process.committed_positions.update(plan.offsets)
            lane.last_commit_send = at

    def _plane_commit_arrives(self, process: Process, lane: _ProcessingLane, token: int) -> None:
        """A lane auto-commit reaches the coordinator: taken quietly
        (``SyncShell.quiet_commit_offsets``: the offsets stored), its answer is scheduled
        for the process to read; otherwise the process leaves the lane and the commit
        arrives as a real request."""
        if process.plane is not lane or lane.commit_token != token:
            return  # stale
        plan = lane.commit
        assert plan is not None and plan.offsets is not None
        taken = None
        if self.coordinator is not None:
            like = lane.commit_like
            if like is None:
                # what the machine sends, made once per stay (only the offsets change)
                like = lane.commit_like = process.machine.quiet_commit_request(plan.offsets, None)
            taken = self._shell.quiet_commit_offsets(like, plan.offsets, self.now)
        if taken is None:
            leaving = self._plane_leave(process, arriving=True)
            assert leaving is not None
            self._at_coordinator(process, leaving)
            return
        self.recorder.requests += 1
        self.quiet_commits += 1
        self.plane_commits += 1
        answered = self._plane_answer(lane, heartbeat=False)
        plan.answer = (answered, lane.down_seq, taken)
        self._schedule_coordinator()
        if not taken:
            # an answer with errors is no quiet step: it is read as the eager engine reads it
            self._plane_leave(process)

    def _plane_leave(self, process: Process, *, arriving: bool = False) -> AnyRequest | None:
        """Take the process out of the processing lane at the current event: its machine,
        connection, queued events and wake-up become what the eager engine has before this
        event. The machine is told of the last heartbeat answered in the lane, then sends
        for real what is still out, in the order it was sent (each after the poll before
        it), then hears of the last poll. ``arriving``: the event is the arrival of a lane
        request the coordinator did not take quietly; it is returned, to arrive for real."""
        lane = process.plane
        assert lane is not None
        self._plane_catch_up(process)
        self._plane_commit_passed(process, lane)
        process.plane = None
        machine, pkey = process.machine, process.key
        latency = self._latency_ms
        assert latency is not None
        plan = lane.commit
        commit_out = (
            plan is not None and plan.applied and plan.offsets is not None and not plan.read
        )
        hb_sent = lane.hb_sent
        # what is still out, in the order it was sent (a commit before the heartbeat of the
        # same poll), and the application's last poll before the first of it
        out: list[tuple[int, int]] = []
        if commit_out:
            assert plan is not None
            out.append((plan.key[0], 0))
        if hb_sent is not None:
            out.append((hb_sent, 1))
        out.sort()
        if not out:
            first_poll = lane.last_poll
        elif out[0][1] == 0:
            assert plan is not None
            first_poll = plan.poll_before
        else:
            first_poll = lane.hb_poll_before
        sent: list[AnyRequest] = []
        if lane.told_sent is not None:
            told = machine.quiet_heartbeat_answered(
                lane.told_sent, lane.told_answered, last_poll_ms=first_poll
            )
            assert told, (process.name, lane)
        elif first_poll > machine.last_poll_ms:
            assert machine.poll_idle(first_poll, sent) is not None and not sent, (process.name,)
        commit_request: OffsetCommitRequest | None = None
        hb_request: HeartbeatRequest | None = None
        for at, kind in out:
            if kind == 0:  # the commit, from its poll (with the heartbeat of that poll)
                assert plan is not None and plan.offsets is not None
                asked = machine.poll_idle_commit(plan.offsets, at, sent)
                assert asked is not None, (process.name, plan)
                commit_request = cast(OffsetCommitRequest, sent.pop(0))
                if sent:
                    assert hb_sent == at, (process.name, sent, lane)
                    hb_request = cast(HeartbeatRequest, sent.pop())
            elif hb_request is None:  # the heartbeat, from its poll or inside a batch
                if lane.hb_sent_poll:
                    assert machine.poll_idle(at, sent) is not None and len(sent) == 1
                    hb_request = cast(HeartbeatRequest, sent.pop())
                else:
                    if lane.hb_poll_before > machine.last_poll_ms:
                        assert machine.poll_idle(lane.hb_poll_before, sent) is not None
                        assert not sent
                    requests = machine.next_requests(at)
                    assert len(requests) == 1, (process.name, requests)
                    hb_request = cast(HeartbeatRequest, requests[0])
        if lane.last_poll > machine.last_poll_ms:
            assert machine.poll_idle(lane.last_poll, sent) is not None and not sent
        assert machine.last_poll_ms == lane.last_poll, (process.name, machine.last_poll_ms, lane)
        assert machine.heartbeat_due_ms == lane.hb_due, (process.name, lane)
        # the connection
        process.up_seq, process.down_seq = lane.up_seq, lane.down_seq
        process.down_last_ms = lane.down_last_ms
        for send in (lane.last_hb_send, lane.last_commit_send):
            if send is not None and send + latency > process.up_last_ms:
                process.up_last_ms = send + latency
        # what is still out: its arrival, or its answer, queued at its key
        arrived: AnyRequest | None = None
        if hb_request is not None:
            answer: tuple[int, int, AnyResponse] | None = None
            if lane.next_sent != hb_sent:  # it arrived: its answer is to be read
                at, down_seq, _ = next(r for r in lane.reads if r[2])
                response = HeartbeatResponse(
                    version=hb_request.version, correlation=hb_request.correlation
                )
                answer = (at, down_seq, response)
            if self._plane_out(
                process, hb_request, lane.next_arrival, lane.next_up_seq, answer, arriving
            ):
                arrived = hb_request
        if commit_request is not None:
            assert plan is not None
            answer = None
            if plan.answer is not None:
                at, down_seq, taken = plan.answer
                answer = (at, down_seq, quiet_commit_answer(commit_request, taken))
            if self._plane_out(
                process, commit_request, plan.arrival, plan.up_seq, answer, arriving
            ):
                arrived = commit_request
        assert arrived is not None or not arriving, (process.name, lane)
        # the application: its next step queued, as after any lazy steps
        self._leave_lazy(process)
        process.held_wake = process.unqueued_wake = None
        wake = process.wake_at
        if wake is not None:
            assert wake >= self.now, (process.name, wake, self.now)
            heapq.heappush(
                self._queue, (wake, _WAKE, pkey, 0, next(self._seq), self._wake, (process, wake))
            )
        return arrived

    def _plane_out(
        self,
        process: Process,
        request: AnyRequest,
        arrival: int,
        up_seq: int,
        answer: tuple[int, int, AnyResponse] | None,
        arriving: bool,
    ) -> bool:
        """A request the lane sent and the eager engine has out at the current event,
        sent for real now: on its way (queued at its arrival's key; ``True`` if the event
        is that arrival, ``arriving``) or, ``answer`` (its arrival at the member, its
        place, the response), answered and its answer queued at its key."""
        process.outstanding[request.correlation] = request
        if answer is not None:
            self._push_answer(process, answer[2], answer[0], answer[1])
            return False
        recorder = self.recorder
        recorder.requests += 1  # (counted at its arrival in the lane)
        if type(request) is HeartbeatRequest:
            recorder.heartbeats += 1
        self._routes[request.correlation] = (process, request)
        event = self._event
        if arriving and (event[0], event[1], event[2], event[3]) == (
            arrival,
            _REQUEST,
            process.key,
            up_seq,
        ):
            return True
        self._push_request(process, request, arrival, up_seq)
        return False

    def _push_request(self, process: Process, request: AnyRequest, at: int, up_seq: int) -> None:
        heapq.heappush(
            self._queue,
            (
                at,
                _REQUEST,
                process.key,
                up_seq,
                next(self._seq),
                self._at_coordinator,
                (process, request),
            ),
        )

    def _push_answer(self, process: Process, response: AnyResponse, at: int, down_seq: int) -> None:
        heapq.heappush(
            self._queue,
            (
                at,
                _ANSWER,
                process.key,
                down_seq,
                next(self._seq),
                self._at_member,
                (process, response),
            ),
        )

    def _step(self, process: Process) -> None:
        """Bring one process up to ``now``: finish its batch, poll, send what is due, start
        the next batch, and schedule its next wake-up."""
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        if not process.alive or process.paused_until is not None:
            return
        self._step_process(process)
        if self.checker is not None:
            self.checker.after_step(self.now, self.processes.values(), self._group_members())

    def _group_members(self) -> frozenset[str]:
        coordinator = self.coordinator
        snapshot = None if coordinator is None else coordinator.snapshot(self.group_id)
        if snapshot is None:
            return frozenset()
        return frozenset(m.member_id for m in snapshot.members)

    def _step_process(self, process: Process) -> None:
        now = self.now
        machine = process.machine
        busy_until = process.busy_until
        if busy_until is not None and now >= busy_until:
            self._finish_batch(process)
            busy_until = None
        if (
            busy_until is None
            and not process.closing
            and not process.close_requested
            and not process.buffered
            and not process.fetches
            and not process.poll_expired_seen
            and process.cut_until is None
            and not (
                self._auto_commit
                and now >= process.next_auto_commit_ms
                and not self._auto_commit_idle(process)
            )
        ):
            # The application polls and the machine has nothing to do but note it and
            # perhaps heartbeat (the usual case): what the full path below would do,
            # without its calls.
            sent = self._sent
            deadline = machine.poll_idle(now, sent)
            if deadline is not None:
                hold_until = None
                if sent:
                    arrival_ms = self._send(process, sent.pop())
                    if self.thread:  # its answer is read at once (a pause steps on resume)
                        hold_until = arrival_ms
                # the batch's end, or the next record, or the machine's deadline
                at = self._poll_records(process) if self._rate > 0 else None
                if at is None or deadline < at:
                    at = deadline
                if self._lazy:
                    if self._catching_up:  # a lazy step: the next one is lazy too
                        assert not sent and process.wake_at is None and at > now
                        process.wake_at = at
                        return
                    if self._wake_replaceable(process, at, now) and self._go_lazy(
                        process, at, deadline
                    ):
                        return
                self._set_wake(process, at, hold_until)
                return
        assert not self._catching_up, "a lazy step that is not an idle poll"
        closing = process.closing
        if process.close_requested and not closing and busy_until is None:
            self._close_now(process)
            closing = True
        in_poll = busy_until is None and not closing
        quick_commit = False
        if (
            in_poll
            and self._quiet_heartbeats  # (lazy=False: the reference keeps the full path)
            and not process.buffered
            and not process.fetches
            and self._auto_commit
            and now >= process.next_auto_commit_ms
            and not process.poll_expired_seen
            and process.cut_until is None
        ):
            # the auto-commit of a stable, idle member (the usual reason a poll takes this
            # path): poll(), commit() and next_requests() in one machine call
            quick_commit = self._quick_auto_commit(process)
        if in_poll and not quick_commit:
            if process.buffered:
                self._read_buffered(process)
                if not process.alive:
                    return
            machine.poll(now)
            if machine.delivery_due:
                self._deliver(process)
            if process.fetches:
                self._check_fetches(process)
            if self._auto_commit and now >= process.next_auto_commit_ms:
                process.next_auto_commit_ms = now + self._auto_commit_interval_ms
                self._commit_positions(process, only_changed=True)
        io = self.thread or in_poll or closing
        if io and not quick_commit:
            self._network(process)
            # answers read while in poll() may queue listener calls: poll() runs them now
            if in_poll and machine.has_callbacks:
                self._deliver(process)
                self._check_fetches(process)
                self._network(process)
        if (
            machine.poll_expired
            or process.poll_expired_seen
            or (machine.state is MemberState.FATAL)
        ):
            self._watch_machine(process)
        if closing:
            if machine.done or now >= process.close_deadline_ms or machine.fatal_error:
                self._stop(process)
                return
        elif in_poll and process.alive and self._rate > 0:
            self._start_batch(process)
        # the next wake-up: the batch's end, the machine's next deadline, the next record
        busy_until = process.busy_until
        at = busy_until
        if io or self.thread:
            deadline = machine.next_deadline()
            if deadline is not None and (at is None or deadline < at):
                at = deadline
        if busy_until is None and not closing:
            arrival = self._next_arrival(process) if self._rate > 0 else None
            if arrival is not None and (at is None or arrival < at):
                at = arrival
        if closing and (at is None or process.close_deadline_ms < at):
            at = process.close_deadline_ms
        elif (
            self._lazy
            and in_poll
            and at is not None
            and at > now
            and deadline is not None
            and process.alive
            and not process.close_requested
            and not process.buffered
            and not process.fetches
            and not process.poll_expired_seen
            and process.cut_until is None
            and process.paused_until is None
            and not machine.poll_idle_blocked()
            and self._wake_replaceable(process, at, now)
            and self._go_lazy(process, at, deadline)
        ):
            # a step that sent a commit (or read an answer) and left the machine idle and
            # stable: the application steps after it are lazy, as after a quick step
            # (``next_deadline`` is then what ``poll_idle`` would return)
            return
        self._set_wake(process, at)

    def _quick_auto_commit(self, process: Process) -> bool:
        """The auto-commit falls due in a poll of a machine that is stable and idle:
        ``MemberMachine.poll_idle_commit`` polls, commits what was consumed and sends it
        (and a heartbeat if one is due), as ``poll``, ``_commit_positions`` and
        ``_network`` would; ``False`` (nothing done) when it declines."""
        offsets = self._uncommitted(process)
        if not offsets:
            return False
        now, sent = self.now, self._sent
        if process.machine.poll_idle_commit(offsets, now, sent) is None:
            return False
        process.next_auto_commit_ms = now + self._auto_commit_interval_ms
        process.committed_positions.update(offsets)
        self.quick_commits += 1
        for request in sent:
            self._send(process, request)
        sent.clear()
        return True

    def _watch_machine(self, process: Process) -> None:
        machine = process.machine
        if machine.poll_expired:
            if not process.poll_expired_seen:
                process.poll_expired_seen = True
                if self.thread:
                    self.recorder.members_expired_poll += 1
                self.recorder.event(self.now, "poll_timeout", process.name)
        else:
            process.poll_expired_seen = False
        if machine.state is MemberState.FATAL and process.alive and not process.closing:
            self.recorder.event(
                self.now, "fatal_error", process.name, detail=str(machine.fatal_error)
            )
            self._apply_batch(process, until_ms=self.now)
            process.alive = False
            self._release_all(process)

    # ------------------------------------------------------------------ members: network

    def _network(self, process: Process) -> None:
        machine = process.machine
        if machine.coordinator_lookup_due(self.now) and not process.lookup_in_flight:
            process.lookup_in_flight = True
            rtt = process.sample_latency_ms() + process.sample_latency_ms()
            self._push(
                math.ceil(self.now + rtt), _LOOKUP, process.key, 0, self._lookup_done, (process,)
            )
        requests = machine.next_requests(self.now)
        if not requests:
            return
        for request in requests:
            self._send(process, request)

    def _send(self, process: Process, request: AnyRequest) -> int | None:
        """One request leaves the member: it reaches the coordinator one latency later, in
        order on the connection (a cut connection fails it at once: ``None``); return when
        it arrives."""
        recorder = self.recorder
        recorder.requests += 1
        if type(request) is HeartbeatRequest:
            recorder.heartbeats += 1
        elif isinstance(request, JoinGroupRequest):
            recorder.event(
                self.now,
                "join_sent",
                process.name,
                generation=process.machine.generation,
                detail=request.reason,
            )
        if process.cut_until is not None:
            process.machine.request_failed(request, NetworkException, self.now)
            return None
        arrival = max(self.now + process.sample_latency_ms(), process.up_last_ms)
        process.up_last_ms = arrival
        process.up_seq += 1
        process.outstanding[request.correlation] = request
        self._routes[request.correlation] = (process, request)
        at = math.ceil(arrival)
        if at > self.now:  # _push's key, inline
            heapq.heappush(
                self._queue,
                (
                    at,
                    _REQUEST,
                    process.key,
                    process.up_seq,
                    next(self._seq),
                    self._at_coordinator,
                    (process, request),
                ),
            )
        else:
            self._push(
                at, _REQUEST, process.key, process.up_seq, self._at_coordinator, (process, request)
            )
        return at

    def _lookup_done(self, process: Process) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        process.lookup_in_flight = False
        if not process.alive:
            return
        if process.paused_until is not None:
            return  # it looks again after the pause
        machine = process.machine
        if self.coordinator is not None and process.cut_until is None:
            machine.coordinator_found(self.now)
        else:
            machine.coordinator_lookup_failed(self.now)
        self._step(process)

    def _at_member(self, process: Process, response: AnyResponse) -> None:
        if process.plane is not None:
            self._touch(process)
        if process.lazy_until is not None:
            # (_unlazy without queuing the next wake-up: the step below usually wants the
            # same one and goes lazy again from it; queued afterwards if it is still wanted)
            self._catch_up(process)
            self._leave_lazy(process)
            at = process.wake_at
            if at is not None:
                assert at >= self.now
                if at > self.now:
                    process.unqueued_wake = at
                else:  # queued before this millisecond in the eager run (as _unlazy does)
                    heapq.heappush(
                        self._queue,
                        (at, _WAKE, process.key, 0, next(self._seq), self._wake, (process, at)),
                    )
            try:
                self._answer(process, response)
            finally:
                if process.unqueued_wake is not None:
                    self._queue_unqueued_wake(process)
            return
        if process.lane is not None:
            self._lane_leave(process)
        self._answer(process, response)

    def _queue_unqueued_wake(self, process: Process) -> None:
        """The answer's step is over: the wake-up its arrival left unqueued is queued if the
        process still wants it (not lazy from it, not superseded by an earlier one)."""
        at, process.unqueued_wake = process.unqueued_wake, None
        if process.lazy_until is not None:
            self.lazy_answers += 1
        elif process.wake_at == at and process.held_wake != at:
            assert at is not None
            self._push(at, _WAKE, process.key, 0, self._wake, (process, at))

    def _answer(self, process: Process, response: AnyResponse) -> None:
        if not process.alive or response.correlation not in process.outstanding:
            return  # dead, or the request was already failed (cut, failover)
        if process.paused_until is not None or (
            not self.thread and process.busy_until is not None and not process.closing
        ):
            process.buffered.append(response)
            return
        del process.outstanding[response.correlation]
        process.machine.receive(response, self.now)
        self._step(process)
        if self._lane_ok and type(response) is HeartbeatResponse and response.error is None:
            self._lane_enter(process)

    def _read_buffered(self, process: Process) -> None:
        responses, process.buffered = process.buffered, []
        for response in responses:
            if process.outstanding.pop(response.correlation, None) is not None:
                process.machine.receive(response, self.now)

    def _failed_at_member(
        self, process: Process, request: AnyRequest, error: type[KafkaError]
    ) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        if not process.alive or process.outstanding.pop(request.correlation, None) is None:
            return
        process.machine.request_failed(request, error, self.now)
        if process.paused_until is None:
            self._step(process)

    def _fail_outstanding(self, process: Process, error: type[KafkaError]) -> None:
        outstanding, process.outstanding = process.outstanding, {}
        process.buffered.clear()
        for correlation, request in outstanding.items():
            self._routes.pop(correlation, None)
            process.machine.request_failed(request, error, self.now)

    # ------------------------------------------------------------------ members: application

    def _deliver(self, process: Process) -> None:
        """Run the queued listener calls, as poll() does on the application's thread."""
        machine = process.machine
        calls = machine.take_callbacks()
        if not calls:
            return
        recorder, now, name = self.recorder, self.now, process.name
        for call in calls:
            # sets iterate in hash order, which differs between processes (str hashing is
            # salted): sorted, so the same seed gives the same run anywhere
            partitions = sorted(call.partitions)
            if call.kind is CallbackKind.ASSIGNED:
                if self.checker is not None:
                    self.checker.before_assigned(
                        now,
                        process,
                        call.partitions,
                        self.processes.values(),
                        self._group_members(),
                    )
                fresh: dict[TopicPartition, _Owned] = {}
                for tp in partitions:
                    if tp not in process.owned:
                        fresh[tp] = process.owned[tp] = _Owned()
                recorder.on_assigned(now, name, call.generation, call.partitions)
                if fresh:
                    process.fetches.append((machine.fetch_committed(fresh, now), fresh))
                continue
            revoked = call.kind is CallbackKind.REVOKED
            offsets: dict[TopicPartition, int] = {}
            for tp in partitions:
                owned = process.owned.pop(tp, None)
                if owned is None:
                    continue
                if owned.active:
                    owned.active = False
                    recorder.owner_stopped(tp, now)
                if revoked and owned.position is not None:
                    offsets[tp] = owned.position
            if revoked:
                recorder.on_revoked(
                    now,
                    name,
                    len(call.partitions),
                    call.generation,
                    rebalance=not (process.closing and self.scenario.group.static),
                )
                if self.scenario.consumer.commit_on_revoke and offsets:
                    machine.commit(offsets, now)
                    process.committed_positions.update(offsets)
            else:
                recorder.on_lost(now, name, len(call.partitions), call.generation)

    def _check_fetches(self, process: Process) -> None:
        if not process.fetches:
            return
        keep: list[tuple[FetchHandle, dict[TopicPartition, _Owned]]] = []
        for handle, wanted in process.fetches:
            if not handle.done:
                keep.append((handle, wanted))
                continue
            still = {tp: o for tp, o in wanted.items() if process.owned.get(tp) is o}
            if handle.error is not None:
                if still:  # ask again (the machine failed it: closed, fatal, ...)
                    if process.machine.state in (MemberState.FATAL, MemberState.CLOSED):
                        continue
                    keep.append((process.machine.fetch_committed(still, self.now), still))
                continue
            for tp, owned in still.items():
                committed = handle.offsets.get(tp, -1)
                if committed is None or committed < 0:
                    if self.scenario.consumer.auto_offset_reset == "earliest":
                        committed = 0
                    else:
                        committed = self.streams[tp].arrived(self.now)
                owned.position = committed
                process.committed_positions[tp] = committed
                owned.active = True
                self.recorder.owner_started(tp, self.now)
        process.fetches = keep

    def _auto_commit_idle(self, process: Process) -> bool:
        """An auto-commit falls due with nothing consumed since the last commit: it would
        send nothing, so only its timer moves (what the full path does)."""
        committed = process.committed_positions
        for tp, o in process.owned.items():
            if o.position is not None and committed.get(tp) != o.position:
                return False
        process.next_auto_commit_ms = self.now + self._auto_commit_interval_ms
        return True

    def _commit_positions(self, process: Process, *, only_changed: bool) -> None:
        """Commit what the application has consumed (Java's ``allConsumed()``); a commit with
        nothing new is skipped."""
        offsets = {
            tp: o.position
            for tp, o in process.owned.items()
            if o.position is not None
            and (not only_changed or process.committed_positions.get(tp) != o.position)
        }
        if not offsets or process.machine.state in (MemberState.FATAL, MemberState.CLOSED):
            return
        process.machine.commit(offsets, self.now)
        process.committed_positions.update(offsets)

    def _next_arrival(self, process: Process) -> int | None:
        best: int | None = None
        streams = self.streams
        ceil = math.ceil
        for tp, owned in process.owned.items():
            position = owned.position
            if position is None:
                continue
            # PartitionStream.next_arrival_ms(position), inline (the same arithmetic)
            stream = streams[tp]
            rate = stream.rate_per_s
            if rate <= 0:
                continue
            t = ceil(stream.start_ms + (position + 1) * 1000.0 / rate - 1e-9)
            if best is None or t < best:
                best = t
        return best

    def _poll_records(self, process: Process) -> int | None:
        """``_start_batch``, then the batch's end or, with no batch, ``_next_arrival``; in
        one pass over the partitions when no record is waiting (the usual lazy step)."""
        now = self.now
        streams = self.streams
        floor, ceil = math.floor, math.ceil
        best: int | None = None
        any_active = False
        for tp, o in process.owned.items():
            if not o.active:
                continue
            any_active = True
            position = o.position
            assert position is not None
            stream = streams[tp]
            rate = stream.rate_per_s
            if rate <= 0:
                continue
            start = stream.start_ms
            # PartitionStream.arrived(now) > position, inline (the same arithmetic)
            if now > start and floor((now - start) * rate / 1000.0 + 1e-9) > position:
                self._start_batch(process)
                return process.busy_until
            # PartitionStream.next_arrival_ms(position), inline (the same arithmetic)
            t = ceil(start + (position + 1) * 1000.0 / rate - 1e-9)
            if best is None or t < best:
                best = t
        if any_active:
            process.rr += 1  # the turn moves on with every poll that has partitions
        return best

    def _start_batch(self, process: Process) -> None:
        """poll() returns up to max.poll.records records, partition after partition in
        turn; the application processes them one by one. (Not called when no records are
        ever produced: every poll would return nothing.)"""
        now = self.now
        streams = self.streams
        floor = math.floor
        # the active partitions and how many records wait in each
        # (PartitionStream.arrived(now) - position, inline: the same arithmetic)
        active: list[tuple[TopicPartition, _Owned, int]] = []
        any_available = False
        for tp, o in process.owned.items():
            if o.active:
                position = o.position
                assert position is not None
                stream = streams[tp]
                rate = stream.rate_per_s
                available = 0
                if rate > 0 and now > stream.start_ms:
                    available = floor((now - stream.start_ms) * rate / 1000.0 + 1e-9) - position
                    if available > 0:
                        any_available = True
                active.append((tp, o, available))
        if not any_available:
            if active:
                process.rr += 1  # the turn moves on with every poll that has partitions
            return
        budget = self._max_poll_records
        first = process.rr % len(active)
        process.rr += 1
        sample = process.sample_record_ms
        t = float(now)
        segments: list[_Segment] = []
        for tp, owned, available in active[first:] + active[:first] if first else active:
            if available <= 0:
                continue
            position = owned.position
            assert position is not None
            n = available if available < budget else budget
            if n == 1:
                t += sample()
                completions = [t]
            else:
                completions = []
                append = completions.append
                for _ in range(n):
                    t += sample()
                    append(t)
            segments.append(_Segment(tp, position, completions))
            owned.position = position + n
            budget -= n
            if budget == 0:
                break
        process.batch = segments
        # the clock's resolution is 1 ms: a poll loop turn takes at least that
        end = math.ceil(t)
        process.busy_until = end if end > now else now + 1

    def _finish_batch(self, process: Process) -> None:
        self._apply_batch(process, until_ms=None)
        process.busy_until = None
        if not self.scenario.consumer.enable_auto_commit:
            self._commit_positions(process, only_changed=True)

    def _apply_batch(self, process: Process, *, until_ms: int | None) -> None:
        """Count the batch's records as processed (those done by ``until_ms`` only)."""
        segments, process.batch = process.batch, []
        recorder, streams = self.recorder, self.streams
        owners = self._lazy_owner
        if owners and not self._catching_up:
            # another process's lazy batches of these partitions that come first
            for segment in segments:
                other = owners.get(segment.tp)
                if other is not None and other is not process:
                    self._catch_up(other)
        for segment in segments:
            completions = segment.completions_ms
            if until_ms is not None:
                completions = [c for c in completions if c <= until_ms]
            recorder.processed(streams[segment.tp], segment.first_offset, completions)
        if until_ms is not None:
            process.busy_until = None

    # ------------------------------------------------------------------ metadata

    def _push_metadata(self, process: Process, at: int) -> None:
        """Queue the process's next metadata refresh at ``at``."""
        process.metadata_at = at
        process.metadata_token += 1
        self._push(
            at, _METADATA, process.key, 0, self._refresh_metadata, (process, process.metadata_token)
        )

    def _refresh_metadata(self, process: Process, token: int) -> None:
        if token != process.metadata_token:
            return  # the LaneSet took it (the member entered the lane since)
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        if not process.alive:
            return
        self._push_metadata(process, self.now + self.scenario.consumer.metadata_max_age_ms)
        if process.paused_until is not None or process.closing:
            return
        process.machine.set_metadata(self.partitions_per_topic, self.now)
        process.metadata_epoch = self._metadata_epoch
        if self.thread or process.busy_until is None:
            self._step(process)

    def _add_partitions(self, counts: dict[str, int], rate: float) -> None:
        added: list[TopicPartition] = []
        for topic, count in counts.items():
            for p in range(count):
                tp = TopicPartition(topic, p)
                if tp not in self.streams:
                    self.streams[tp] = PartitionStream(self.now, rate)
                    added.append(tp)
        self.recorder.add_partitions(added, self.now)

    # ------------------------------------------------------------------ timeline

    def _targets(self, event: TimelineEvent) -> list[Process]:
        running = sorted((p for p in self.processes.values() if p.running), key=lambda p: p.number)
        if event.members is None:
            return running[: event.count]
        by_number = {p.number: p for p in running}
        return [by_number[n] for n in event.members if n in by_number]

    def _timeline(self, index: int, event: TimelineEvent) -> None:
        action = event.action
        if action == "join":
            for _ in range(event.count):
                self._start_member(self._next_number)
        elif action == "crash":
            for process in self._targets(event):
                self._crash(process)
        elif action == "leave":
            for process in self._targets(event):
                self._request_close(process, None)
        elif action == "restart":
            self._rolling_restart(self._targets(event), round(event.downtime_s * 1000))
        elif action == "pause":
            for process in self._targets(event):
                self._pause(process, round(event.duration_s * 1000))
        elif action == "network_partition":
            for process in self._targets(event):
                self._cut(process, round(event.duration_s * 1000))
        elif action == "partitions":
            assert event.topic is not None
            self.partitions_per_topic[event.topic] = event.count
            self._metadata_epoch += 1
            if self._lanes is not None:
                self._lanes.metadata_epoch = self._metadata_epoch
            self._add_partitions({event.topic: event.count}, self._rate)
            self.recorder.event(
                self.now, "partitions_changed", topic=event.topic, partitions=event.count
            )
        elif action == "coordinator_failover":
            self._failover(round(event.downtime_s * 1000))

    def _rolling_restart(self, targets: list[Process], downtime_ms: int) -> None:
        if not targets:
            return
        first, rest = targets[0], targets[1:]

        def stopped(at_ms: int) -> None:
            self._push(
                at_ms + downtime_ms,
                _RESTART,
                first.number << _INCARNATION_BITS,
                0,
                self._restart_one,
                (first.number, rest, downtime_ms),
            )

        self._request_close(first, stopped)

    def _restart_one(self, number: int, rest: list[Process], downtime_ms: int) -> None:
        self._start_member(number)
        self._rolling_restart([p for p in rest if p.running], downtime_ms)

    def _pause(self, process: Process, duration_ms: int) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        if process.paused_until is not None:
            return
        now = self.now
        process.paused_until = now + duration_ms
        if process.busy_until is not None:
            # the batch in hand stops where it is and resumes after the pause
            process.busy_until += duration_ms
            for segment in process.batch:
                segment.completions_ms = [
                    c + duration_ms if c > now else c for c in segment.completions_ms
                ]
        for tp, owned in process.owned.items():
            if owned.active:
                self.recorder.owner_stopped(tp, now)
        self.recorder.event(now, "member_paused", process.name, duration_ms=duration_ms)
        self._push(now + duration_ms, _RESUME, process.key, 0, self._resume, (process,))

    def _resume(self, process: Process) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        process.paused_until = None
        if not process.alive:
            return
        for tp, owned in process.owned.items():
            if owned.active:
                self.recorder.owner_started(tp, self.now)
        self.recorder.event(self.now, "member_resumed", process.name)
        if self.thread or process.busy_until is None or process.closing:
            self._read_buffered(process)
        self._step(process)

    def _cut(self, process: Process, duration_ms: int) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        if process.cut_until is not None:
            return
        process.cut_until = self.now + duration_ms
        self.recorder.event(self.now, "network_partitioned", process.name, duration_ms=duration_ms)
        self._fail_outstanding(process, NetworkException)
        self._push(self.now + duration_ms, _HEAL, process.key, 0, self._heal, (process,))
        self._step(process)

    def _heal(self, process: Process) -> None:
        if process.lazy_until is not None or process.lane is not None:
            self._touch(process)
        process.cut_until = None
        if process.alive:
            self.recorder.event(self.now, "network_healed", process.name)
            self._step(process)

    def _failover(self, downtime_ms: int) -> None:
        if self.coordinator is None:
            return
        self.coordinator = None
        self._coordinator_wake = None
        self._routes.clear()
        self.recorder.event(self.now, "coordinator_down", duration_ms=downtime_ms)
        for process in list(self.processes.values()):
            if process.lazy_until is not None or process.lane is not None:
                self._touch(process)
            if process.alive:
                self._fail_outstanding(process, NotCoordinatorError)
        self._push(self.now + downtime_ms, _COORDINATOR_UP, 0, 0, self._coordinator_up, ())
        for process in list(self.processes.values()):
            if process.alive and process.paused_until is None:
                self._step(process)

    def _coordinator_up(self) -> None:
        self._start_coordinator()
        self.recorder.event(self.now, "coordinator_up")

    # ------------------------------------------------------------------ the end
