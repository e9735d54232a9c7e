"""The rebalance machinery shared by the request handlers and the deadlines.

:class:`Rebalancer` holds the coordinator's groups, its ``MemberExpiry`` table and the
responses released so far, and implements the transitions of Kafka's classic coordinator:
starting a rebalance (with the initial delay on an Empty group), completing the join phase
(dropping dynamic members that did not rejoin, electing a leader, a new generation),
propagating the leader's assignment, removing members, and reacting to every kind of
deadline.

Deadlines, all in one ``MemberExpiry`` (no scans):

=========================  =======  =============================================
key (group, member)        kind     meaning
=========================  =======  =============================================
(group, member id)         SESSION  heartbeat deadline (a new member's: the
                                    new-member join timeout, KAFKA-7610)
(group, pending id)        JOIN     KIP-394 pending member must rejoin by then
(group, ``GROUP_TIMER``)   JOIN     end of the join phase (rebalance timeout) or
                                    of a step of the initial rebalance delay
(group, ``GROUP_TIMER``)   SYNC     members must have sent SyncGroup (KAFKA-12890)
=========================  =======  =============================================

Offsets retention, for classic and KIP-848 groups alike (acted on by
``on_retention_deadline``, :mod:`groupcoord.coordinator.retention`):

=========================  =======  =============================================
(group, ``GROUP_TIMER``)   SESSION  the group's next offsets-retention check
=========================  =======  =============================================

KIP-848 consumer groups (``consumer_groups``) keep theirs in the same table and are acted
on by ``on_consumer_deadline`` (:mod:`groupcoord.coordinator.consumer_heartbeat`):

=========================  =======  =============================================
(group, member id)         SESSION  group.consumer.session.timeout.ms
(group, member id)         JOIN     rebalance timeout: partitions still unrevoked
=========================  =======  =============================================

``GROUP_TIMER`` is the empty string, which is never a member id (it is
UNKNOWN_MEMBER_ID).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from groupcoord._core import JOIN, SESSION, SYNC, MemberExpiry
from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.events import MemberRemoved, RebalanceCompleted, RemovalCause
from groupcoord.coordinator.group import Group, Member, Waiter
from groupcoord.coordinator.messages import (
    UNKNOWN_MEMBER_ID,
    ErrorClass,
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupResponse,
)
from groupcoord.coordinator.offsets import StoreRecord
from groupcoord.coordinator.output import CoordinatorEvent, CoordinatorResponse
from groupcoord.coordinator.states import GroupState, can_rebalance
from groupcoord.coordinator.topics import TopicImage, TopicView
from groupcoord.errors import (
    FencedInstanceIdError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

__all__ = ["GROUP_TIMER", "MemberIdFactory", "OnPersisted", "Rebalancer"]

log = logging.getLogger("groupcoord.coordinator")

#: The member id under which group-level deadlines live in ``MemberExpiry``.
GROUP_TIMER: Final = UNKNOWN_MEMBER_ID

#: ``(client_id, group_instance_id) -> new member id``.
MemberIdFactory = Callable[[str, "str | None"], str]

#: What to do once records are persisted (``True``) or failed to be (``False``): release
#: the response that waited for them, or answer it with the error.
OnPersisted = Callable[[bool], None]

_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY


class Rebalancer:
    """Groups, deadlines, released responses, records to persist and events of one
    coordinator (no I/O, no clock)."""

    __slots__ = (
        "_new_member_id",
        "config",
        "consumer_groups",
        "dirty_consumer_groups",
        "events",
        "expiry",
        "groups",
        "now",
        "on_consumer_deadline",
        "on_persisted",
        "on_retention_deadline",
        "out",
        "rebalances_started",
        "records",
        "topic_view",
        "topics",
    )

    def __init__(
        self,
        config: CoordinatorConfig,
        new_member_id: MemberIdFactory,
        now_ms: int,
        topics: TopicView | None = None,
    ) -> None:
        self.config = config
        #: the cluster's topics, for OffsetCommit (``None``: every partition exists)
        self.topic_view = topics
        self._new_member_id = new_member_id
        self.now = now_ms
        self.expiry = MemberExpiry(now_ms)
        self.groups: dict[str, Group] = {}
        #: KIP-848 consumer groups; a group id is in at most one of the two dicts
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        #: consumer groups changed outside a heartbeat (deadlines, topics) whose records
        #: are still to be handed out
        self.dirty_consumer_groups: set[str] = set()
        #: the topics KIP-848 groups are assigned from (``update_topics``)
        self.topics = TopicImage()
        #: ``(group, member, kind)`` of a consumer group's expired deadline
        self.on_consumer_deadline: Callable[[str, str, str], None] | None = None
        #: ``(group)`` whose offsets-retention check is due
        self.on_retention_deadline: Callable[[str], None] | None = None
        #: Responses released since the coordinator last handed them out.
        self.out: list[CoordinatorResponse] = []
        #: Records to persist since the coordinator last handed them out, and what to do
        #: once they are (in order; one entry may cover several records).
        self.records: list[StoreRecord] = []
        self.on_persisted: list[OnPersisted] = []
        #: Events since the coordinator last handed them out.
        self.events: list[CoordinatorEvent] = []
        #: group id -> (start time, reason) of the rebalance under way, for the
        #: RebalanceCompleted event when its join phase completes.
        self.rebalances_started: dict[str, tuple[int, str]] = {}

    # ------------------------------------------------------------------ helpers

    def create_group(self, group_id: str) -> Group:
        group = Group(group_id, self.now)
        self.groups[group_id] = group
        return group

    def member_id_for(self, group: Group, client_id: str, group_instance_id: str | None) -> str:
        """A fresh member id from the factory (never one in use in ``group``)."""
        for _ in range(64):
            member_id = self._new_member_id(client_id, group_instance_id)
            if not isinstance(member_id, str) or member_id == UNKNOWN_MEMBER_ID:
                raise ValueError(f"member_id_factory returned {member_id!r}: need a non-empty str")
            if member_id not in group.members and member_id not in group.pending_members:
                return member_id
        raise RuntimeError("member_id_factory keeps returning member ids already in use")

    def validate_current_member(
        self, group: Group, member_id: str, group_instance_id: str | None
    ) -> ErrorClass:
        """FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID as Kafka's ``validateCurrentMember``."""
        if group_instance_id is not None:
            current = group.static_members.get(group_instance_id)
            if current is None:
                return UnknownMemberIdError
            if current != member_id:
                log.info(
                    "group %s: member %s with group.instance.id %s is fenced by %s",
                    group.group_id,
                    member_id,
                    group_instance_id,
                    current,
                )
                return FencedInstanceIdError
            return None
        return None if member_id in group.members else UnknownMemberIdError

    def schedule_heartbeat(self, group: Group, member: Member, timeout_ms: int = -1) -> None:
        """The member is alive now: its SESSION deadline is now + its session timeout."""
        self.expiry.heartbeat(
            group.group_id,
            member.member_id,
            self.now,
            member.session_timeout_ms if timeout_ms < 0 else timeout_ms,
        )

    def check_retention(self, group_id: str, at_ms: int = -1) -> None:
        """Check the group's offsets for expiry at the first retention check (every
        offsets.retention.check.interval.ms, on the epoch's grid) at or after ``at_ms``
        and after now, unless a check is due before then already. (Strictly after now: a
        check that re-arms itself can never spin within one instant.)"""
        interval = self.config.offsets_retention_check_interval_ms
        due = -(-max(at_ms, self.now + 1) // interval) * interval
        armed = self.expiry.deadline(group_id, GROUP_TIMER, SESSION)
        if armed is None or due < armed:
            # a SESSION "heartbeat" dated ``due`` with no timeout is a deadline at ``due``
            self.expiry.heartbeat(group_id, GROUP_TIMER, due, 0)

    def persist(self, records: tuple[StoreRecord, ...], then: OnPersisted) -> None:
        """Hand ``records`` to the shell; ``then(ok)`` runs once it reports them."""
        self.records.extend(records)
        self.on_persisted.append(then)

    def persist_group(
        self, group: Group, then: OnPersisted | None = None, as_state: GroupState | None = None
    ) -> None:
        """Persist the group's metadata as it is now; ``then(ok)`` (default: log a failure)
        runs once the shell reports it."""
        if then is None:
            gid = group.group_id

            def then(ok: bool) -> None:
                if not ok:
                    log.warning("group %s: failed to store group metadata", gid)

        self.persist((group.to_record(as_state),), then)

    # ------------------------------------------------------------------ responses

    def join_error(self, waiter: Waiter, member_id: str, error: ErrorClass) -> None:
        self.out.append(
            JoinGroupResponse(
                version=waiter.version,
                correlation=waiter.correlation,
                error=error,
                member_id=member_id,
            )
        )

    def join_success(
        self,
        group: Group,
        waiter: Waiter,
        member_id: str,
        *,
        members: tuple[JoinGroupResponseMember, ...] = (),
        leader: str | None = None,
        skip_assignment: bool = False,
        error: ErrorClass = None,
    ) -> None:
        self.out.append(
            JoinGroupResponse(
                version=waiter.version,
                correlation=waiter.correlation,
                error=error,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=(group.leader_id if leader is None else leader) or "",
                skip_assignment=skip_assignment,
                member_id=member_id,
                members=members,
            )
        )

    def sync_error(self, waiter: Waiter, error: ErrorClass) -> None:
        self.out.append(
            SyncGroupResponse(version=waiter.version, correlation=waiter.correlation, error=error)
        )

    # ------------------------------------------------------------------ membership

    def supersede_join(self, member: Member, old: Waiter | None) -> None:
        """A member's parked JoinGroup replaced by a newer one is answered, not dropped
        (Kafka drops it: its connection is gone by then; here every request gets exactly
        one response). REBALANCE_IN_PROGRESS makes a client that still waits rejoin."""
        if old is not None:
            self.join_error(old, member.member_id, RebalanceInProgressError)

    def add_member_and_rebalance(
        self,
        group: Group,
        member: Member,
        waiter: Waiter,
        reason: str,
    ) -> None:
        """A new member joins (Kafka's ``addMemberAndRebalance``)."""
        log.info(
            "group %s: member %s joins in state %s (client id %s, host %s)",
            group.group_id,
            member.member_id,
            group.state.value,
            member.client_id,
            member.client_host,
            extra={
                "group": group.group_id,
                "member": member.member_id,
                "client_id": member.client_id,
                "client": member.client_host,
            },
        )
        member.is_new = True
        if group.state is _PREPARING and group.previous_state is _EMPTY:
            # The initial rebalance may be extended by one more delay.
            group.new_member_added = True
        member.join_waiter = waiter
        group.add(member)
        # A new member cannot heartbeat while its JoinGroup is parked; it expires after
        # the new-member join timeout instead (KAFKA-7610).
        self.schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self.maybe_prepare_rebalance(group, reason)

    def drop_member(self, group: Group, member: Member) -> None:
        """Remove a member and its deadlines; answer its parked requests UNKNOWN_MEMBER_ID."""
        waiter = group.set_join_waiter(member, None)
        if waiter is not None:
            self.join_error(waiter, UNKNOWN_MEMBER_ID, UnknownMemberIdError)
        sync_waiter = member.sync_waiter
        if sync_waiter is not None:
            member.sync_waiter = None
            self.sync_error(sync_waiter, UnknownMemberIdError)
        group.remove(member.member_id)
        self.expiry.clear(group.group_id, member.member_id)

    def remove_member_and_update_group(
        self, group: Group, member: Member, cause: RemovalCause, reason: str
    ) -> None:
        """A member leaves or expires (Kafka's ``removeMemberAndUpdateGroup``)."""
        log.info(
            "group %s: removing member %s (%s)",
            group.group_id,
            member.member_id,
            reason,
            extra={"group": group.group_id, "member": member.member_id, "cause": cause.value},
        )
        self.member_removed(group, member, cause, reason)
        self.drop_member(group, member)
        if group.state in (_STABLE, _COMPLETING):
            self.maybe_prepare_rebalance(group, reason)
        elif group.state is _PREPARING:
            self.try_complete_join(group)

    def remove_pending_member(self, group: Group, member_id: str) -> None:
        group.remove(member_id)
        self.expiry.clear(group.group_id, member_id)
        if group.state is _PREPARING:
            self.try_complete_join(group)

    def remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.pop(member_id, None)
        if not group.pending_sync:
            self.expiry.clear(group.group_id, GROUP_TIMER, SYNC)

    # ------------------------------------------------------------------ rebalance

    def maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if can_rebalance(group.state):
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: Group, reason: str) -> None:
        """Enter PreparingRebalance: cancel the sync phase, arm the join-phase deadline."""
        if group.state is _COMPLETING:
            self.reset_and_propagate_assignment_error(group, RebalanceInProgressError)
        group.pending_sync.clear()
        self.expiry.clear(group.group_id, GROUP_TIMER, SYNC)
        initial = group.state is _EMPTY
        log.info(
            "group %s: preparing to rebalance in state %s with old generation %d (reason: %s)",
            group.group_id,
            group.state.value,
            group.generation_id,
            reason,
            extra={"group": group.group_id, "generation": group.generation_id},
        )
        # a rebalance restarted before it completed keeps its first start and cause
        self.rebalances_started.setdefault(group.group_id, (self.now, reason))
        group.transition_to(_PREPARING, self.now)
        if initial:
            # group.initial.rebalance.delay.ms: wait for more members of a new group.
            delay = self.config.group_initial_rebalance_delay_ms
            group.initial_delay = (delay, max(group.rebalance_timeout_ms() - delay, 0))
            group.new_member_added = False
            self.expiry.expect_join(group.group_id, GROUP_TIMER, self.now + delay)
        else:
            group.initial_delay = None
            if group.has_all_members_joined():
                self.complete_join(group)
            else:
                deadline = self.now + group.rebalance_timeout_ms()
                self.expiry.expect_join(group.group_id, GROUP_TIMER, deadline)

    def try_complete_join(self, group: Group) -> None:
        """Complete the join phase now if every member has rejoined (never during the
        initial rebalance delay, which always runs to its end)."""
        if (
            group.state is _PREPARING
            and group.initial_delay is None
            and group.has_all_members_joined()
        ):
            self.complete_join(group)

    def complete_join(self, group: Group) -> None:
        """End the join phase (Kafka's ``onCompleteJoin``)."""
        gid = group.group_id
        self.expiry.clear(gid, GROUP_TIMER, JOIN)
        group.initial_delay = None
        dropped = [m for m in group.not_yet_rejoined() if not m.is_static]
        for member in dropped:
            self.member_removed(
                group,
                member,
                RemovalCause.NOT_REJOINED,
                "did not rejoin within the rebalance timeout",
            )
            self.drop_member(group, member)
        if dropped:
            log.info(
                "group %s: removed dynamic members that did not rejoin: %s",
                gid,
                [m.member_id for m in dropped],
            )
        if group.members and not group.maybe_elect_new_joined_leader():
            # Only static members that have not rejoined are left: wait another rebalance
            # timeout (their sessions will expire if they are gone).
            log.error("group %s: cannot complete the rebalance: no member rejoined", gid)
            self.expiry.expect_join(gid, GROUP_TIMER, self.now + group.rebalance_timeout_ms())
            return
        group.init_next_generation(self.now)
        self._rebalance_completed(group)
        if group.state is _EMPTY:
            log.info(
                "group %s: generation %d is empty",
                gid,
                group.generation_id,
                extra={"group": gid, "generation": group.generation_id},
            )
            self.persist_group(group)
            self.check_retention(gid)  # KIP-211: its offsets' retention starts now
            return
        log.info(
            "group %s: stabilized generation %d (protocol %s) with %d members",
            gid,
            group.generation_id,
            group.protocol_name,
            group.size,
            extra={"group": gid, "generation": group.generation_id, "members": group.size},
        )
        leader_members = group.current_member_metadata()
        leader = group.leader_id or ""
        for member in group.members.values():
            waiter = group.set_join_waiter(member, None)
            if waiter is not None:
                is_leader = member.member_id == leader
                self.join_success(
                    group,
                    waiter,
                    member.member_id,
                    members=leader_members if is_leader else (),
                    leader=leader,
                )
            self.schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync[member.member_id] = None
        self.expiry.expect_sync(gid, GROUP_TIMER, self.now + group.rebalance_timeout_ms())

    def _rebalance_completed(self, group: Group) -> None:
        started, reason = self.rebalances_started.pop(group.group_id, (self.now, "unknown"))
        event = RebalanceCompleted(
            group_id=group.group_id,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader_id=group.leader_id,
            members=tuple(group.members),
            reason=reason,
            started_ms=started,
            completed_ms=self.now,
        )
        self.events.append(event)

    def member_removed(
        self, group: Group, member: Member, cause: RemovalCause, reason: str
    ) -> None:
        event = MemberRemoved(
            group_id=group.group_id,
            member_id=member.member_id,
            group_instance_id=member.group_instance_id,
            cause=cause,
            reason=reason,
            at_ms=self.now,
        )
        self.events.append(event)

    def reset_and_propagate_assignment_error(self, group: Group, error: ErrorClass) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: Group, error: ErrorClass) -> None:
        """Answer every parked SyncGroup; their sessions restart now."""
        if error is None:
            ptype, pname = group.protocol_type, group.protocol_name
        else:
            ptype = pname = None
        for member in group.members.values():
            waiter = member.sync_waiter
            if waiter is None:
                continue
            member.sync_waiter = None
            self.out.append(
                SyncGroupResponse(
                    version=waiter.version,
                    correlation=waiter.correlation,
                    error=error,
                    protocol_type=ptype,
                    protocol_name=pname,
                    assignment=member.assignment,
                )
            )
            self.schedule_heartbeat(group, member)

    # ------------------------------------------------------------------ deadlines

    def expire(self, now_ms: int) -> None:
        """Move time to ``now_ms`` and act on every deadline that passed.

        A deadline re-armed while an earlier one of the same batch was handled is stale
        and skipped; one that falls due at ``now_ms`` because of this batch fires on the
        next call (``next_deadline`` reports it), so one call never loops.
        """
        self.now = now_ms
        expiry = self.expiry
        for e in expiry.expire(now_ms):
            gid, mid, kind = e.group, e.member, e.kind
            if expiry.deadline(gid, mid, kind) is not None:
                continue
            if mid == GROUP_TIMER and kind == SESSION:
                if self.on_retention_deadline is not None:
                    self.on_retention_deadline(gid)
                continue
            group = self.groups.get(gid)
            if group is None:
                if gid in self.consumer_groups and self.on_consumer_deadline is not None:
                    self.on_consumer_deadline(gid, mid, kind)
                continue
            if mid == GROUP_TIMER:
                if kind == JOIN:
                    self.on_join_deadline(group)
                elif kind == SYNC:
                    self.on_sync_deadline(group)
            elif kind == SESSION:
                self.on_session_deadline(group, mid)
            elif kind == JOIN and mid in group.pending_members:
                log.info("group %s: pending member %s expired", gid, mid)
                self.remove_pending_member(group, mid)

    def on_session_deadline(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None:
            return  # already gone (KAFKA-8896)
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            # Kafka's hasSatisfiedHeartbeat: a member parked in a rebalance cannot
            # heartbeat; its session restarts when the rebalance answers it.
            return
        self.remove_member_and_update_group(
            group, member, RemovalCause.SESSION_TIMEOUT, "heartbeat expiration"
        )

    def on_join_deadline(self, group: Group) -> None:
        if group.state is not _PREPARING:
            return
        if group.initial_delay is not None:
            delay, remaining = group.initial_delay
            if group.new_member_added and remaining != 0:
                # Another member arrived: wait one more delay, within the rebalance timeout.
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
                group.initial_delay = (next_delay, max(remaining - delay, 0))
                self.expiry.expect_join(group.group_id, GROUP_TIMER, self.now + next_delay)
                return
        self.complete_join(group)

    def on_sync_deadline(self, group: Group) -> None:
        if group.state not in (_COMPLETING, _STABLE) or not group.pending_sync:
            return
        missing = list(group.pending_sync)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is None:
                group.remove(member_id)
            else:
                self.member_removed(
                    group, member, RemovalCause.NOT_SYNCED, "did not send SyncGroup in time"
                )
                self.drop_member(group, member)
        self.prepare_rebalance(group, f"members {missing} did not send SyncGroup in time")
