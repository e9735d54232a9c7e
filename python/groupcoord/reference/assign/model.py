"""The group as the assignment algorithms see it: dense integers, no strings.

Topics are interned in sorted-name order and partitions numbered densely, topic
by topic, so dense-id order is (topic, partition) order: ``offsets[t]`` is the
first dense id of topic ``t`` and ``offsets[t + 1]`` one past its last.
Members are indexed in sorted member-id order, which makes every algorithm's
output independent of the order of the caller's dicts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from groupcoord.errors import InvalidAssignorInput
from groupcoord.reference.assign.rack import Racks, intern_racks

# Kafka partition counts are int32 on the wire.
MAX_PARTITIONS_PER_TOPIC = 2**31 - 1
# The Rust core numbers a group's partitions densely in a u32 with u32::MAX meaning "no
# owner" (rust/src/assign/model.rs); the reference holds the same limit so both refuse alike.
MAX_PARTITIONS_PER_GROUP = 2**32 - 2


@dataclass(frozen=True, slots=True)
class MemberInput:
    """One member as an algorithm needs it, before interning."""

    member_id: str
    topics: Sequence[str]
    owned: Sequence[tuple[str, int]]
    generation: int = -1
    group_instance_id: str | None = None
    #: Subscription v3 ``rack_id``; None and ``""`` both mean no rack (as in Java)
    rack: str | None = None


@dataclass(slots=True)
class GroupModel:
    topic_names: list[str]
    offsets: list[int]
    member_ids: list[str]
    instance_ids: list[str | None]
    #: per member: sorted, distinct ids of the existing topics it subscribes to
    member_topics: list[list[int]]
    #: per member: valid claims (existing topic, partition in range), distinct, any topic
    claims: list[list[int]]
    #: per member: the subset of ``claims`` on topics the member still subscribes to
    subscribed_claims: list[list[int]]
    generations: list[int]
    #: KIP-881 rack data; None unless some member and some partition have a rack
    racks: Racks | None = None

    @property
    def num_partitions(self) -> int:
        return self.offsets[-1]

    @property
    def num_members(self) -> int:
        return len(self.member_ids)

    @property
    def num_topics(self) -> int:
        return len(self.topic_names)

    def partitions_of(self, t: int) -> range:
        return range(self.offsets[t], self.offsets[t + 1])

    def topic_of(self, dense: int) -> int:
        """The topic id of a dense partition id (binary search over ``offsets``)."""
        lo, hi = 0, len(self.topic_names)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.offsets[mid] <= dense:
                lo = mid
            else:
                hi = mid
        return lo

    def subscribers(self) -> list[list[int]]:
        """Per topic id: the member indexes subscribed to it, ascending."""
        subs: list[list[int]] = [[] for _ in self.topic_names]
        for m, topics in enumerate(self.member_topics):
            for t in topics:
                subs[t].append(m)
        return subs


def validate_partitions_per_topic(partitions_per_topic: Mapping[str, int]) -> list[str]:
    """Check the topic table and return the topic names sorted."""
    for topic, count in partitions_per_topic.items():
        if not isinstance(topic, str):
            raise InvalidAssignorInput(f"topic names must be str, got {type(topic).__name__}")
        if isinstance(count, bool) or not isinstance(count, int):
            raise InvalidAssignorInput(
                f"partition count of topic {topic!r} must be an int, got {type(count).__name__}"
            )
        if count < 0:
            raise InvalidAssignorInput(f"topic {topic!r} has a negative partition count ({count})")
        if count > MAX_PARTITIONS_PER_TOPIC:
            raise InvalidAssignorInput(f"topic {topic!r} has more partitions than an int32 holds")
    names = sorted(partitions_per_topic)
    total = 0
    for name in names:
        total += partitions_per_topic[name]
        if total > MAX_PARTITIONS_PER_GROUP:
            raise InvalidAssignorInput(
                f"topic {name!r} takes the group past the partition limit"
                f" ({MAX_PARTITIONS_PER_GROUP} partitions in all)"
            )
    return names


def build_model(
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberInput],
    partition_racks: Sequence[tuple[str, int, list[str]]] = (),
) -> GroupModel:
    """Intern topics and members; drop what Kafka's assignors ignore.

    Subscriptions to topics missing from ``partitions_per_topic`` are skipped (the
    Java assignors log and skip them too); owned partitions of missing topics or
    outside a topic's range are ignored, and so are such ``partition_racks`` entries
    (``(topic, partition, racks)``, from ``rack.read_partition_racks``).
    """
    names = validate_partitions_per_topic(partitions_per_topic)
    topic_index = {name: t for t, name in enumerate(names)}
    offsets = [0]
    for name in names:
        offsets.append(offsets[-1] + partitions_per_topic[name])

    ordered = sorted(members, key=lambda m: m.member_id)
    seen: set[str] = set()
    for member in ordered:
        if not isinstance(member.member_id, str) or not member.member_id:
            raise InvalidAssignorInput("member ids must be non-empty strings")
        if member.member_id in seen:
            raise InvalidAssignorInput(f"duplicate member id {member.member_id!r}")
        seen.add(member.member_id)

    member_topics: list[list[int]] = []
    claims: list[list[int]] = []
    subscribed_claims: list[list[int]] = []
    for member in ordered:
        topics = sorted({topic_index[t] for t in member.topics if t in topic_index})
        member_topics.append(topics)
        subscribed = set(topics)
        mine: list[int] = []
        mine_subscribed: list[int] = []
        distinct: set[int] = set()
        for tp in member.owned:
            topic, partition = owned_claim(tp, member.member_id)
            t = topic_index.get(topic)
            if t is None or not 0 <= partition < offsets[t + 1] - offsets[t]:
                continue
            dense = offsets[t] + partition
            if dense in distinct:
                continue
            distinct.add(dense)
            mine.append(dense)
            if t in subscribed:
                mine_subscribed.append(dense)
        claims.append(mine)
        subscribed_claims.append(mine_subscribed)

    dense_racks = [
        (offsets[topic_index[topic]] + partition, racks)
        for topic, partition, racks in partition_racks
        if topic in topic_index and racks and 0 <= partition < partitions_per_topic[topic]
    ]
    return GroupModel(
        racks=intern_racks([m.rack for m in ordered], dense_racks, offsets[-1]),
        topic_names=names,
        offsets=offsets,
        member_ids=[m.member_id for m in ordered],
        instance_ids=[m.group_instance_id for m in ordered],
        member_topics=member_topics,
        claims=claims,
        subscribed_claims=subscribed_claims,
        generations=[m.generation for m in ordered],
    )


def owned_claim(tp: object, member_id: str) -> tuple[str, int]:
    """One owned partition as a ``(topic, partition)`` pair, or InvalidAssignorInput: a tuple
    of a str and an int32 (Kafka's partition index type; no member can own another).

    The Rust core refuses the same claims with the same message (``bad_claim`` in
    rust/src/bindings/assign_input.rs)."""
    if isinstance(tp, tuple) and len(tp) == 2:
        topic, partition = tp
        if (
            isinstance(topic, str)
            and isinstance(partition, int)
            and not isinstance(partition, bool)
            and -(2**31) <= partition <= MAX_PARTITIONS_PER_TOPIC
        ):
            return topic, partition
    raise InvalidAssignorInput(
        f"owned partitions of {member_id!r} must be (str, int32) pairs, got {tp!r}"
    )
