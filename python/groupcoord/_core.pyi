"""Type stubs of the Rust extension ``groupcoord._core`` (hand-written; checked by stubtest).

Each component keeps its entries in its own delimited section below.
"""

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, Literal, Self, SupportsIndex, TypeAlias, final, overload

from typing_extensions import Buffer

__version__: str
__all__ = [
    "JOIN",
    "SESSION",
    "SYNC",
    "ConnectionLimits",
    "Expired",
    "LaneApp",
    "LaneSet",
    "MemberExpiry",
    "NetShell",
    "ServerTarget",
    "TimerWheel",
    "__version__",
    "app_loop",
    "assign",
    "assign_encoded",
    "assign_server",
    "plain_current",
]

# =====================================================================================
# BEGIN timer wheel & member expiry  (rust/src/bindings/timer.rs)
# =====================================================================================

_Kind: TypeAlias = Literal["session", "join", "sync"]
# Integers in bulk: any iterable of ints, or a buffer (array('q'), array('Q'), memoryview,
# numpy int64/uint64) whose 8-byte items are read without a Python call per element.
_Ints: TypeAlias = Iterable[SupportsIndex] | Buffer

SESSION: Final = "session"
"""Kind of the session deadline: no heartbeat within session.timeout.ms."""
JOIN: Final = "join"
"""Kind of the join deadline: a pending member (KIP-394) or a member that has not
rejoined within the group's rebalance timeout (KIP-62)."""
SYNC: Final = "sync"
"""Kind of the sync deadline: no SyncGroup within the rebalance timeout."""

@final
class TimerWheel:
    """A hierarchical timing wheel of integer keys with int64 millisecond deadlines.

    Keys are ints in ``[0, 2**64)`` (member handles; dense small keys are fastest).
    Deadlines and times are ints in ``[-2**63, 2**63)`` milliseconds. The wheel never reads
    a clock: time moves only by ``advance(now_ms)``, never backwards.

    Costs: ``schedule`` / ``cancel`` O(1); ``advance`` O(1) when nothing is due, else
    proportional to what expires; ``next_deadline`` exact, O(1) amortized.

    Bad input raises ``TypeError`` (not an int; ``bool`` and ``None`` included) or
    ``ValueError`` (out of range, time going backwards, mismatched batch lengths).
    Batch methods validate every element before changing anything.
    """

    def __new__(cls, now_ms: int = 0) -> Self:
        """An empty wheel whose current time is ``now_ms``."""

    @property
    def now_ms(self) -> int:
        """The current time: the last ``now_ms`` given to ``advance`` (or the constructor)."""

    def schedule(self, key: int, deadline_ms: int) -> None:
        """Schedule ``key`` at ``deadline_ms``, replacing its previous deadline.

        A deadline at or before ``now_ms`` fires on the next ``advance``.
        """

    def schedule_many(self, keys: _Ints, deadline_ms: int | _Ints) -> None:
        """Schedule every key of ``keys`` at ``deadline_ms``: one int for all keys, or a
        parallel sequence/buffer. Equivalent to ``schedule`` in order (a repeated key
        keeps its last deadline), in one call across the FFI."""

    def cancel(self, key: int) -> bool:
        """Unschedule ``key``; return whether it was scheduled."""

    def cancel_many(self, keys: _Ints) -> int:
        """Unschedule every key of ``keys``; return how many were scheduled."""

    def advance(self, now_ms: int) -> list[int]:
        """Move time to ``now_ms`` and return every key with deadline <= ``now_ms``,
        each once, ordered by (deadline, key); they are no longer scheduled.

        Raises ``ValueError`` if ``now_ms`` is before the current time.
        """

    def deadline(self, key: int) -> int | None:
        """The deadline ``key`` is scheduled at, or ``None``."""

    def next_deadline(self) -> int | None:
        """The earliest scheduled deadline (exact), or ``None`` if nothing is scheduled."""

    def __len__(self) -> int:
        """Number of scheduled keys."""

    def __contains__(self, key: object, /) -> bool:
        """Whether ``key`` is scheduled (ints outside the key range never are)."""

