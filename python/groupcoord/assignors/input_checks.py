"""What every assignor refuses, checked in one place in front of both backends.

The Rust core and the pure-Python reference must refuse the same input with the same
:class:`~groupcoord.errors.InvalidAssignorInput` message. Everything that costs O(topics +
members) is checked here, once, before either backend runs. Owned partitions (O(partitions),
the hot path) are checked by each backend as it reads them, member by member in the caller's
order: by :func:`groupcoord.reference.assign.model.owned_claim` and by ``bad_claim`` in
``rust/src/bindings/assign_input.rs``, with the same rule and the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from groupcoord.errors import InvalidAssignorInput
from groupcoord.reference.assign.model import validate_partitions_per_topic
from groupcoord.types import Subscription, TopicPartition

#: KIP-881 ``partition_racks``: the racks holding a replica of each partition. Entries are
#: checked by each backend as it reads them (O(partitions)): rust/src/bindings/assign_input.rs
#: and groupcoord.reference.assign.rack.read_partition_racks, with the same rule and text.
PartitionRacks: TypeAlias = Mapping[TopicPartition, frozenset[str]]


def check_assign_input(partitions_per_topic: object, subscriptions: object) -> None:
    """The checks of ``assign``: the topic table, member ids, Subscription values."""
    _check_topics(partitions_per_topic)
    if not isinstance(subscriptions, Mapping):
        raise InvalidAssignorInput(
            "subscriptions must be a mapping of member id to Subscription,"
            f" got {type(subscriptions).__name__}"
        )
    for member_id, sub in subscriptions.items():
        _check_member_id(member_id)
        if not isinstance(sub, Subscription):
            raise InvalidAssignorInput(
                f"subscription of {member_id!r} must be a Subscription, got {type(sub).__name__}"
            )


def check_encoded_input(
    partitions_per_topic: object, subscriptions: object, group_instance_ids: object
) -> None:
    """The checks of ``assign_encoded``: the topic table, member ids, bytes values and the
    ``group_instance_ids`` beside them."""
    _check_topics(partitions_per_topic)
    if not isinstance(subscriptions, Mapping):
        raise InvalidAssignorInput(
            "subscriptions must be a mapping of member id to subscription bytes,"
            f" got {type(subscriptions).__name__}"
        )
    for member_id, data in subscriptions.items():
        _check_member_id(member_id)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidAssignorInput(
                f"subscription of {member_id!r} must be bytes, got {type(data).__name__}"
            )
    if group_instance_ids is None:
        return
    if not isinstance(group_instance_ids, Mapping):
        raise InvalidAssignorInput(
            "group_instance_ids must be a mapping of member id to str or None,"
            f" got {type(group_instance_ids).__name__}"
        )
    for member_id, instance in group_instance_ids.items():
        if instance is not None and not isinstance(instance, str):
            raise InvalidAssignorInput(
                f"group instance id of {member_id!r} must be str or None,"
                f" got {type(instance).__name__}"
            )


def check_partition_racks(partition_racks: object) -> None:
    """``partition_racks`` is None or a mapping (its entries are each backend's to check)."""
    if partition_racks is not None and not isinstance(partition_racks, Mapping):
        raise InvalidAssignorInput(
            "partition_racks must be a mapping of TopicPartition to frozenset of rack ids,"
            f" got {type(partition_racks).__name__}"
        )


def _check_topics(partitions_per_topic: object) -> None:
    if not isinstance(partitions_per_topic, Mapping):
        raise InvalidAssignorInput(
            "partitions_per_topic must be a mapping of topic name to partition count,"
            f" got {type(partitions_per_topic).__name__}"
        )
    validate_partitions_per_topic(partitions_per_topic)


def _check_member_id(member_id: object) -> None:
    if not isinstance(member_id, str) or not member_id:
        raise InvalidAssignorInput(f"member ids must be non-empty strings, got {member_id!r}")
