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
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from groupcoord.assignors import Assignor, CooperativeStickyAssignor
from groupcoord.assignors.base import RebalanceProtocol
from groupcoord.coordinator import (
    GroupCoordinator,
    GroupState,
    MemoryOffsetStore,
    SequentialMemberIds,
    SyncShell,
)
from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)
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

Progress = Callable[[int, int], None]


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


@dataclass(slots=True, eq=False)
class Process:
    """One incarnation of a member: its machine, its application, its connection."""

    name: str
    number: int
    machine: MemberMachine
    sample_record_ms: Callable[[], float]
    sample_latency_ms: Callable[[], float]
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
    wake_at: int | None = None
    #: ``wake_at`` when that wake-up is not queued yet: set only while the process waits
    #: for a heartbeat's answer, whose arrival steps it first (see ``Engine._set_wake``)
    held_wake: int | None = None
    up_last_ms: float = 0.0
    down_last_ms: float = 0.0
    next_auto_commit_ms: int = 0
    committed_positions: dict[TopicPartition, int] = field(default_factory=dict)
    rr: int = 0
    poll_expired_seen: bool = False

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
    ) -> None:
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
        self._queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        self._seq = itertools.count()
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
        rate = scenario.workload.records_per_second_per_partition
        self.streams: dict[TopicPartition, PartitionStream] = {}
        self._add_partitions(self.partitions_per_topic, rate)
        self._rate = rate
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
        for _ in range(self.scenario.group.members):
            self._start_member(self._next_number)
        for i, event in enumerate(self.scenario.timeline):
            self._push(event.at_ms, self._timeline, (i, event))
        queue, end = self._queue, self.end_ms
        progress, events = self.progress, 0
        while queue and queue[0][0] <= end:
            t, _, handler, args = heapq.heappop(queue)
            self.now = t
            handler(*args)
            events += 1
            if progress is not None and events & 0x3FFF == 0:
                progress(t, end)
        self.now = end
        for process in self.processes.values():
            if process.alive and process.busy_until is not None:
                self._apply_batch(process, until_ms=end)
        self.recorder.close(end, self.streams)
        if progress is not None:
            progress(end, end)
        return self.recorder

    def _push(self, t: int, handler: Callable[..., None], args: tuple[Any, ...]) -> None:
        heapq.heappush(self._queue, (t, next(self._seq), handler, args))

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
            self._push(deadline, self._coordinator_tick, (coordinator, deadline))

    def _coordinator_tick(self, coordinator: GroupCoordinator, at: int) -> None:
        if coordinator is not self.coordinator or self._coordinator_wake != at:
            return  # stale
        self._coordinator_wake = None
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
                answer_ms, self._failed_at_member, (process, request, CoordinatorNotAvailableError)
            )
            return
        self._route(self._shell.handle(request, self.now))
        if isinstance(request, SyncGroupRequest) and (
            coordinator.group_state(self.group_id) is GroupState.STABLE
        ):
            rows = self.recorder.rebalances
            if rows:
                self.recorder.on_stable(rows[-1].generation, self.now)
        self._schedule_coordinator()

    def _route(self, responses: list[AnyResponse]) -> None:
        for response in responses:
            entry = self._routes.pop(response.correlation, None)
            if entry is None:
                continue  # its connection is gone (failover)
            process = entry[0]
            answer_ms = self._down_arrival(process)
            if process.held_wake is not None:
                self._release_held_wake(process, answer_ms)
            heapq.heappush(
                self._queue, (answer_ms, next(self._seq), self._at_member, (process, response))
            )

    def _down_arrival(self, process: Process) -> int:
        arrival = max(self.now + process.sample_latency_ms(), process.down_last_ms)
        process.down_last_ms = arrival
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
        stream_seed = f"{self.seed}:{name}:{incarnation}"
        process = Process(
            name=name,
            number=number,
            machine=machine,
            sample_record_ms=self.scenario.workload.record_time_ms.sampler(
                random.Random(stream_seed + ":records")
            ),
            sample_latency_ms=self.scenario.network.latency_ms.sampler(
                random.Random(stream_seed + ":network")
            ),
        )
        process.up_last_ms = process.down_last_ms = self.now
        process.next_auto_commit_ms = self.now + self.scenario.consumer.auto_commit_interval_ms
        self.processes[name] = process
        self.recorder.event(self.now, "member_started", name, detail=f"incarnation {incarnation}")
        self._push(
            self.now + self.scenario.consumer.metadata_max_age_ms,
            self._refresh_metadata,
            (process,),
        )
        self._step(process)
        return process

    def _crash(self, process: Process) -> None:
        """The process dies: no LeaveGroup, nothing more sent or heard."""
        self._apply_batch(process, until_ms=self.now)
        process.alive = False
        self._release_all(process)
        process.outstanding.clear()
        self.recorder.event(self.now, "member_crashed", process.name)

    def _request_close(self, process: Process, on_stopped: Callable[[int], None] | None) -> None:
        """The application shuts down: it finishes the batch in hand, then closes."""
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
        if process.wake_at != at:
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
                heapq.heappush(self._queue, (at, next(self._seq), self._wake, (process, at)))
        elif process.held_wake is not None:
            self._queue_held_wake(process)

    def _queue_held_wake(self, process: Process) -> None:
        at, process.held_wake = process.held_wake, None
        assert at is not None and at == process.wake_at, (process.name, at, process.wake_at)
        heapq.heappush(self._queue, (at, next(self._seq), self._wake, (process, at)))

    def _release_held_wake(self, process: Process, answer_ms: int) -> None:
        """The answer to the heartbeat reaches the process at ``answer_ms``: a held wake-up
        due by then must be queued (a step at the answer decides about a later one)."""
        if process.held_wake is not None and process.held_wake <= answer_ms:
            self._queue_held_wake(process)

    def _step(self, process: Process) -> None:
        """Bring one process up to ``now``: finish its batch, poll, send what is due, start
        the next batch, and schedule its next wake-up."""
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
                if self._rate > 0:
                    self._start_batch(process)
                at = process.busy_until
                if at is None:
                    at = deadline
                    if self._rate > 0:
                        arrival = self._next_arrival(process)
                        if arrival is not None and arrival < at:
                            at = arrival
                elif deadline < at:
                    at = deadline
                self._set_wake(process, at, hold_until)
                return
        closing = process.closing
        if process.close_requested and not closing and busy_until is None:
            self._close_now(process)
            closing = True
        in_poll = busy_until is None and not closing
        if in_poll:
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
        if io:
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
        self._set_wake(process, at)

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
            self._push(math.ceil(self.now + rtt), self._lookup_done, (process,))
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
        process.outstanding[request.correlation] = request
        self._routes[request.correlation] = (process, request)
        at = math.ceil(arrival)
        heapq.heappush(self._queue, (at, next(self._seq), self._at_coordinator, (process, request)))
        return at

    def _lookup_done(self, process: Process) -> None:
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

    def _read_buffered(self, process: Process) -> None:
        responses, process.buffered = process.buffered, []
        for response in responses:
            if process.outstanding.pop(response.correlation, None) is not None:
                process.machine.receive(response, self.now)

    def _failed_at_member(
        self, process: Process, request: AnyRequest, error: type[KafkaError]
    ) -> None:
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

    def _start_batch(self, process: Process) -> None:
        """poll() returns up to max.poll.records records, partition after partition in
        turn; the application processes them one by one. (Not called when no records are
        ever produced: every poll would return nothing.)"""
        now = self.now
        streams = self.streams
        any_active = False
        any_available = False
        floor = math.floor
        for tp, o in process.owned.items():
            if o.active:
                any_active = True
                position = o.position
                assert position is not None
                # PartitionStream.arrived(now), inline (the same arithmetic)
                stream = streams[tp]
                rate = stream.rate_per_s
                if (
                    rate > 0
                    and now > stream.start_ms
                    and floor((now - stream.start_ms) * rate / 1000.0 + 1e-9) > position
                ):
                    any_available = True
                    break
        if not any_available:
            if any_active:
                process.rr += 1  # the turn moves on with every poll that has partitions
            return
        active = [(tp, o) for tp, o in process.owned.items() if o.active]
        budget = self._max_poll_records
        start = process.rr % len(active)
        process.rr += 1
        sample = process.sample_record_ms
        t = float(now)
        segments: list[_Segment] = []
        for tp, owned in active[start:] + active[:start]:
            position = owned.position
            assert position is not None
            available = streams[tp].arrived(now) - position
            if available <= 0:
                continue
            n = min(available, budget)
            completions: list[float] = []
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
        process.busy_until = max(math.ceil(t), now + 1)

    def _finish_batch(self, process: Process) -> None:
        self._apply_batch(process, until_ms=None)
        process.busy_until = None
        if not self.scenario.consumer.enable_auto_commit:
            self._commit_positions(process, only_changed=True)

    def _apply_batch(self, process: Process, *, until_ms: int | None) -> None:
        """Count the batch's records as processed (those done by ``until_ms`` only)."""
        segments, process.batch = process.batch, []
        recorder, streams = self.recorder, self.streams
        for segment in segments:
            completions = segment.completions_ms
            if until_ms is not None:
                completions = [c for c in completions if c <= until_ms]
            recorder.processed(streams[segment.tp], segment.first_offset, completions)
        if until_ms is not None:
            process.busy_until = None

    # ------------------------------------------------------------------ metadata

    def _refresh_metadata(self, process: Process) -> None:
        if not process.alive:
            return
        self._push(
            self.now + self.scenario.consumer.metadata_max_age_ms,
            self._refresh_metadata,
            (process,),
        )
        if process.paused_until is not None or process.closing:
            return
        process.machine.set_metadata(self.partitions_per_topic, self.now)
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
            self._push(at_ms + downtime_ms, self._restart_one, (first.number, rest, downtime_ms))

        self._request_close(first, stopped)

    def _restart_one(self, number: int, rest: list[Process], downtime_ms: int) -> None:
        self._start_member(number)
        self._rolling_restart([p for p in rest if p.running], downtime_ms)

    def _pause(self, process: Process, duration_ms: int) -> None:
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
        self._push(now + duration_ms, self._resume, (process,))

    def _resume(self, process: Process) -> None:
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
        if process.cut_until is not None:
            return
        process.cut_until = self.now + duration_ms
        self.recorder.event(self.now, "network_partitioned", process.name, duration_ms=duration_ms)
        self._fail_outstanding(process, NetworkException)
        self._push(self.now + duration_ms, self._heal, (process,))
        self._step(process)

    def _heal(self, process: Process) -> None:
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
            if process.alive:
                self._fail_outstanding(process, NotCoordinatorError)
        self._push(self.now + downtime_ms, self._coordinator_up, ())
        for process in list(self.processes.values()):
            if process.alive and process.paused_until is None:
                self._step(process)

    def _coordinator_up(self) -> None:
        self._start_coordinator()
        self.recorder.event(self.now, "coordinator_up")

    # ------------------------------------------------------------------ the end