@final
class Expired:
    """One missed deadline of ``MemberExpiry.expire``.

    Immutable; behaves as the tuple ``(group, member, kind, deadline_ms)`` for unpacking,
    indexing, ``len``, equality, ordering and hashing, so it compares equal to that tuple
    and to ``groupcoord.reference.expiry.Expired`` (a NamedTuple). Supports ``match``
    (positional patterns) and pickling.
    """

    __match_args__ = ("group", "member", "kind", "deadline_ms")

    def __new__(cls, group: str, member: str, kind: _Kind, deadline_ms: int) -> Self: ...
    @property
    def group(self) -> str: ...
    @property
    def member(self) -> str: ...
    @property
    def kind(self) -> _Kind: ...
    @property
    def deadline_ms(self) -> int: ...
    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: SupportsIndex, /) -> str | int: ...
    @overload
    def __getitem__(self, index: slice, /) -> tuple[str | int, ...]: ...
    def __iter__(self) -> Iterator[str | int]: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Expired | tuple[str | int, ...], /) -> bool: ...
    def __le__(self, other: Expired | tuple[str | int, ...], /) -> bool: ...
    def __gt__(self, other: Expired | tuple[str | int, ...], /) -> bool: ...
    def __ge__(self, other: Expired | tuple[str | int, ...], /) -> bool: ...
    def __reduce__(self) -> tuple[type[Expired], tuple[str, str, _Kind, int]]: ...

