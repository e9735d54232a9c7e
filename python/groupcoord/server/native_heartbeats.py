"""What the gateway tells the native shells that answer heartbeats and take commits
themselves (:class:`groupcoord._core.NetShell`, see
:mod:`groupcoord.server.native_listener`): :class:`NativeShells`, which the gateway calls
around each coordinator call.

The shell answers the heartbeats of members the coordinator found current (it *admits*
them after answering one), and takes their commits when the coordinator would accept
every partition, so the coordinator must keep it honest:

- before a request that may change a group (anything but Heartbeat, OffsetCommit,
  OffsetFetch, OffsetDelete and the reads), the shell forgets that group's members
  (:func:`groups_changed_by`); then the commits it took so far are stored
  (:meth:`NativeShells.store_commits`), and only then is the request handled;
- after a call that removed members (session expiry), their groups; after a failed write
  or a change of topics, everyone (and it learns the new topics' partition counts);
- before every coordinator call at ``now_ms``, the sessions the shell refreshed are
  applied to the coordinator's ``MemberExpiry`` (``sync_expiry``, including those of
  members forgotten since the last one), so its deadlines are exact whenever it looks
  at them.

Why this is enough is in ``rust/src/net/fast_heartbeats.rs`` and
``rust/src/net/fast_commits.rs``.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

from groupcoord._core import NetShell
from groupcoord.coordinator import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    GroupCoordinator,
    HeartbeatRequest,
    HeartbeatResponse,
    ListGroupsRequest,
    MemberRemoved,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.consumer_messages import ConsumerGroupDescribeRequest
from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse, Output

__all__ = ["NativeShells", "groups_changed_by"]


#: requests that leave every group's members, generation and state as they are
_NEUTRAL: frozenset[type[object]] = frozenset(
    {
        HeartbeatRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
        OffsetDeleteRequest,
        DescribeGroupsRequest,
        ListGroupsRequest,
        ConsumerGroupDescribeRequest,
    }
)


def groups_changed_by(request: CoordinatorRequest) -> tuple[str, ...] | None:
    """The groups ``request`` may change (``()``: none); ``None``: any group."""
    if type(request) in _NEUTRAL:
        return ()
    if isinstance(request, DeleteGroupsRequest):
        return request.groups_names
    group_id = getattr(request, "group_id", None)
    return (group_id,) if isinstance(group_id, str) else None


class NativeShells:
    """The shells one gateway keeps honest (none: every call here does nothing)."""

    def __init__(self) -> None:
        self._shells: list[NetShell] = []

    def attach(self, shell: NetShell) -> None:
        self._shells.append(shell)

    def __bool__(self) -> bool:
        return bool(self._shells)

    def sync(self, coordinator: GroupCoordinator, now_ms: int) -> None:
        """Before a coordinator call at ``now_ms``: the sessions the shells refreshed go
        into its ``MemberExpiry``."""
        expiry = coordinator.member_expiry
        for shell in self._shells:
            shell.sync_expiry(expiry, now_ms)

    def before(self, request: CoordinatorRequest) -> None:
        """Before ``request`` is handled: forget the groups it may change."""
        changed = groups_changed_by(request)
        if changed is None:
            self.forget_everyone()
            return
        for group_id in changed:
            for shell in self._shells:
                shell.invalidate_group(group_id)

    def after(self, events: Iterable[object]) -> None:
        """After a call whose events removed members (expired, left): forget their
        groups."""
        for event in events:
            if isinstance(event, MemberRemoved):
                for shell in self._shells:
                    shell.invalidate_group(event.group_id)

    def forget_everyone(self) -> None:
        """A failed write, a change of topics: any group may change."""
        for shell in self._shells:
            shell.invalidate_all()

    def set_commit_topics(self, coordinator: GroupCoordinator) -> None:
        """The shells take commits to the coordinator's topics as far as its OffsetCommit
        check counts their partitions."""
        counts = coordinator.commit_topic_counts()
        for shell in self._shells:
            shell.set_commit_topics(counts)

    def store_commits(self, coordinator: GroupCoordinator) -> list[Output]:
        """The commits the shells took since the last call, handed to the coordinator to
        persist (its outputs, for the gateway to apply); each shell answers its own once
        their write is reported."""
        outputs = []
        for shell in self._shells:
            slots, commits = shell.take_commits()
            if commits:
                then = partial(shell.release_commits, slots)
                outputs.append(coordinator.store_shell_commits(commits, then))
        return outputs

    def defer_commit_wakes(self) -> None:
        """The writer started a transaction whose end takes the shells' commits: until
        then they do not wake the loop for the commits they take."""
        for shell in self._shells:
            shell.defer_commit_wakes()

    def admit(
        self,
        coordinator: GroupCoordinator,
        request: HeartbeatRequest | SyncGroupRequest,
        response: CoordinatorResponse,
    ) -> None:
        """After the coordinator answered ``request`` (a heartbeat, or a SyncGroup that
        gave the member its assignment) with no error: if the member is current in a
        Stable group (the coordinator checks), the shells answer its like heartbeats."""
        if not isinstance(response, HeartbeatResponse | SyncGroupResponse):
            return
        if response.error_code != 0:
            return
        lease = coordinator.heartbeat_lease(
            request.group_id, request.member_id, request.generation_id, request.group_instance_id
        )
        if lease is None:
            return
        timeout, handle, deadline, takes_commits = lease
        for shell in self._shells:
            shell.admit(
                request.group_id,
                request.member_id,
                request.generation_id,
                request.group_instance_id,
                timeout,
                handle,
                deadline,
                takes_commits,
            )
