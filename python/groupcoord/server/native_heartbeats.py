"""What the gateway tells a native shell that answers heartbeats itself
(:class:`groupcoord._core.NetShell`, see :mod:`groupcoord.server.native_listener`), and
which requests may change a group.

The shell answers the heartbeats of members the coordinator found current (it *admits*
them after answering one), so the coordinator must keep it honest:

- before a request that may change a group (anything but Heartbeat, OffsetCommit,
  OffsetFetch, OffsetDelete and the reads), the shell forgets that group's members
  (:func:`groups_changed_by`);
- after a call that removed members (session expiry), their groups; after a failed write
  or a change of topics, everyone;
- before every coordinator call at ``now_ms``, the sessions the shell refreshed are
  applied to the coordinator's ``MemberExpiry`` (``sync_expiry``), so its deadlines are
  exact whenever it looks at them.

Why this is enough is in ``rust/src/net/fast_heartbeats.rs``.
"""

from __future__ import annotations

from groupcoord.coordinator import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from groupcoord.coordinator.consumer_messages import ConsumerGroupDescribeRequest
from groupcoord.coordinator.output import CoordinatorRequest

__all__ = ["groups_changed_by"]


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