@final
class MemberExpiry:
    """Per-(group, member) deadlines of three independent kinds: ``SESSION``, ``JOIN``,
    ``SYNC``, on one timing wheel.

    Group and member ids are strs (any str, lone surrogates included), interned to dense
    handles internally; handles of members with no pending deadline are reused, so memory
    follows the members tracked now, not all members ever seen. Times are int64 ms; the
    table never reads a clock and only ``expire`` moves its time.

    ``expire`` order: by ``deadline_ms``, then ``group``, then ``member`` (``str`` order),
    then kind in the order SESSION < JOIN < SYNC.

    Handles: ``handle(group, member)`` gives a tracked member's handle, an int that
    ``heartbeat_handle(s)`` take instead of the two ids, skipping their lookup (the fast
    path for a coordinator that heartbeats the same members over and over). A handle is
    *live* from the moment its member has a pending deadline until the member has none
    left: its last deadline expired, ``clear`` removed its last one, or ``remove_group``
    dropped its group. After that the handle is *stale*: calls with it raise ``KeyError``
    and never touch another member, even one that reuses the member's internal slot (the
    handle carries the slot's generation), and a member tracked again under the same ids
    gets a new handle. Handles are ints in ``[0, 2**63)``, so they fit ``array('q')`` and
    ``array('Q')``; their values are opaque.
    """

    def __new__(cls, now_ms: int = 0) -> Self:
        """An empty table whose current time is ``now_ms``."""

    @property
    def now_ms(self) -> int:
        """The current time: the last ``now_ms`` given to ``expire`` (or the constructor)."""

    @property
    def member_count(self) -> int:
        """Members with at least one pending deadline."""

    @property
    def group_count(self) -> int:
        """Groups with at least one such member."""

    def heartbeat(self, group: str, member: str, now_ms: int, session_timeout_ms: int) -> None:
        """A heartbeat received at ``now_ms``: the SESSION deadline becomes
        ``now_ms + session_timeout_ms`` (``session_timeout_ms`` >= 0, ``ValueError`` if the
        sum overflows int64). ``now_ms`` only dates the heartbeat; it does not move time."""

    def heartbeat_many(
        self,
        groups: str | Iterable[str],
        members: Iterable[str],
        now_ms: int,
        session_timeout_ms: int | _Ints,
    ) -> None:
        """Many heartbeats received at ``now_ms``, in one call across the FFI.

        ``groups`` is one str (every member is in that group) or a sequence parallel to
        ``members``; ``session_timeout_ms`` is one int or a parallel sequence/buffer.
        Equivalent to ``heartbeat`` for each member in order; validated in full before
        anything changes.
        """

    def handle(self, group: str, member: str) -> int:
        """The member's handle (the same int for as long as it stays live).

        Raises ``KeyError`` if the member has no pending deadline: it gets one with
        ``heartbeat``, ``expect_join`` or ``expect_sync``.
        """

    def heartbeat_handle(self, handle: int, now_ms: int, session_timeout_ms: int) -> None:
        """``heartbeat`` of the member ``handle`` names. ``KeyError`` if the handle is
        stale; ``TypeError``/``ValueError`` for a non-int or out-of-range argument."""

    def heartbeat_handles(
        self, handles: _Ints, now_ms: int, session_timeout_ms: int | _Ints
    ) -> None:
        """Many heartbeats by handle at ``now_ms``, in one call across the FFI.

        ``handles`` is a sequence of ints or an 8-byte integer buffer (``array('q')``,
        ``array('Q')``: read without a Python call per element); ``session_timeout_ms`` is
        one int or a parallel sequence/buffer. Equivalent to ``heartbeat_handle`` for each
        handle in order, but all or nothing: if any handle is stale (``KeyError`` naming
        the first, ``handles[i]``) or any argument is bad, nothing changes.
        """

    def expect_join(self, group: str, member: str, deadline_ms: int) -> None:
        """Set the member's JOIN deadline, replacing a previous one."""

    def expect_sync(self, group: str, member: str, deadline_ms: int) -> None:
        """Set the member's SYNC deadline, replacing a previous one."""

    def clear(self, group: str, member: str, kind: _Kind | None = None) -> bool:
        """Clear the member's deadline of ``kind`` (all three if ``None``); return whether
        anything was pending."""

    def remove_group(self, group: str) -> int:
        """Drop every deadline of every member of ``group``; return how many members it had."""

    def expire(self, now_ms: int) -> list[Expired]:
        """Move time to ``now_ms`` and return every deadline <= ``now_ms`` as ``Expired``,
        in expiry order; they are no longer pending. Kinds are independent: an expired
        SESSION leaves the member's JOIN/SYNC deadlines pending.

        Raises ``ValueError`` if ``now_ms`` is before the current time.
        """

    def deadline(self, group: str, member: str, kind: _Kind) -> int | None:
        """The member's pending deadline of ``kind``, or ``None``."""

    def next_deadline(self) -> int | None:
        """The earliest pending deadline (exact), or ``None``."""

    def __len__(self) -> int:
        """Number of pending deadlines (0 to 3 per member)."""

    def __contains__(self, item: object, /) -> bool:
        """``(group, member) in table``: whether the member has a pending deadline."""

# =====================================================================================
# END timer wheel & member expiry
# =====================================================================================

# =====================================================================================
# BEGIN assignors  (rust/src/bindings/assign.rs)
# =====================================================================================

def assign(
    kind: str,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Any],
    topic_partition_type: type,
    assignment_type: Any,
    partition_racks: Mapping[Any, Any] | None = None,
) -> dict[str, Any]:
    """Run assignor ``kind`` on Subscription objects; build results with the given types.
    ``partition_racks``: {(topic, partition): set of replica racks} (KIP-881)."""

def assign_encoded(
    kind: str,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, bytes],
    group_instance_ids: Mapping[str, str | None] | None = None,
    partition_racks: Mapping[Any, Any] | None = None,
) -> dict[str, bytes]:
    """Run assignor ``kind`` on ConsumerProtocolSubscription bytes; return assignment bytes."""

def assign_server(
    kind: str,
    partitions_per_topic: Mapping[str, int],
    members: Mapping[str, Any],
    current: Mapping[str, Mapping[str, Any]] | None = None,
    partition_racks: Mapping[Any, Any] | None = None,
) -> dict[str, dict[str, tuple[int, ...]]]:
    """Run KIP-848 server-side assignor ``kind`` ("uniform" or "range") on members with
    ``topics``, ``rack`` and ``instance_id`` attributes; {member: {topic: (partition, ...)}}."""

