"""KIP-848's requests: ConsumerGroupHeartbeat (API 68, v0-v1), the one request a member
sends, and ConsumerGroupDescribe (API 69, v0-v1), the admin's view of a consumer group.

Same conventions as :mod:`groupcoord.coordinator.messages`: frozen, slotted, keyword-only
dataclasses named after Kafka's JSON schema, checking their own types on construction. What
Kafka answers with an error code (an empty group id, a join without a subscription, an
unknown assignor) is *not* refused here: the coordinator answers it with the code, as a
broker does, so a wire shell can hand it any request it decoded.

Fields that a member leaves out when they did not change since its last heartbeat are
``None`` (Kafka's nullable fields), ``rebalance_timeout_ms`` is -1 then. Topics are named
by their topic ids (:class:`uuid.UUID`), as on the wire; the coordinator maps them to names
with the topic metadata it was given.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar, Final

from groupcoord.coordinator.messages import (
    UNKNOWN_MEMBER_ID,
    ErrorResponse,
    ErrorResult,
    Request,
    Response,
    _check_version,
    _int,
    _opt_str,
    _set,
    _str,
    _str_tuple,
    _tuple,
)

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ConsumerGroupDescribeRequest",
    "ConsumerGroupDescribeResponse",
    "ConsumerGroupHeartbeatRequest",
    "ConsumerGroupHeartbeatResponse",
    "DescribedConsumerGroup",
    "DescribedConsumerMember",
    "DescribedTopicPartitions",
    "TopicPartitions",
]

#: ``member_epoch`` of a member leaving the group for good.
LEAVE_GROUP_MEMBER_EPOCH: Final = -1
#: ``member_epoch`` of a static member leaving for a while (it keeps its partitions until
#: its session expires or its instance id rejoins).
LEAVE_GROUP_STATIC_MEMBER_EPOCH: Final = -2


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    """Partitions of one topic, by topic id (owned ones in a request, assigned in a response)."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.topic_id, uuid.UUID):
            raise TypeError(f"topic_id must be a uuid.UUID, not {type(self.topic_id).__name__}")
        parts = _tuple(self.partitions, "partitions")
        for p in parts:
            _int(p, "partitions[]")
        _set(self, "partitions", parts)


def _opt_topic_partitions(value: object, name: str) -> tuple[TopicPartitions, ...] | None:
    if value is None:
        return None
    items = _tuple(value, name)
    for item in items:
        if not isinstance(item, TopicPartitions):
            raise TypeError(f"{name} must contain TopicPartitions")
    return items  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatRequest(Request):
    """ConsumerGroupHeartbeat. ``member_epoch``: 0 to join, the current epoch to heartbeat,
    -1 to leave, -2 for a static member leaving for a while. v1 (KIP-1082) requires the
    member to generate its ``member_id``; v0 lets a joining member send ``""`` and get one.

    ``client_id`` and ``client_host`` come from the request header and the connection.
    """

    API_KEY: ClassVar[int] = 68
    MAX_VERSION: ClassVar[int] = 1

    group_id: str
    member_id: str = UNKNOWN_MEMBER_ID
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: tuple[TopicPartitions, ...] | None = None
    client_id: str = ""
    client_host: str = ""

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        _str(self.member_id, "member_id")
        _int(self.member_epoch, "member_epoch")
        _opt_str(self.instance_id, "instance_id")
        _opt_str(self.rack_id, "rack_id")
        _int(self.rebalance_timeout_ms, "rebalance_timeout_ms")
        if self.subscribed_topic_names is not None:
            names = _tuple(self.subscribed_topic_names, "subscribed_topic_names")
            for n in names:
                _str(n, "subscribed_topic_names[]")
            _set(self, "subscribed_topic_names", names)
        _opt_str(self.subscribed_topic_regex, "subscribed_topic_regex")
        _opt_str(self.server_assignor, "server_assignor")
        _set(
            self,
            "topic_partitions",
            _opt_topic_partitions(self.topic_partitions, "topic_partitions"),
        )
        _str(self.client_id, "client_id")
        _str(self.client_host, "client_host")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupHeartbeatResponse(ErrorResponse):
    """ConsumerGroupHeartbeat result. ``assignment`` is ``None`` when the member's
    assignment did not change and its request was not a full one (Kafka sends it only
    then); otherwise every partition the member may use now."""

    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None


# --------------------------------------------------------------------------------------
# ConsumerGroupDescribe (API 69, v0-v1)
# --------------------------------------------------------------------------------------

#: ``member_type`` of a member speaking ConsumerGroupHeartbeat (v1; 0 is a classic member
#: of a mixed group, -1 unknown, as in v0 where the field does not exist).
CONSUMER_MEMBER_TYPE: Final = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeRequest(Request):
    """ConsumerGroupDescribe: the consumer groups ``group_ids``."""

    API_KEY: ClassVar[int] = 69
    MAX_VERSION: ClassVar[int] = 1

    group_ids: tuple[str, ...] = ()
    include_authorized_operations: bool = False

    def __post_init__(self) -> None:
        _check_version(self)
        _set(self, "group_ids", _str_tuple(self.group_ids, "group_ids"))
        if not isinstance(self.include_authorized_operations, bool):
            raise TypeError("include_authorized_operations must be a bool")


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopicPartitions:
    """Partitions of one topic as ConsumerGroupDescribe names them: by id and by name."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedConsumerMember:
    """One member: its current ``assignment`` (what it may use now) and its
    ``target_assignment`` (what the assignor wants it to have)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    assignment: tuple[DescribedTopicPartitions, ...] = ()
    target_assignment: tuple[DescribedTopicPartitions, ...] = ()
    member_type: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedConsumerGroup(ErrorResult):
    """One group; a group that is not a consumer group has only ``group_id``, ``error``
    (GROUP_ID_NOT_FOUND) and ``error_message``."""

    error_message: str | None = None
    group_id: str
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    authorized_operations: int = -(2**31)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupDescribeResponse(Response):
    groups: tuple[DescribedConsumerGroup, ...] = ()
