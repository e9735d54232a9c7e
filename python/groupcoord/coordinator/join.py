"""JoinGroup (v0-v9), as Kafka's classic coordinator handles it.

- v0: no rebalance timeout; the session timeout is used (KIP-62 added it in v1).
- v4+: a dynamic member without an id gets MEMBER_ID_REQUIRED and a fresh id, and becomes
  a *pending* member that must rejoin with it within its session timeout (KIP-394).
- v5+: static membership (KIP-345): an unknown-id join with a known group.instance.id
  replaces the old member id (its parked requests get FENCED_INSTANCE_ID); in a Stable group
  whose selected protocol would not change there is no rebalance.
- v8+: a reason, truncated to 255 characters and logged (KIP-800).
- v9+: the leader rejoining statically in a Stable group is told it is the leader but
  must skip the assignment (KIP-814).
"""

from __future__ import annotations

import logging
from functools import partial

from groupcoord.coordinator.group import Group, Member, Waiter
from groupcoord.coordinator.messages import UNKNOWN_MEMBER_ID, JoinGroupRequest
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    UnknownMemberIdError,
)

__all__ = ["MAX_REASON_LENGTH", "handle_join_group", "join_reason"]

log = logging.getLogger("groupcoord.coordinator")

#: KIP-800: reasons are cut to this many characters.
MAX_REASON_LENGTH = 255

_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD


def join_reason(reason: str | None) -> str:
    """The client's reason as logged: truncated to 255 characters, or "not provided"."""
    if not reason:
        return "not provided"
    return reason[:MAX_REASON_LENGTH]


def _accept_joining_member(group: Group, member_id: str, max_size: int) -> bool:
    """group.max.size (Kafka's ``acceptJoiningMember``)."""
    state = group.state
    if state is _EMPTY or state is _DEAD:
        return True
    member = group.members.get(member_id)
    if state is _PREPARING:
        # Counting the members that already rejoined lets a shrunk group.max.size kick
        # out the last members to rejoin.
        return (member is not None and member.awaiting_join) or (group.num_awaiting_join < max_size)
    return member is not None or group.size < max_size


def handle_join_group(rb: Rebalancer, req: JoinGroupRequest) -> None:
    waiter = Waiter(req.correlation, req.version)
    group_id = req.group_id
    if not group_id:
        rb.join_error(waiter, req.member_id, InvalidGroupIdError)
        return
    config = rb.config
    session = req.session_timeout_ms
    if not (config.group_min_session_timeout_ms <= session <= config.group_max_session_timeout_ms):
        rb.join_error(waiter, req.member_id, InvalidSessionTimeoutError)
        return
    reason = join_reason(req.reason)
    if group_id in rb.consumer_groups and not _consumer_group_gives_way(rb, group_id):
        # Kafka 4.x lets classic members of the "consumer" protocol join a consumer group
        # (a mixed group); groupcoord keeps a group to the protocol it was made with.
        rb.join_error(waiter, req.member_id, InconsistentGroupProtocolError)
        return
    group = rb.groups.get(group_id)
    is_unknown = req.member_id == UNKNOWN_MEMBER_ID
    if group is None:
        if not is_unknown:
            rb.join_error(waiter, req.member_id, UnknownMemberIdError)
            return
        group = rb.create_group(group_id)

    if not _accept_joining_member(group, req.member_id, config.group_max_size):
        member = group.members.get(req.member_id)
        if member is not None:
            rb.drop_member(group, member)
        elif req.member_id in group.pending_members:
            group.remove(req.member_id)
            rb.expiry.clear(group_id, req.member_id)
        rb.join_error(waiter, UNKNOWN_MEMBER_ID, GroupMaxSizeReachedError)
    elif is_unknown:
        _join_new_member(rb, group, req, waiter, reason)
    else:
        _join_current_member(rb, group, req, waiter, reason)

    if group.state is _PREPARING:
        rb.try_complete_join(group)


def _consumer_group_gives_way(rb: Rebalancer, group_id: str) -> bool:
    """An empty KIP-848 consumer group becomes a classic one on a JoinGroup (its committed
    offsets stay with the id), as Kafka does; one with members does not."""
    consumer_group = rb.consumer_groups[group_id]
    if not consumer_group.is_empty():
        return False
    del rb.consumer_groups[group_id]
    rb.expiry.remove_group(group_id)
    rb.create_group(group_id).offsets.update(consumer_group.offsets)
    log.info("group %s: empty consumer group replaced by a classic group", group_id)
    return True