def plain_current(current: dict[str, Any]) -> bool:
    """Whether every value of ``current`` is a dict whose keys are all str (True: the shape
    a current target needs; False: not known, check it in Python)."""

@final
class ServerTarget:
    """A group's KIP-848 target assignment kept between computations (``assign_server``
    with the kept target as ``current``, then keeping the result)."""

    def __new__(cls, kind: str) -> Self: ...
    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        members: Mapping[str, Any],
        partition_racks: Mapping[Any, Any] | None = None,
        current: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, dict[str, tuple[int, ...]]]: ...
    def clear(self) -> None: ...
    @property
    def kind(self) -> str: ...
    def __len__(self) -> int: ...

# =====================================================================================
# END assignors
# =====================================================================================

# =====================================================================================
# BEGIN simulator application loop  (rust/src/bindings/app_loop.rs)
# =====================================================================================

def app_loop(
    partitions: list[tuple[bool, int, int, float, int]],
    batch: list[tuple[int, int, list[float]]],
    rr: int,
    busy_until: int | None,
    wake_at: int,
    until: int,
    limit: int,
    max_poll_records: int,
    record_ms: float | None,
    sample: Callable[[], float],
    max_lag_ms: float,
    deadline_base: int | None = None,
    max_poll_interval_ms: int = 0,
) -> tuple[
    tuple[list[tuple[int, int]], int, int | None, list[tuple[int, int, list[float]]]],
    tuple[int, int | None, int, tuple[int, int | None] | None],
    tuple[int, int, float, list[tuple[int, int]]],
]:
    """The simulator's lazy application steps of one member from ``wake_at`` while before
    ``until`` and ``limit`` (``groupcoord.sim.engine.Engine._catch_up``). ``partitions``:
    (active, position, start_ms, rate, processed_end) in the member's order; ``batch``:
    (partition index, first offset, completions). Returns ((position, processed_end) per
    partition, rr, busy_until, batch), (wake_at, last polled step, steps, the step whose
    poll goes to the machine: (t, at) or None), (records, duplicates, max lag, [(lag ms,
    records)]). ``record_ms``: a constant record time, else ``sample()`` draws each.
    ``deadline_base``: the machine's deadline after a poll at ``t`` is
    ``min(deadline_base, t + max_poll_interval_ms)`` (no step is then left to the
    machine: the loop goes on, and the last polled step is the one to tell it of)."""

_LaneTimers: TypeAlias = tuple[int, int, int, int | None, bool, int, int | None, int, int | None]

@final
class LaneApp:
    """One member's application in the simulator's processing lane
    (``groupcoord.sim.engine.Engine._plane_steps``). The state (``partitions`` and
    ``batch`` as ``app_loop`` takes them, the turn ``rr``, ``busy_until``) stays in Rust
    from one ``run`` to the next, with the recorder's counts of what was processed, until
    ``take`` hands them back. ``record_ms``: a constant record time, else ``sample()``
    draws each; ``settings``: (session.timeout.ms, max.poll.interval.ms,
    heartbeat.interval.ms)."""

    def __new__(
        cls,
        partitions: list[tuple[bool, int, int, float, int]],
        batch: list[tuple[int, int, list[float]]],
        rr: int,
        busy_until: int | None,
        max_poll_records: int,
        record_ms: float | None,
        sample: Callable[[], float],
        settings: tuple[int, int, int],
    ) -> Self: ...
    def run(
        self,
        wake_at: int,
        limit: int,
        read_limit: int,
        timers: _LaneTimers,
        reads: list[tuple[int, int, bool]],
    ) -> tuple[tuple[int, int, int, bool, int | None], _LaneTimers]:
        """The steps from ``wake_at``: wake-ups before ``limit``, and the answers in
        ``reads`` ((arrival, place, a heartbeat's), in order) before ``read_limit``.
        ``timers``: (hb_due, last_ack, last_poll, hb_sent, hb_sent_poll, hb_poll_before,
        told_sent, told_answered, last_hb_send). Returns (wake_at, steps, answers read, a
        commit's answer among them, busy_until) and the timers. Raises ``RuntimeError``
        where the lane's conditions do not hold (a timeout due), ``ValueError`` once the
        state was taken back."""
    def positions(self) -> list[int]:
        """The next offset to hand to the application, per partition, in the member's
        order."""
    def take(
        self,
    ) -> tuple[
        tuple[list[tuple[int, int]], int, int | None, list[tuple[int, int, list[float]]]],
        tuple[int, int, float, list[tuple[int, int]]],
    ]:
        """The application state as ``app_loop`` returns it and the counts since the state
        was handed over, as ``app_loop`` returns them; the object is spent (``ValueError``
        from every later call)."""

