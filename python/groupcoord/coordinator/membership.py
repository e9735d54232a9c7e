"""SyncGroup (v0-v5), Heartbeat (v0-v4) and LeaveGroup (v0-v5): the requests of members
that already joined, as Kafka's classic coordinator handles them."""

from __future__ import annotations

import logging
from functools import partial

from groupcoord.coordinator.events import RemovalCause
from groupcoord.coordinator.group import Group, Waiter
from groupcoord.coordinator.messages import (
    UNKNOWN_MEMBER_ID,
    ErrorClass,
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)

__all__ = ["handle_heartbeat", "handle_leave_group", "handle_sync_group"]

log = logging.getLogger("groupcoord.coordinator")

_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD


# ------------------------------------------------------------------------------ SyncGroup


def _validate_sync(rb: Rebalancer, group: Group, req: SyncGroupRequest) -> ErrorClass:
    if group.state is _DEAD:
        return CoordinatorNotAvailableError
    error = rb.validate_current_member(group, req.member_id, req.group_instance_id)
    if error is not None:
        return error
    if req.generation_id != group.generation_id:
        return IllegalGenerationError
    if req.protocol_type is not None and req.protocol_type != group.protocol_type:
        return InconsistentGroupProtocolError
    if req.protocol_name is not None and req.protocol_name != group.protocol_name:
        return InconsistentGroupProtocolError
    return None


def handle_sync_group(rb: Rebalancer, req: SyncGroupRequest) -> None:
    waiter = Waiter(req.correlation, req.version)
    if not req.group_id:
        rb.sync_error(waiter, InvalidGroupIdError)
        return
    if req.version >= 5 and (req.protocol_type is None or req.protocol_name is None):
        # v5 made both mandatory (Kafka's KafkaApis checks this before the coordinator).
        rb.sync_error(waiter, InconsistentGroupProtocolError)
        return
    group = rb.groups.get(req.group_id)
    if group is None:
        rb.sync_error(waiter, UnknownMemberIdError)
        return
    error = _validate_sync(rb, group, req)
    if error is not None:
        rb.sync_error(waiter, error)
        return
    state = group.state
    if state is _EMPTY:
        rb.sync_error(waiter, UnknownMemberIdError)
    elif state is _PREPARING:
        rb.sync_error(waiter, RebalanceInProgressError)
    elif state is _COMPLETING:
        member = group.members[req.member_id]
        old = member.sync_waiter
        member.sync_waiter = waiter
        if old is not None:
            rb.sync_error(old, RebalanceInProgressError)  # superseded, see supersede_join
        rb.remove_pending_sync(group, req.member_id)
        if group.is_leader(req.member_id):
            _complete_sync(rb, group, req)
    elif state is _STABLE:
        member = group.members[req.member_id]
        rb.remove_pending_sync(group, req.member_id)
        rb.out.append(
            SyncGroupResponse(
                version=req.version,
                correlation=req.correlation,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                assignment=member.assignment,
            )
        )
        rb.schedule_heartbeat(group, member)


def _complete_sync(rb: Rebalancer, group: Group, req: SyncGroupRequest) -> None:
    """The leader's assignment: persist it; once persisted, send every member its part."""
    assignments = dict(req.assignments)
    missing = [m for m in group.members if m not in assignments]
    if missing:
        log.warning(
            "group %s generation %d: empty assignment for members %s",
            group.group_id,
            group.generation_id,
            missing,
        )
    for member_id, member in group.members.items():
        member.assignment = assignments.get(member_id, b"")
    log.info(
        "group %s: assignment received from leader %s for generation %d",
        group.group_id,
        req.member_id,
        group.generation_id,
    )
    rb.persist_group(
        group, partial(_on_assignment_persisted, rb, group, group.generation_id), _STABLE
    )


def _on_assignment_persisted(rb: Rebalancer, group: Group, generation: int, ok: bool) -> None:
    """The leader's assignment is on disk (or failed to get there): answer the parked
    SyncGroups, unless the generation has moved on meanwhile (a rebalance answered them
    already), as Kafka's ``storeGroup`` callback does."""
    if (
        group.state is not _COMPLETING
        or group.generation_id != generation
        or rb.groups.get(group.group_id) is not group
    ):
        return
    if not ok:
        log.warning("group %s: failed to store the group assignment", group.group_id)
        rb.reset_and_propagate_assignment_error(group, CoordinatorNotAvailableError)
        rb.maybe_prepare_rebalance(group, "failed to store the group assignment")
        return
    group.transition_to(_STABLE, rb.now)
    rb.propagate_assignment(group, None)