def _new_member(req: JoinGroupRequest, member_id: str) -> Member:
    return Member(
        member_id,
        req.group_instance_id,
        req.client_id,
        req.client_host,
        req.effective_rebalance_timeout_ms,
        req.session_timeout_ms,
        req.protocol_type,
        req.protocols,
    )


def _protocol_names(req: JoinGroupRequest) -> list[str]:
    return [name for name, _ in req.protocols]


def _join_new_member(
    rb: Rebalancer, group: Group, req: JoinGroupRequest, waiter: Waiter, reason: str
) -> None:
    if group.state is _DEAD:
        rb.join_error(waiter, UNKNOWN_MEMBER_ID, CoordinatorNotAvailableError)
        return
    if not group.supports_protocols(req.protocol_type, _protocol_names(req)):
        rb.join_error(waiter, UNKNOWN_MEMBER_ID, InconsistentGroupProtocolError)
        return
    instance_id = req.group_instance_id
    new_id = rb.member_id_for(group, req.client_id, instance_id)
    if instance_id is not None:
        old_id = group.static_members.get(instance_id)
        if old_id is not None:
            log.info(
                "group %s: static member %s rejoins with an unknown member id in %s; "
                "replacing member %s with %s (reason: %s)",
                group.group_id,
                instance_id,
                group.state.value,
                old_id,
                new_id,
                reason,
            )
            _replace_static_member(rb, group, req, waiter, old_id, new_id, reason)
        else:
            rb.add_member_and_rebalance(
                group,
                _new_member(req, new_id),
                waiter,
                f"new static member {new_id} ({instance_id}); client reason: {reason}",
            )
    elif req.version >= 4:
        # KIP-394: hand out the id; the member exists once it rejoins with it.
        group.pending_members[new_id] = None
        rb.expiry.expect_join(group.group_id, new_id, rb.now + req.session_timeout_ms)
        rb.join_error(waiter, new_id, MemberIdRequiredError)
    else:
        rb.add_member_and_rebalance(
            group,
            _new_member(req, new_id),
            waiter,
            f"new member {new_id}; client reason: {reason}",
        )


def _join_current_member(
    rb: Rebalancer, group: Group, req: JoinGroupRequest, waiter: Waiter, reason: str
) -> None:
    member_id = req.member_id
    if group.state is _DEAD:
        rb.join_error(waiter, member_id, CoordinatorNotAvailableError)
        return
    if not group.supports_protocols(req.protocol_type, _protocol_names(req)):
        rb.join_error(waiter, member_id, InconsistentGroupProtocolError)
        return
    if member_id in group.pending_members:
        if req.group_instance_id is not None:
            # Pending members are dynamic. Kafka throws (UNKNOWN_SERVER_ERROR); answer as
            # validateCurrentMember would for this instance id.
            error = rb.validate_current_member(group, member_id, req.group_instance_id)
            rb.join_error(waiter, member_id, error or UnknownMemberIdError)
            return
        rb.expiry.clear(group.group_id, member_id)
        rb.add_member_and_rebalance(
            group,
            _new_member(req, member_id),
            waiter,
            f"pending member {member_id} joins; client reason: {reason}",
        )
        return
    error = rb.validate_current_member(group, member_id, req.group_instance_id)
    if error is not None:
        rb.join_error(waiter, member_id, error)
        return
    member = group.members[member_id]
    state = group.state
    if state is _PREPARING:
        _update_member_and_rebalance(rb, group, member, req, waiter, f"rejoin; {reason}")
    elif state is _COMPLETING:
        if member.matches(req.protocols):
            # Same metadata (the first response was probably lost): answer with the
            # current generation again.
            is_leader = group.is_leader(member_id)
            rb.join_success(
                group,
                waiter,
                member_id,
                members=group.current_member_metadata() if is_leader else (),
            )
        else:
            _update_member_and_rebalance(
                rb, group, member, req, waiter, f"metadata changed; {reason}"
            )
    elif state is _STABLE:
        if group.is_leader(member_id):
            # The leader may rejoin to trigger a rebalance (e.g. topic metadata changed).
            _update_member_and_rebalance(
                rb, group, member, req, waiter, f"leader rejoins; {reason}"
            )
        elif not member.matches(req.protocols):
            _update_member_and_rebalance(
                rb, group, member, req, waiter, f"metadata changed; {reason}"
            )
        else:
            rb.join_success(group, waiter, member_id)
    else:
        log.warning(
            "group %s: member %s rejoins in unexpected state %s",
            group.group_id,
            member_id,
            state.value,
        )
        rb.join_error(waiter, member_id, UnknownMemberIdError)