@final
class LaneSet:
    """The members in the simulator's processing lane and the queue of their events (their
    heartbeats' and auto-commits' arrivals at the coordinator, their auto-commit checks,
    their metadata refreshes), handled in Rust as ``groupcoord.sim.engine.Engine``'s Python
    handlers handle them (``_plane_heartbeat_arrives``, ``_plane_check``,
    ``_plane_commit_arrives``, ``_refresh_metadata``). The coordinator is reached through
    the objects ``run`` is given. ``settings``: (session.timeout.ms, max.poll.interval.ms,
    heartbeat.interval.ms); ``record_ms``: the constant record time."""

    #: the engine's count of partition count changes: a member whose machine saw an older
    #: one leaves the lane for its next metadata refresh
    metadata_epoch: int

    def __new__(
        cls,
        group_id: str,
        latency_ms: float,
        auto_commit_interval_ms: int,
        record_ms: float,
        settings: tuple[int, int, int],
        max_poll_records: int,
        metadata_max_age_ms: int,
    ) -> Self: ...
    def enter(
        self,
        pkey: int,
        partitions: list[tuple[bool, int, int, float, int]],
        batch: list[tuple[int, int, list[float]]],
        rr: int,
        busy_until: int | None,
        wake_at: int,
        timers: _LaneTimers,
        connection: tuple[int, int, float],
        next_auto_commit_ms: int,
        committed: list[int | None],
        idle_positions: list[int | None],
        hb_due: int,
        check_at: int,
        member_id: str,
        generation: int,
        instance_id: str | None,
        tps: list[Any],
        make_like: Callable[[dict[Any, int], None], Any],
        metadata_at: int | None,
        metadata_seen: int,
    ) -> int:
        """Put a member in the lane (``connection``: (up_seq, down_seq, down_last_ms));
        its first heartbeat (sent at ``hb_due``), its auto-commit's check (at
        ``check_at``) and its next metadata refresh (at ``metadata_at``; its machine last
        saw the partition counts of ``metadata_seen``, a ``metadata_epoch``) are queued.
        Returns its slot."""
    def run(
        self,
        limit: tuple[int, int, int, int],
        end: int,
        engine: Any,
        coordinator: Any,
        shell: Any,
        expiry: MemberExpiry | None,
        version: int,
    ) -> tuple[int, int, tuple[int, int, int, int], tuple[int, int, int, int]]:
        """The events whose keys ((time, rank, process, sub-order)) come before ``limit``,
        at most at ``end``. ``expiry``: the coordinator's ``member_expiry``; ``version``:
        the driver's count of the calls that may change the coordinator's groups (a member
        whose heartbeat ``quiet_heartbeat`` took in the same version has its next ones
        taken straight by the table). Returns (stop, slot, key, (heartbeats, commits,
        steps, events)): stop 0 (the limit reached), 1 (the coordinator did not take the
        event at ``key`` of the member in ``slot``: it is queued again), 2 (schedule the
        coordinator's timers after the event at ``key``), 3 (the commit at ``key`` was not
        persisted: the member leaves). Raises ``RuntimeError`` where the lane's conditions
        do not hold."""
    def take(
        self, slot: int
    ) -> tuple[
        tuple[list[tuple[int, int]], int, int | None, list[tuple[int, int, list[float]]]],
        tuple[int, int, float, list[tuple[int, int]]],
        int,
        _LaneTimers,
        list[tuple[int, int, bool]],
        tuple[int, int, int, int, int, float],
        tuple[
            tuple[int, int, int],
            list[tuple[int, int]] | None,
            int,
            int,
            tuple[int, int, bool] | None,
            bool,
            int,
            bool,
        ]
        | None,
        tuple[int, int | None, int],
        list[int | None],
        Any,
        int | None,
    ]:
        """The member's state, out of the lane (its queued events dropped): (application
        state and counts as ``LaneApp.take`` gives them, wake_at, timers, answers to read,
        (next_sent, next_arrival, next_up_seq, up_seq, down_seq, down_last_ms), the
        commit's plan (key, offsets by partition index, arrival, up_seq, answer, read,
        poll_before, applied), (check_at, last_commit_send, next_auto_commit_ms), the
        offsets last committed by partition index, the request its commits are like, the
        next metadata refresh).
        ``KeyError`` for a slot not in the lane."""
    def __len__(self) -> int: ...