# ------------------------------------------------------------------------------ Heartbeat


def current_session_timeout(
    rb: Rebalancer,
    group_id: str,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
) -> int | None:
    """The session timeout of a current member of a Stable group (its generation, and its
    ``group.instance.id`` if it gives one): a heartbeat of it is answered with no error
    and a session refresh. ``None`` for every other case."""
    group = rb.groups.get(group_id)
    if group is None or group.state is not _STABLE or generation_id != group.generation_id:
        return None
    member = group.members.get(member_id)
    if member is None or (
        group_instance_id is not None and group.static_members.get(group_instance_id) != member_id
    ):
        return None
    return member.session_timeout_ms


def refresh_current_member(
    rb: Rebalancer,
    group_id: str,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
) -> bool:
    """Heartbeat's hot path: a current member (:func:`current_session_timeout`) has its
    session refreshed at ``rb.now``, and the answer is no error. ``False`` (nothing
    changed) for every other case."""
    timeout = current_session_timeout(rb, group_id, member_id, generation_id, group_instance_id)
    if timeout is None:
        return False
    rb.expiry.heartbeat(group_id, member_id, rb.now, timeout)
    return True


def handle_heartbeat(rb: Rebalancer, req: HeartbeatRequest) -> None:
    if refresh_current_member(
        rb, req.group_id, req.member_id, req.generation_id, req.group_instance_id
    ):
        rb.out.append(HeartbeatResponse(version=req.version, correlation=req.correlation))
        return
    rb.out.append(
        HeartbeatResponse(
            version=req.version, correlation=req.correlation, error=_heartbeat(rb, req)
        )
    )


def _heartbeat(rb: Rebalancer, req: HeartbeatRequest) -> ErrorClass:
    if not req.group_id:
        return InvalidGroupIdError
    group = rb.groups.get(req.group_id)
    if group is None:
        return UnknownMemberIdError
    state = group.state
    if state is _DEAD:
        return CoordinatorNotAvailableError
    member_id = req.member_id
    if req.group_instance_id is not None or member_id not in group.members:
        error = rb.validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            return error
    if req.generation_id != group.generation_id:
        return IllegalGenerationError
    if state is _EMPTY:
        return UnknownMemberIdError
    rb.expiry.heartbeat(
        req.group_id, member_id, rb.now, group.members[member_id].session_timeout_ms
    )
    return RebalanceInProgressError if state is _PREPARING else None


# ------------------------------------------------------------------------------ LeaveGroup


def handle_leave_group(rb: Rebalancer, req: LeaveGroupRequest) -> None:
    top_error: ErrorClass = None
    results: list[MemberResponse] = []
    identities = req.identities()
    group = rb.groups.get(req.group_id) if req.group_id else None
    if not req.group_id:
        top_error = InvalidGroupIdError
    elif group is None:
        results = [
            MemberResponse(
                member_id=i.member_id,
                group_instance_id=i.group_instance_id,
                error=UnknownMemberIdError,
            )
            for i in identities
        ]
    elif group.state is _DEAD:
        top_error = CoordinatorNotAvailableError
    else:
        for identity in identities:
            error = _leave_one(
                rb, group, identity.member_id, identity.group_instance_id, identity.reason
            )
            results.append(
                MemberResponse(
                    member_id=identity.member_id,
                    group_instance_id=identity.group_instance_id,
                    error=error,
                )
            )
    if req.version < 3:
        # v0-v2 carry one member's result as the top-level error.
        if top_error is None and results:
            top_error = results[0].error
        results = []
    rb.out.append(
        LeaveGroupResponse(
            version=req.version,
            correlation=req.correlation,
            error=top_error,
            members=tuple(results),
        )
    )


def _leave_one(
    rb: Rebalancer,
    group: Group,
    member_id: str,
    group_instance_id: str | None,
    reason: str | None,
) -> ErrorClass:
    why = f"LeaveGroup; client reason: {reason or 'not provided'}"
    if member_id == UNKNOWN_MEMBER_ID:
        # Administrative removal by group.instance.id alone.
        current = group.static_members.get(group_instance_id) if group_instance_id else None
        if current is None:
            return UnknownMemberIdError
        rb.remove_member_and_update_group(group, group.members[current], RemovalCause.LEFT, why)
        return None
    if member_id in group.pending_members:
        log.info("group %s: pending member %s left", group.group_id, member_id)
        rb.remove_pending_member(group, member_id)
        return None
    error = rb.validate_current_member(group, member_id, group_instance_id)
    if error is None:
        rb.remove_member_and_update_group(group, group.members[member_id], RemovalCause.LEFT, why)
    return error