def _update_member_and_rebalance(
    rb: Rebalancer,
    group: Group,
    member: Member,
    req: JoinGroupRequest,
    waiter: Waiter,
    reason: str,
) -> None:
    old = group.update_member(
        member,
        req.protocols,
        req.effective_rebalance_timeout_ms,
        req.session_timeout_ms,
        waiter,
    )
    rb.supersede_join(member, old)
    rb.maybe_prepare_rebalance(group, f"member {member.member_id}: {reason}")


def _on_static_member_persisted(
    rb: Rebalancer,
    group: Group,
    member: Member,
    waiter: Waiter,
    version: int,
    old: tuple[str, tuple[tuple[str, bytes], ...], int, int, str | None],
    ok: bool,
) -> None:
    """A static member replaced in a Stable group is on disk (or failed to get there):
    answer its JoinGroup, unless it was answered meanwhile (superseded, removed, or taken
    into a rebalance), as Kafka's ``storeGroup`` callback does."""
    if member.join_waiter is not waiter or group.members.get(member.member_id) is not member:
        return
    new_id = member.member_id
    old_id, old_protocols, old_rebalance, old_session, current_leader = old
    if not ok:
        # Not durable: put the old member id back and let the client retry.
        instance_id = member.group_instance_id
        assert instance_id is not None
        log.warning("group %s: failed to store static member %s", group.group_id, new_id)
        group.update_member(member, old_protocols, old_rebalance, old_session, None)
        group.replace_static_member(instance_id, new_id, old_id)
        rb.expiry.clear(group.group_id, new_id)
        rb.schedule_heartbeat(group, member)
        rb.join_success(
            group,
            waiter,
            UNKNOWN_MEMBER_ID,
            leader=current_leader or "",
            error=CoordinatorNotAvailableError,
        )
        return
    group.set_join_waiter(member, None)
    if version >= 9:
        # KIP-814: the leader learns it leads, but must not reassign a Stable group.
        is_leader = group.is_leader(new_id)
        rb.join_success(
            group,
            waiter,
            new_id,
            members=group.current_member_metadata() if is_leader else (),
            skip_assignment=is_leader,
        )
    else:
        # Older clients: report the old leader id, so a replaced leader does not
        # compute an assignment that a Stable group would not send out.
        rb.join_success(group, waiter, new_id, leader=current_leader or "")


def _replace_static_member(
    rb: Rebalancer,
    group: Group,
    req: JoinGroupRequest,
    waiter: Waiter,
    old_id: str,
    new_id: str,
    reason: str,
) -> None:
    """A known group.instance.id joins with an unknown member id (KIP-345)."""
    instance_id = req.group_instance_id
    assert instance_id is not None
    current_leader = group.leader_id
    member = group.members[old_id]
    # Fence the old id's parked requests at once (KAFKA-8500: two unknown static joins).
    old_join = group.set_join_waiter(member, None)
    if old_join is not None:
        rb.join_error(old_join, old_id, FencedInstanceIdError)
    old_sync = member.sync_waiter
    if old_sync is not None:
        member.sync_waiter = None
        rb.sync_error(old_sync, FencedInstanceIdError)
    group.replace_static_member(instance_id, old_id, new_id)
    rb.expiry.clear(group.group_id, old_id)
    rb.schedule_heartbeat(group, member)

    old_protocols = member.protocols
    old_rebalance = member.rebalance_timeout_ms
    old_session = member.session_timeout_ms
    # KAFKA-14009: the rejoin's timeouts (rebalance timeout included) replace the old ones.
    group.update_member(
        member,
        req.protocols,
        req.effective_rebalance_timeout_ms,
        req.session_timeout_ms,
        waiter,
    )
    state = group.state
    if state is _STABLE:
        if group.select_protocol() != group.protocol_name:
            rb.maybe_prepare_rebalance(
                group,
                f"static member {new_id} ({instance_id}) changes the selected protocol; "
                f"client reason: {reason}",
            )
            return
        log.info(
            "group %s: static member %s rejoined a Stable group without changing the "
            "selected protocol: no rebalance",
            group.group_id,
            instance_id,
        )
        rb.persist_group(
            group,
            partial(
                _on_static_member_persisted,
                rb,
                group,
                member,
                waiter,
                req.version,
                (old_id, old_protocols, old_rebalance, old_session, current_leader),
            ),
        )
    elif state is _COMPLETING:
        # The leader may already have the old id in its assignment: rebalance again.
        rb.prepare_rebalance(
            group, f"static member {new_id} ({instance_id}) replaced; client reason: {reason}"
        )
    elif state is not _PREPARING:
        raise AssertionError(
            f"group {group.group_id!r}: static member {instance_id!r} exists in state {state}"
        )
