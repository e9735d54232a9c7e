"""Which requests make the gateway withdraw a group from the native shell."""

from __future__ import annotations

from groupcoord.coordinator import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from groupcoord.coordinator.consumer_messages import ConsumerGroupHeartbeatRequest
from groupcoord.server.native_heartbeats import groups_changed_by


def test_reads_heartbeats_and_commits_change_no_group() -> None:
    for request in (
        HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="m"),
        OffsetCommitRequest(
            version=8, group_id="g", generation_id_or_member_epoch=1, member_id="m", topics=()
        ),
        OffsetFetchRequest(version=7, group_id="g"),
        DescribeGroupsRequest(version=5, groups=("g",)),
        ListGroupsRequest(version=4),
    ):
        assert groups_changed_by(request) == (), request


def test_membership_requests_name_their_groups() -> None:
    join = JoinGroupRequest(
        version=5,
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=(("range", b""),),
    )
    sync = SyncGroupRequest(version=3, group_id="g", generation_id=1, member_id="m")
    leave = LeaveGroupRequest(version=3, group_id="g", members=(MemberIdentity(member_id="m"),))
    consumer = ConsumerGroupHeartbeatRequest(
        version=0, group_id="c", member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=("t",), topic_partitions=(),
    )  # fmt: skip
    assert [groups_changed_by(r) for r in (join, sync, leave, consumer)] == [
        ("g",),
        ("g",),
        ("g",),
        ("c",),
    ]
    assert groups_changed_by(DeleteGroupsRequest(version=2, groups_names=("a", "b"))) == (
        "a",
        "b",
    )
