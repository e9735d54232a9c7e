"""The data model shared by assignors, codecs and the coordinator (docs/architecture.md,
"Data model and API contract")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    """One partition of one topic. Hashable and ordered by (topic, partition)."""

    topic: str
    partition: int


def _str_tuple(value: Sequence[str], what: str) -> tuple[str, ...]:
    # A bare string is a sequence of characters: accepting it would silently subscribe
    # to one-letter topics, the classic mistake.
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{what} must be a sequence of str, not a single {type(value).__name__}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, str):
            raise TypeError(f"{what} must contain str, got {type(item).__name__}")
    return items


@dataclass(frozen=True, slots=True)
class Subscription:
    """What a member sends in JoinGroup (ConsumerProtocolSubscription v0-v3).

    ``owned_partitions`` and ``generation_id`` (v1/v2) are what cooperative and
    sticky assignors use to keep partitions in place; ``generation_id`` -1 means
    "unknown". Owned partitions are checked by the assignors (each must be a
    ``(str, int32)`` pair), so building a subscription stays O(members), not O(partitions).
    """

    topics: Sequence[str]
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _str_tuple(self.topics, "topics"))
        if isinstance(self.owned_partitions, (str, bytes)):
            # tuple("orders") would be six one-letter claims, as with topics above
            raise TypeError(
                "owned_partitions must be a sequence of TopicPartition, not a single"
                f" {type(self.owned_partitions).__name__}"
            )
        object.__setattr__(self, "owned_partitions", tuple(self.owned_partitions))
        if isinstance(self.generation_id, bool) or not isinstance(self.generation_id, int):
            raise TypeError("generation_id must be an int")
        if not -(2**31) <= self.generation_id < 2**31:
            raise ValueError(f"generation_id {self.generation_id} does not fit an int32")
        for name in ("rack_id", "group_instance_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be str or None")
        if self.user_data is not None and not isinstance(self.user_data, (bytes, bytearray)):
            raise TypeError("user_data must be bytes or None")
        if isinstance(self.user_data, bytearray):
            object.__setattr__(self, "user_data", bytes(self.user_data))


@dataclass(frozen=True, slots=True, init=False)
class Assignment:
    """What a member receives in SyncGroup (ConsumerProtocolAssignment v0-v3).

    Built from any sequence of partitions; ``partitions`` is always a tuple, so equal
    assignments compare equal whatever the caller passed, and callers type-checked with
    ``mypy --strict`` can rely on tuple operations (the field type says so).
    """

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None

    def __init__(
        self, partitions: Sequence[TopicPartition], user_data: bytes | None = None
    ) -> None:
        if isinstance(partitions, (str, bytes)):
            raise TypeError("partitions must be a sequence of TopicPartition")
        if isinstance(user_data, bytearray):
            user_data = bytes(user_data)
        if user_data is not None and not isinstance(user_data, bytes):
            raise TypeError("user_data must be bytes or None")
        object.__setattr__(
            self, "partitions", partitions if type(partitions) is tuple else tuple(partitions)
        )
        object.__setattr__(self, "user_data", user_data)
