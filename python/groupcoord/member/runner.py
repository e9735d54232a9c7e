"""``GroupMember``: the sans-IO :class:`~groupcoord.member.machine.MemberMachine` driven over
real sockets, with Kafka's background heartbeat thread (KIP-62).

Two threads share one machine under one lock:

- the application thread calls :meth:`GroupMember.poll` / :meth:`~GroupMember.commit` /
  :meth:`~GroupMember.close`; listener callbacks run on it, inside those calls only;
- the heartbeat thread (daemon, ``groupcoord-heartbeat-<group>``) finds the coordinator,
  keeps topic metadata fresh, sends whatever the machine asks for when it asks
  (``next_requests`` at ``next_deadline``) and feeds responses back. It never runs
  application code, so heartbeats go on while the application is busy between polls and
  during rebalances; when the application stops polling for ``max.poll.interval.ms`` the
  machine notices from the times it is given and leaves the group.

The clock (``time.monotonic_ns() // 1_000_000``) is read here and nowhere in the machine.
"""

from __future__ import annotations

import collections
import enum
import logging
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, cast

from groupcoord.assignors.base import Assignor
from groupcoord.config import ConfigError
from groupcoord.coordinator.messages import JoinGroupRequest, Request, Response
from groupcoord.coordinator.output import CoordinatorRequest
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    GroupcoordError,
    KafkaError,
    NetworkException,
    RequestTimedOutError,
)
from groupcoord.member.config import ConsumerMemberConfig, MemberConfig
from groupcoord.member.connection import (
    DEFAULT_REQUEST_TIMEOUT_MS,
    BrokerConnection,
    KafkaClient,
    PendingResponse,
    RetryBackoff,
)
from groupcoord.member.consumer_machine import (
    CONSUMER_MEMBER_REQUEST_TYPES,
    ConsumerMemberMachine,
)
from groupcoord.member.handles import CommitHandle, FetchHandle
from groupcoord.member.listener import ListenerCall, RebalanceListener
from groupcoord.member.machine import MemberMachine
from groupcoord.member.requests import MEMBER_REQUEST_TYPES, version_for
from groupcoord.protocol.group_messages import (
    GROUP_API_VERSIONS,
    from_kio_response,
    prepare,
    to_kio_request,
)
from groupcoord.types import TopicPartition

__all__ = ["GroupMember", "MemberThreadError"]

log = logging.getLogger("groupcoord.member")

