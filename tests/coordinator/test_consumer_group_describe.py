"""ConsumerGroupDescribe (API 69) through GroupCoordinator, as Kafka 4.x's
``GroupMetadataManager.consumerGroupDescribe`` and ``ConsumerGroup.asDescribedGroup``
answer it: epochs, state, the preferred assignor, each member's current and target
assignment by topic id and name, GROUP_ID_NOT_FOUND with Kafka's messages otherwise."""

from __future__ import annotations

from consumer_harness import REBALANCE_MS, ConsumerHarness, topic_id

from groupcoord.coordinator import JoinGroupRequest
from groupcoord.coordinator.admin import GROUP_OPERATIONS
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedTopicPartitions,
)
from groupcoord.errors import GroupIdNotFoundError


def describe(
    h: ConsumerHarness, *groups: str, ops: bool = False
) -> tuple[DescribedConsumerGroup, ...]:
    request = ConsumerGroupDescribeRequest(
        version=1, correlation="d", group_ids=groups, include_authorized_operations=ops
    )
    (resp,) = h.shell.handle(request, h.now)
    assert isinstance(resp, ConsumerGroupDescribeResponse)
    return resp.groups


def parts(topic: str, *partitions: int) -> DescribedTopicPartitions:
    return DescribedTopicPartitions(
        topic_id=topic_id(topic), topic_name=topic, partitions=partitions
    )


def test_a_reconciling_member_shows_its_current_and_target_assignments() -> None:
    h = ConsumerHarness({"orders": 4})
    h.join("a", rack_id="r1", client_id="cid", client_host="/10.0.0.1")
    h.join("b", server_assignor="range")
    (group,) = describe(h, "g")
    assert group.error is None
    assert (group.group_state, group.group_epoch, group.assignment_epoch) == ("Reconciling", 2, 2)
    assert group.assignor_name == "range"  # the one the members ask for
    a, b = sorted(group.members, key=lambda m: m.member_id)
    # a still owns all four until it acknowledges revoking two of them
    assert (a.member_epoch, a.rack_id, a.client_id, a.client_host) == (1, "r1", "cid", "/10.0.0.1")
    assert a.assignment == (parts("orders", 0, 1, 2, 3),)
    assert a.target_assignment == (parts("orders", 0, 1),)
    assert b.assignment == () and b.target_assignment == (parts("orders", 2, 3),)
    assert a.subscribed_topic_names == ("orders",) and a.member_type == b.member_type == 1
    assert group.authorized_operations == -(2**31)
    (with_ops,) = describe(h, "g", ops=True)
    assert with_ops.authorized_operations == GROUP_OPERATIONS


def test_groups_that_are_not_consumer_groups_are_not_found() -> None:
    h = ConsumerHarness({"orders": 1})
    h.shell.handle(
        JoinGroupRequest(
            version=9,
            correlation="j",
            group_id="classic",
            member_id="",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=REBALANCE_MS,
            protocol_type="consumer",
            protocols=(("range", b""),),
        ),
        h.now,
    )
    missing, classic = describe(h, "missing", "classic")
    assert (missing.error, missing.error_message) == (
        GroupIdNotFoundError,
        "Group missing not found.",
    )
    assert (classic.error, classic.error_message) == (
        GroupIdNotFoundError,
        "Group classic is not a consumer group.",
    )
    assert missing.members == () and missing.group_state == ""


def test_a_deleted_topic_drops_out_of_the_description() -> None:
    h = ConsumerHarness({"orders": 2, "audit": 1})
    h.join("a", topics=("orders", "audit"))
    (group,) = describe(h, "g")
    assert group.members[0].assignment == (parts("audit", 0), parts("orders", 0, 1))
    h.set_topics({"orders": 2})
    (group,) = describe(h, "g")
    # the member has not heartbeated since: its assignment still names audit, which
    # Kafka leaves out once the topic is gone from the image
    assert group.members[0].assignment == (parts("orders", 0, 1),)
    assert group.group_state == "Assigning" and group.group_epoch == 2