# =====================================================================================
# END simulator application loop
# =====================================================================================

# =====================================================================================
# native network shell (rust/src/net, groupcoord.server.native_listener)
# =====================================================================================

@final
class ConnectionLimits:
    """Kafka's ``max.connections`` and ``max.connections.per.ip`` for the whole server:
    one table of open connections, in total and per client address, that every listener
    counts in (the asyncio shell through these methods, each native shell given it on its
    own thread). An IPv4 client seen as ``::ffff:a.b.c.d`` is the same address."""

    def __new__(
        cls, max_connections: int | None = None, max_connections_per_ip: int | None = None
    ) -> Self:
        """No limit where None."""
    def open(self, address: str) -> str | None:
        """Count a new connection from ``address``; or the Kafka name of the limit it would
        exceed (``"max.connections"``, ``"max.connections.per.ip"``), and it is not
        counted. ``ValueError`` if ``address`` is not an IP address."""
    def close(self, address: str) -> bool:
        """A connection ``open`` counted has closed; False if none from ``address`` was."""
    @property
    def open_connections(self) -> int:
        """Connections open now, over every listener."""
    def per_ip(self) -> dict[str, int]:
        """Open connections per client address."""

@final
class NetShell:
    """A listening socket served on a Rust thread off the GIL: accepts, reads, splits
    frames, writes replies in each connection's request order, answers the heartbeats of
    admitted members itself and takes their common commits (``take_commits``; each one's
    answer is held until ``release_commits``). Every other frame waits for ``take()``;
    ``notify_fd`` turns readable when there is something to take."""

    def __new__(
        cls,
        fd: int,
        *,
        now_ms: int,
        max_frame_bytes: int,
        heartbeat_versions: tuple[int, int] | None = None,
        commit_versions: tuple[int, int] | None = None,
        offset_metadata_max_bytes: int = 4096,
        latency_bounds_s: list[float] = ...,
        max_queued_replies: int = 1024,
        max_buffered_bytes: int = 4194304,
        write_timeout_ms: int = 60000,
        idle_ms: int | None = None,
        limits: ConnectionLimits | None = None,
    ) -> Self:
        """Serve the bound, listening socket ``fd`` (taken over: ``socket.detach()``).
        ``heartbeat_versions``: the Heartbeat versions it may answer (None: none, every
        heartbeat goes to Python); ``commit_versions``: the OffsetCommit versions it may
        take (None: none), checking metadata against ``offset_metadata_max_bytes``;
        ``latency_bounds_s``: ascending bucket bounds of the taken commits' latency counts
        (default none: one +Inf bucket); ``limits``: the server's connection limits,
        shared with its other listeners (None: this shell counts alone, unlimited).
        ``OSError`` if the thread cannot start, ``ValueError`` for bounds out of order."""
    @property
    def notify_fd(self) -> int:
        """Readable when ``take()`` has something."""
    @property
    def failure(self) -> str | None:
        """Why the I/O thread stopped serving on its own (its poll failed: every
        connection was closed), or None while it serves."""
    def take(
        self,
    ) -> tuple[list[tuple[int, str, int]], list[tuple[int, int, bytes]], list[tuple[int, str]]]:
        """``(opened, frames, closed)``: new connections ``(conn, peer_ip, peer_port)``,
        frames to dispatch ``(conn, seq, body)``, connections gone ``(conn, reason)``."""
    def reply_many(
        self,
        replies: list[tuple[int, int, bytes | None]],
        parked: list[tuple[int, int]] | None = None,
    ) -> None:
        """Replies ``(conn, seq, frame)`` (size prefix included; None: the request has
        none; ignored for a connection gone), and the ``(conn, seq)`` of requests parked
        (their replies come later: they no longer count as being with Python). Checked in
        full before anything is handed over (``TypeError`` for a frame that is not
        bytes)."""
    def close_connection(self, conn: int, reason: str) -> None:
        """Close ``conn`` at once: nothing more is read or sent on it."""
    def admit(
        self,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        session_timeout_ms: int,
        handle: int,
        session_deadline_ms: int,
        takes_commits: bool = False,
    ) -> None:
        """Answer this member's heartbeats in ``generation_id`` natively from now on,
        while its session lasts (``handle`` and ``session_deadline_ms``: its
        ``MemberExpiry`` handle and SESSION deadline), and take its commits too if
        ``takes_commits`` (see ``set_commit_topics``)."""
    def set_commit_topics(self, topics: dict[str, int] | None) -> None:
        """The topics the coordinator's OffsetCommit check knows, with their partition
        counts: a commit is taken natively only if every partition is in them (None:
        take none)."""
    def take_commits(
        self,
    ) -> tuple[
        list[tuple[int, int]],
        list[tuple[str, int, list[tuple[str, list[tuple[int, int, int, str | None]]]]]],
    ]:
        """The commits taken natively since the last call, in the order taken, as
        ``(slots, commits)``: each one's ``(conn, seq)``, and each one ``(group_id, at_ms,
        topics)``, each topic ``(name, partitions)``, each partition ``(index, offset,
        leader_epoch, metadata)`` (``GroupCoordinator.store_shell_commits``' input)."""
    def defer_commit_wakes(self) -> None:
        """The caller's writer started a transaction and takes the commits held here
        when it ends: until the next ``take_commits``, commits taken do not make
        ``notify_fd`` readable."""
    def release_commits(self, commits: list[tuple[int, int]], ok: bool) -> None:
        """The taken commits ``(conn, seq)`` were stored (``ok``) or not: their held
        answers go out (no error, or COORDINATOR_NOT_AVAILABLE for each partition;
        ignored for a connection gone)."""
    def invalidate_group(self, group_id: str) -> bool:
        """The group may change: its members' heartbeats go to Python until admitted
        again. Whether any were admitted."""
    def invalidate_all(self) -> None:
        """``invalidate_group`` of every group."""
    def sync_expiry(self, expiry: MemberExpiry, now_ms: int) -> int:
        """Apply the sessions refreshed natively to ``expiry`` (where they move a live
        member's deadline later; those of members invalidated since the last call too)
        and refuse, from now on, members due by ``now_ms``. Returns how many were
        applied."""
    def counters(self) -> dict[str, Any]:
        """Running totals: bytes_in, bytes_out, accepted, refused (max.connections),
        refused_per_ip (max.connections.per.ip), open, peak_unsent (the
        most reply bytes one connection held unsent), heartbeats_answered, admitted,
        commits_taken, commit_latency_counts (per bucket, the last +Inf),
        commit_latency_total_s and python_wakes (wake-ups sent through ``notify_fd``)."""
    def stop(self) -> None:
        """Stop accepting, send what is ready, close every connection, end the thread."""