#: Kafka's ``metadata.max.age.ms`` default.
DEFAULT_METADATA_MAX_AGE_MS: Final = 300_000
#: Kafka's ``default.api.timeout.ms`` default: how long commit/committed block at most.
DEFAULT_API_TIMEOUT_MS: Final = 60_000
# Java gives JoinGroup the rebalance timeout plus this much for the network
# (ConsumerCoordinator's JOIN_GROUP_TIMEOUT_LAPSE).
_JOIN_GROUP_TIMEOUT_LAPSE_MS: Final = 5_000
# How long the heartbeat thread idles at least when it has nothing to send.
_MIN_IDLE_WAIT_MS: Final = 5


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class _Machine(Protocol):
    """What the runner drives: :class:`MemberMachine` (classic protocol) and
    :class:`ConsumerMemberMachine` (KIP-848) both have this surface."""

    @property
    def state(self) -> enum.Enum: ...
    @property
    def assignment(self) -> frozenset[TopicPartition]: ...
    @property
    def generation(self) -> int: ...
    @property
    def member_id(self) -> str: ...
    @property
    def settled(self) -> bool: ...
    @property
    def needs_metadata(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def fatal_error(self) -> GroupcoordError | None: ...
    @property
    def coordinator_known(self) -> bool: ...
    def poll(self, now_ms: int) -> None: ...
    def next_deadline(self) -> int | None: ...
    def take_callbacks(self, *, hold: bool = False) -> list[ListenerCall]: ...
    def callbacks_done(self) -> None: ...
    def commit(self, offsets: Mapping[TopicPartition, int], now_ms: int) -> CommitHandle: ...
    def fetch_committed(self, partitions: Iterable[TopicPartition], now_ms: int) -> FetchHandle: ...
    def close(self, now_ms: int) -> None: ...
    def coordinator_lookup_due(self, now_ms: int) -> bool: ...
    def coordinator_found(self, now_ms: int) -> None: ...
    def metadata_topics(self) -> frozenset[str]: ...
    def set_max_versions(self, caps: Mapping[int, int]) -> None: ...
    def set_metadata(self, partitions_per_topic: Mapping[str, int], now_ms: int) -> None: ...
    # requests and responses are the machine's own kinds; the runner only carries them
    def next_requests(self, now_ms: int) -> Sequence[Any]: ...
    def request_failed(self, request: Any, error: type[KafkaError], now_ms: int) -> None: ...
    def receive(self, response: Any, now_ms: int) -> None: ...


class MemberThreadError(GroupcoordError, RuntimeError):
    """The heartbeat thread died of an unexpected error; the member cannot go on."""


class GroupMember:
    """A Kafka consumer-group member (classic protocol) for any Kafka-compatible coordinator.

    ``poll()`` must be called at least every ``max_poll_interval_ms``; it drives rebalances
    and returns the current assignment. Listener callbacks run inside ``poll()``,
    ``commit()`` and ``close()`` on the calling thread. Use as a context manager, or call
    :meth:`close` (LeaveGroup unless static) when done.
    """

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        group_id: str,
        topics: Sequence[str],
        assignors: Sequence[Assignor] | None = None,
        session_timeout_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        max_poll_interval_ms: int = 300_000,
        group_instance_id: str | None = None,
        listener: RebalanceListener | None = None,
        client_id: str = "groupcoord",
        *,
        group_protocol: str = "classic",
        server_assignor: str | None = None,
        client_rack: str | None = None,
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        metadata_max_age_ms: int = DEFAULT_METADATA_MAX_AGE_MS,
    ) -> None:
        if group_protocol not in ("classic", "consumer"):
            raise ConfigError(
                f"group_protocol must be 'classic' or 'consumer', got {group_protocol!r}"
            )
        self.group_protocol = group_protocol
        if listener is not None and not isinstance(listener, RebalanceListener):
            raise TypeError("listener must be a groupcoord.member.RebalanceListener")
        for name, value in (
            ("request_timeout_ms", request_timeout_ms),
            ("metadata_max_age_ms", metadata_max_age_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        versions = {key: hi for key, (_lo, hi) in GROUP_API_VERSIONS.items()}
        self.config: MemberConfig | ConsumerMemberConfig
        self._machine: _Machine
        if group_protocol == "consumer":
            # Kafka refuses these with group.protocol=consumer: the coordinator assigns and
            # decides the session timeout and heartbeat interval (KIP-848)
            classic_only: tuple[tuple[str, object], ...] = (
                ("partition.assignment.strategy (assignors)", assignors),
                ("session.timeout.ms", session_timeout_ms),
                ("heartbeat.interval.ms", heartbeat_interval_ms),
            )
            for setting, given in classic_only:
                if given is not None:
                    raise ConfigError(
                        f"{setting} is not supported with group_protocol='consumer': the "
                        "coordinator decides it (use server_assignor to name its assignor)"
                    )
            consumer_config = ConsumerMemberConfig(
                group_id=group_id,
                topics=topics,
                max_poll_interval_ms=max_poll_interval_ms,
                group_instance_id=group_instance_id,
                server_assignor=server_assignor,
                rack_id=client_rack,
                client_id=client_id,
                retry_backoff_ms=retry_backoff_ms,
                max_versions=versions,
            )
            self.config = consumer_config
            self._machine = ConsumerMemberMachine(consumer_config)
            self._request_types = CONSUMER_MEMBER_REQUEST_TYPES
        else:
            consumer_only: tuple[tuple[str, object], ...] = (
                ("server_assignor", server_assignor),
                ("client_rack", client_rack),
            )
            for setting, given in consumer_only:
                if given is not None:
                    raise ConfigError(f"{setting} needs group_protocol='consumer'")
            if assignors is None:
                from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor

                # Kafka's default partition.assignment.strategy (3.x): range first, then
                # cooperative-sticky, so that a later bounce can drop range (KIP-429).
                assignors = [RangeAssignor(), CooperativeStickyAssignor()]
            classic_config = MemberConfig(
                group_id=group_id,
                topics=topics,
                assignors=assignors,
                session_timeout_ms=45_000 if session_timeout_ms is None else session_timeout_ms,
                heartbeat_interval_ms=(
                    3_000 if heartbeat_interval_ms is None else heartbeat_interval_ms
                ),
                max_poll_interval_ms=max_poll_interval_ms,
                group_instance_id=group_instance_id,
                client_id=client_id,
                retry_backoff_ms=retry_backoff_ms,
                max_versions=versions,
            )
            self.config = classic_config
            self._machine = MemberMachine(classic_config)
            self._request_types = MEMBER_REQUEST_TYPES
        self._listener = listener or RebalanceListener()
        self._client = KafkaClient(
            bootstrap_servers, client_id=client_id, request_timeout_ms=request_timeout_ms
        )
        self._request_timeout_ms = request_timeout_ms
        self._metadata_max_age_ms = metadata_max_age_ms

        # _lock guards the machine and everything below; _changed is notified whenever the
        # heartbeat thread has fed the machine, so waiting application calls re-check.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._completed: collections.deque[tuple[Request, PendingResponse]] = collections.deque()
        self._coordinator: BrokerConnection | None = None
        self._fetched_topics: frozenset[str] = frozenset()
        # topics the last Metadata answered with an error: each is warned about once
        self._missing_topics: frozenset[str] = frozenset()
        self._discovery_backoff = RetryBackoff(retry_backoff_ms, max(retry_backoff_ms, 1000))
        self._next_discovery_ms = 0
        self._metadata_backoff = RetryBackoff(retry_backoff_ms, max(retry_backoff_ms, 1000))
        self._next_metadata_ms = 0  # when the periodic refresh (metadata.max.age.ms) is due
        self._metadata_retry_ms = 0  # no refresh before this, after a failed one
        self._thread_error: BaseException | None = None
        self._closed = False
        self._closing = False
        # The thread running listener callbacks now (they must not call poll()).
        self._delivering: threading.Thread | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"groupcoord-heartbeat-{group_id}", daemon=True
        )
        self._thread.start()

    # ------------------------------------------------------------------------------
    # application API
    # ------------------------------------------------------------------------------

    def poll(self, timeout_ms: int = 1000) -> frozenset[TopicPartition]:
        """Take part in the group for up to ``timeout_ms``: (re)join when needed, deliver
        listener callbacks here, and return the current assignment as soon as the member
        is stable (or when the time is up). There are no records to wait for, so a stable
        member returns at once: a loop doing nothing but poll() spins. Raises the
        machine's fatal error (e.g. :class:`~groupcoord.errors.FencedInstanceIdError`)
        once the member cannot go on."""
        self._check_usable()
        if self._closing:
            raise GroupcoordError("this GroupMember is closing")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise ValueError(f"timeout_ms must be an int >= 0, got {timeout_ms!r}")
        if self._delivering is threading.current_thread():
            raise GroupcoordError("poll() must not be called from a rebalance listener")
        deadline = _now_ms() + timeout_ms
        woken_for: int | None = None
        while True:
            with self._lock:
                self._raise_if_failed()
                # Every round counts as a poll: it resets the poll timer and starts the
                # (re)join the machine wants, so that one poll() can carry a cooperative
                # rebalance through both of its rounds, as Kafka's does.
                now = _now_ms()
                self._machine.poll(now)
                due = self._machine.next_deadline()
                if due is not None and due <= now and due != woken_for:
                    # e.g. a JoinGroup to send: the heartbeat thread sends it (once per
                    # deadline, or a deadline it cannot act on yet would make us spin)
                    woken_for = due
                    self._wake.set()
                calls = self._machine.take_callbacks(hold=True)
                if not calls:
                    remaining = deadline - _now_ms()
                    if self._machine.settled or remaining <= 0:
                        return self._machine.assignment
                    self._changed.wait(remaining / 1000)
                    continue
            self._deliver(calls)

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions this member owns now."""
        with self._lock:
            return self._machine.assignment

    def generation(self) -> int:
        """The group generation, -1 when not in a stable group."""
        with self._lock:
            return self._machine.generation

    @property
    def member_id(self) -> str:
        with self._lock:
            return self._machine.member_id

    def commit(
        self, offsets: Mapping[TopicPartition, int], timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    ) -> None:
        """Commit ``offsets`` and block until the coordinator has acknowledged them. Raises
        the Kafka error of the commit (e.g. REBALANCE_IN_PROGRESS is retried by the machine
        after the rebalance; a member that lost its partitions gets COMMIT_FAILED-like
        errors), or RequestTimedOutError after ``timeout_ms``."""
        self._check_usable()
        deadline = _now_ms() + timeout_ms
        with self._lock:
            self._raise_if_failed()
            handle = self._machine.commit(dict(offsets), _now_ms())
        self._await(handle, deadline, f"commit not acknowledged within {timeout_ms} ms")

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int = DEFAULT_API_TIMEOUT_MS
    ) -> dict[TopicPartition, int]:
        """The committed offsets of ``partitions`` (OffsetFetch); partitions without a
        committed offset are left out."""
        self._check_usable()
        deadline = _now_ms() + timeout_ms
        with self._lock:
            self._raise_if_failed()
            handle = self._machine.fetch_committed(frozenset(partitions), _now_ms())
        self._await(handle, deadline, f"OffsetFetch not answered within {timeout_ms} ms")
        return dict(handle.offsets)

    def _await(self, handle: CommitHandle | FetchHandle, deadline_ms: int, timeout: str) -> None:
        """Wake the heartbeat thread (which sends the request) and block until ``handle`` is
        answered; raise its Kafka error, the member's fatal error, or RequestTimedOutError
        with the ``timeout`` message once ``deadline_ms`` passes."""
        self._wake.set()
        with self._lock:
            while not handle.done:
                self._raise_if_failed()
                remaining = deadline_ms - _now_ms()
                if remaining <= 0:
                    raise RequestTimedOutError(timeout)
                self._changed.wait(remaining / 1000)
        if handle.error is not None:
            raise handle.error

    def close(self, timeout_ms: int = 30_000) -> None:
        """Leave the group (dynamic members; static members just stop, KIP-345), deliver the
        last listener callbacks, stop the heartbeat thread and close the sockets."""
        if self._closed or self._closing:
            return
        # Listeners may still commit from their revoked callbacks while closing.
        self._closing = True
        deadline = _now_ms() + timeout_ms
        try:
            if self._thread.is_alive():
                with self._lock:
                    self._machine.close(_now_ms())
                self._wake.set()
                self._deliver_callbacks()
                with self._lock:
                    # Wait for the LeaveGroup (and any final commit) to be answered.
                    while self._thread.is_alive() and not self._machine.done:
                        remaining = deadline - _now_ms()
                        if remaining <= 0:
                            break
                        self._changed.wait(remaining / 1000)
        finally:
            self._closed = True
            self._stop.set()
            self._wake.set()
            self._thread.join(timeout=max(1.0, (deadline - _now_ms()) / 1000))
            self._client.close()

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"<GroupMember group={self.config.group_id!r} "
            f"member_id={self._machine.member_id!r} state={self._machine.state.name}>"
        )

    # ------------------------------------------------------------------------------
    # application-thread helpers
    # ------------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._closed:
            raise GroupcoordError("this GroupMember is closed")

    def _raise_if_failed(self) -> None:
        # Caller holds the lock.
        error = self._thread_error
        if isinstance(error, GroupcoordError):
            # e.g. GROUP_AUTHORIZATION_FAILED while looking the coordinator up
            raise error
        if error is not None:
            raise MemberThreadError(f"the heartbeat thread failed: {error!r}") from error
        fatal = self._machine.fatal_error
        if fatal is not None:
            raise fatal

    def _deliver_callbacks(self) -> None:
        with self._lock:
            calls = self._machine.take_callbacks(hold=True)
        self._deliver(calls)

    def _deliver(self, calls: list[ListenerCall]) -> None:
        """Run listener calls taken with ``hold=True`` on this thread, outside the lock (a
        listener may call commit()). Until they have run, the machine holds back the
        JoinGroup/LeaveGroup that must follow them, so nobody else can be given a
        partition this member is still giving up. A listener's exception is raised after
        the other calls ran."""
        first_error: BaseException | None = None
        self._delivering = threading.current_thread()
        try:
            for call in calls:
                try:
                    call.deliver(self._listener)
                except Exception as e:
                    if first_error is None:
                        first_error = e
        finally:
            self._delivering = None
            if calls:
                with self._lock:
                    self._machine.callbacks_done()
                self._wake.set()
        if first_error is not None:
            raise first_error

    # ------------------------------------------------------------------------------
    # heartbeat thread
    # ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._step()
        except BaseException as e:
            with self._lock:
                self._thread_error = e
                self._changed.notify_all()
        finally:
            with self._lock:
                self._changed.notify_all()

    def _step(self) -> None:
        with self._lock:
            lookup_due = self._machine.coordinator_lookup_due(_now_ms())
            wanted_topics = self._machine.metadata_topics()
            if self._machine.needs_metadata:
                self._next_metadata_ms = 0  # an assignment names a topic id we do not know
        if lookup_due and _now_ms() >= self._next_discovery_ms:
            self._discover_coordinator()
        now = _now_ms()
        if now >= self._metadata_retry_ms and (
            now >= self._next_metadata_ms or not wanted_topics <= self._fetched_topics
        ):
            self._refresh_metadata(wanted_topics)
        self._wake.clear()
        with self._lock:
            now = _now_ms()
            self._feed_completed(now)
            requests = self._machine.next_requests(now)
            machine_deadline = self._machine.next_deadline()
            lost = None
            if not self._machine.coordinator_known and self._coordinator is not None:
                lost, self._coordinator = self._coordinator, None
            self._changed.notify_all()
        if lost is not None:
            # The machine gave the coordinator up; Kafka disconnects too, so that answers
            # still in flight on that connection are not waited for.
            lost.close()
        for request in requests:
            self._send(request)
        if requests or lost is not None:
            return  # go round again at once: a send may have failed or completed already
        wake_at = [max(self._next_metadata_ms, self._metadata_retry_ms)]
        if machine_deadline is not None:
            if self._coordinator is None:
                # The machine wants a lookup; our own backoff decides when to retry it.
                machine_deadline = max(machine_deadline, self._next_discovery_ms)
            wake_at.append(machine_deadline)
        # Whatever was due went out in next_requests(); a deadline still in the past is
        # something that cannot go out yet (held back), so do not spin on it.
        wait_ms = max(min(wake_at) - _now_ms(), _MIN_IDLE_WAIT_MS)
        if not self._stop.is_set():  # a stop requested before the clear() above
            self._wake.wait(wait_ms / 1000)

    # -- coordinator ----------------------------------------------------------------

    def _discover_coordinator(self) -> None:
        try:
            address = self._client.find_coordinator(self.config.group_id)
            connection = self._client.connection(address)
            api_keys = {request_type.API_KEY for request_type in self._request_types}
            caps = {
                api_key: connection.version_for(api_key, lo, hi)
                for api_key, (lo, hi) in GROUP_API_VERSIONS.items()
                if api_key in api_keys
            }
        except KafkaError as e:
            if not e.retriable:
                raise
            self._next_discovery_ms = _now_ms() + self._discovery_backoff.next_ms()
            return
        self._discovery_backoff.reset()
        # the codecs of the versions we will speak, before the first JoinGroup: built on
        # first use they delay the first SyncGroup by milliseconds (see prepare)
        for request_type in self._request_types:
            prepare(request_type.API_KEY, version_for(request_type, caps))
        self._coordinator = connection
        with self._lock:
            self._machine.set_max_versions(caps)
            self._machine.coordinator_found(_now_ms())

    # -- metadata -------------------------------------------------------------------

    def _refresh_metadata(self, topics: frozenset[str]) -> None:
        try:
            metadata = self._client.metadata(topics)
        except KafkaError as e:
            if not e.retriable:
                raise
            self._metadata_retry_ms = _now_ms() + self._metadata_backoff.next_ms()
            return
        self._metadata_backoff.reset()
        self._metadata_retry_ms = 0
        self._fetched_topics = topics
        self._warn_missing_topics(metadata.topic_errors)
        self._next_metadata_ms = _now_ms() + self._metadata_max_age_ms
        with self._lock:
            if isinstance(self._machine, ConsumerMemberMachine):
                # KIP-848 assignments name topics by id
                self._machine.set_metadata(
                    metadata.partitions_per_topic, _now_ms(), metadata.topic_ids
                )
            else:
                self._machine.set_metadata(metadata.partitions_per_topic, _now_ms())

    def _warn_missing_topics(self, errors: Mapping[str, type[KafkaError]]) -> None:
        """Kafka's clients warn when metadata has no subscribed topic ("Error while fetching
        metadata ... UNKNOWN_TOPIC_OR_PARTITION"); without this a member of a group whose
        topic does not exist just sees an empty assignment. Once per topic, not per refresh."""
        missing = frozenset(errors)
        for topic in sorted(missing - self._missing_topics):
            log.warning(
                "group %s: topic %s is not available (%s in Metadata): none of its partitions"
                " can be assigned until it exists",
                self.config.group_id,
                topic,
                errors[topic].name,
            )
        self._missing_topics = missing

    # -- requests -------------------------------------------------------------------

    def _send(self, request: Request) -> None:
        connection = self._coordinator
        try:
            if connection is None or connection.closed:
                raise CoordinatorNotAvailableError("no connection to the coordinator")
            timeout_ms = self._request_timeout_ms
            if isinstance(request, JoinGroupRequest):
                # The coordinator may hold a JoinGroup for the whole rebalance timeout.
                timeout_ms = max(
                    timeout_ms, self.config.max_poll_interval_ms + _JOIN_GROUP_TIMEOUT_LAPSE_MS
                )
            pending = connection.send(to_kio_request(cast(CoordinatorRequest, request)), timeout_ms)
        except KafkaError as e:
            with self._lock:
                self._machine.request_failed(request, type(e), _now_ms())
            return
        pending.add_done_callback(lambda p: self._on_done(request, p))

    def _on_done(self, request: Request, pending: PendingResponse) -> None:
        # Runs on a connection's reader thread: hand over and wake the heartbeat thread.
        self._completed.append((request, pending))
        self._wake.set()

    def _feed_completed(self, now: int) -> None:
        """Hand completed requests to the machine (caller holds the lock)."""
        while self._completed:
            request, pending = self._completed.popleft()
            error = pending.error
            if error is not None:
                self._machine.request_failed(request, type(error), now)
                continue
            try:
                # a member's requests are coordinator requests: their responses come back
                response = cast(
                    Response,
                    from_kio_response(
                        request.API_KEY,
                        request.version,
                        pending.result(0),
                        correlation=request.correlation,
                    ),
                )
            except (GroupcoordError, ValueError, TypeError):
                # A response our messages refuse (values out of range): the coordinator
                # cannot be trusted, so treat it as a broken connection and look again.
                self._machine.request_failed(request, NetworkException, now)
                continue
            self._machine.receive(response, now)
