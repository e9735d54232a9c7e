"""Server-side assignors for KIP-848 consumer groups: ``uniform`` and ``range``.

In the KIP-848 protocol the group coordinator, not a member, computes the group's
target assignment whenever the group changes (a member joins, leaves or changes its
subscription, a topic gains partitions). It calls one of these assignors with the
members as the coordinator knows them and the current target assignment, and reconciles
members towards the result::

    from groupcoord.assignors.server import ServerMember, UniformAssignor

    members = {"m-1": ServerMember(topics={"orders"}, rack="eu-west-1a"), ...}
    target = UniformAssignor().assign(members, {"orders": 64}, current=target)

Input and output are plain data: ``current`` is ``{member_id: {topic: partitions}}``
(any collection of ints), the result ``{member_id: {topic: (partition, ...)}}`` with
ascending tuples, so a result can be passed back as the next ``current``. Tuples are
immutable and equal runs are one shared object (range at 10,000 members hands out a
million single-partition runs). Every member of ``members`` is in the result (with ``{}``
when it gets nothing); members of ``current`` not in ``members`` (they left) are ignored.

- :class:`UniformAssignor` (``group.consumer.assignors=uniform``, Kafka's default):
  balanced (sizes differ by at most one when subscriptions are equal; otherwise no
  partition can move to make two members more equal) and sticky: members keep what
  ``current`` gives them whenever balance allows.
- :class:`RangeAssignor` (``range``): per topic, contiguous ranges over its subscribers
  (static members first, by instance id, then by member id), so topics with equal
  partition counts are co-partitioned. Like Kafka's, it ignores ``current``: the same
  members get the same ranges.

Both are rack-aware (KIP-881 data) when members carry ``rack`` and ``partition_racks``
says which racks hold each partition's replicas: rack-local members are preferred,
never at the cost of balance. (Kafka 4.x's server-side assignors ignore racks.)

``backend="rust"`` (default) runs ``groupcoord._core``; ``backend="python"`` the
pure-Python reference (:mod:`groupcoord.reference.assign`), same output.

A coordinator keeps each group's target between computations: :class:`GroupTarget`
(``GroupTarget(UniformAssignor()).assign(members, topics)``) does that, inside the
extension with the Rust backend, so the previous target is not read back from Python
objects on every change.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from groupcoord import _core
from groupcoord.assignors.base import BackendChoice
from groupcoord.assignors.input_checks import PartitionRacks, check_partition_racks
from groupcoord.errors import InvalidAssignorInput
from groupcoord.reference import assign as reference
from groupcoord.reference.assign.model import validate_partitions_per_topic

#: ``{member_id: {topic: partitions}}``: a target assignment, as ``assign`` takes and returns it
TargetAssignment: TypeAlias = Mapping[str, Mapping[str, Collection[int]]]


@dataclass(frozen=True, slots=True)
class ServerMember:
    """A consumer-group member as the coordinator knows it (ConsumerGroupHeartbeat fields).

    ``topics``: the topic names it subscribes to (resolved from ``subscribed_topic_names``
    or ``subscribed_topic_regex``); ``rack``: its ``rack_id`` (None or ``""``: no rack);
    ``instance_id``: its ``instance_id`` (KIP-345 static membership; range orders by it).
    """

    topics: Collection[str]
    rack: str | None = None
    instance_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.topics, str) or not all(isinstance(t, str) for t in self.topics):
            raise InvalidAssignorInput(
                f"ServerMember.topics must be a collection of str, got {self.topics!r}"
            )
        for field in ("rack", "instance_id"):
            value = getattr(self, field)
            if value is not None and not isinstance(value, str):
                raise InvalidAssignorInput(
                    f"ServerMember.{field} must be str or None, got {type(value).__name__}"
                )


class ServerAssignor(BackendChoice):
    """Base of the server-side assignors; see the module documentation."""

    #: the name in ``group.consumer.assignors`` and ConsumerGroupHeartbeat's ``server_assignor``
    name: ClassVar[str]
    #: whether ``current`` shapes the result (range's does not, as Kafka's)
    reads_current: ClassVar[bool] = True

    def assign(
        self,
        members: Mapping[str, ServerMember],
        topics: Mapping[str, int],
        *,
        current: TargetAssignment | None = None,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """The new target assignment: ``{member_id: {topic: (partition, ...)}}``, ascending.

        ``topics``: partition count per topic (topics nobody subscribes to are fine;
        subscriptions to topics missing here are skipped, as topics without metadata).
        ``current``: the current target assignment; partitions of unknown topics or out of
        range are ignored, and a partition two members both hold goes to neither first.
        Range does not read it at all (Kafka's range ignores it too): it checks only that
        it is a mapping.
        ``partition_racks``: ``{TopicPartition: frozenset of racks holding a replica}``.
        Input that cannot describe a group raises
        :class:`~groupcoord.errors.InvalidAssignorInput`, the same from either backend.
        """
        rust = self.backend == "rust"
        current = self._read_current(current)
        # a dict of dicts with str keys needs no topic-by-topic check in Python
        plain = rust and type(current) is dict and _core.plain_current(current)
        _check_input(members, topics, None if plain else current)
        check_partition_racks(partition_racks)
        if rust:
            return _core.assign_server(self.name, topics, members, current, partition_racks)
        return _reference_assign(self.name, members, topics, current, partition_racks)

    def _read_current(self, current: TargetAssignment | None) -> TargetAssignment | None:
        """``current`` as this assignor reads it: itself, or ``None`` for one that ignores
        it (only its type is checked then: at 10,000 members walking its million topic
        keys costs a tenth of the assignment)."""
        if self.reads_current:
            return current
        _check_current_type(current)
        return None


class GroupTarget:
    """A group's target assignment, kept between computations: what a KIP-848 coordinator
    holds per group, recomputing it on every change sticky to the previous one.

    ``GroupTarget(assignor).assign(members, topics)`` is ``assignor.assign(members, topics,
    current=<the previous result>)``, the same output. With the Rust backend the previous
    target stays inside the extension (``_core.ServerTarget``) instead of being read back
    from Python objects on every call (after one member of 10,000 leaves, reading a
    million partition numbers was most of a recomputation's time), and while the topics
    keep their partition counts the recomputation is incremental: kept partitions go
    into the model as they are kept, and members whose partitions did not change get a
    copy of their kept ``{topic: partitions}`` instead of one built anew. Results are
    the caller's: changing them does not change the kept target.
    """

    __slots__ = ("_assignor", "_core", "_current")

    def __init__(self, assignor: ServerAssignor) -> None:
        if not isinstance(assignor, ServerAssignor):
            raise InvalidAssignorInput(
                f"GroupTarget needs a server-side assignor, got {type(assignor).__name__}"
            )
        self._assignor = assignor
        self._core = _core.ServerTarget(assignor.name) if assignor.backend == "rust" else None
        self._current: dict[str, dict[str, tuple[int, ...]]] | None = None

    @property
    def assignor(self) -> ServerAssignor:
        return self._assignor

    def assign(
        self,
        members: Mapping[str, ServerMember],
        topics: Mapping[str, int],
        *,
        partition_racks: PartitionRacks | None = None,
        current: TargetAssignment | None = None,
    ) -> dict[str, dict[str, tuple[int, ...]]]:
        """The new target (see :meth:`ServerAssignor.assign`), sticky to the kept one, which
        it then replaces. ``current``: sticky to this target instead of the kept one (the
        caller's target changed outside this object: a static member took another one's
        place, a group was read back from a store); ``assign(..., current=c)`` is
        ``assignor.assign(..., current=c)``, and its result is kept as usual. Bad input raises
        :class:`~groupcoord.errors.InvalidAssignorInput` and keeps the previous target."""
        if self._core is None:
            result = self._assignor.assign(
                members,
                topics,
                current=self._current if current is None else current,
                partition_racks=partition_racks,
            )
            # a copy of the member dicts: the caller may change the ones it gets
            self._current = {member: dict(held) for member, held in result.items()}
            return result
        current = self._assignor._read_current(current)
        plain = current is None or (type(current) is dict and _core.plain_current(current))
        _check_input(members, topics, None if plain else current)
        check_partition_racks(partition_racks)
        return self._core.assign(topics, members, partition_racks, current)

    def clear(self) -> None:
        """Forget the kept target: the next :meth:`assign` starts fresh."""
        if self._core is not None:
            self._core.clear()
        self._current = None

    def __repr__(self) -> str:
        return f"GroupTarget({self._assignor!r})"


class UniformAssignor(ServerAssignor):
    """KIP-848 ``uniform``: balanced and sticky to the current target assignment."""

    name: ClassVar[str] = "uniform"


class RangeAssignor(ServerAssignor):
    """KIP-848 ``range``: per-topic contiguous ranges, co-partitioned; ignores ``current``."""

    name: ClassVar[str] = "range"
    reads_current: ClassVar[bool] = False


def _check_current_type(current: object) -> Mapping[object, object] | None:
    """``current`` itself, if it is None or a mapping (its contents unread)."""
    if current is not None and not isinstance(current, Mapping):
        raise InvalidAssignorInput(
            "current must be a mapping of member id to {topic: partitions},"
            f" got {type(current).__name__}"
        )
    return current


def _check_input(members: object, topics: object, current: object) -> None:
    if not isinstance(topics, Mapping):
        raise InvalidAssignorInput(
            "topics must be a mapping of topic name to partition count,"
            f" got {type(topics).__name__}"
        )
    validate_partitions_per_topic(topics)
    if not isinstance(members, Mapping):
        raise InvalidAssignorInput(
            f"members must be a mapping of member id to ServerMember, got {type(members).__name__}"
        )
    for member_id, member in members.items():
        if not isinstance(member_id, str) or not member_id:
            raise InvalidAssignorInput(f"member ids must be non-empty strings, got {member_id!r}")
        if not isinstance(member, ServerMember):
            raise InvalidAssignorInput(
                f"member {member_id!r} must be a ServerMember, got {type(member).__name__}"
            )
    current = _check_current_type(current)
    if current is None:
        return
    for member_id, held in current.items():
        if not isinstance(held, Mapping):
            raise InvalidAssignorInput(
                f"current assignment of {member_id!r} must be a mapping of topic to partitions,"
                f" got {type(held).__name__}"
            )
        for topic in held:
            if not isinstance(topic, str):
                raise InvalidAssignorInput(
                    f"current assignment of {member_id!r} must map topic names (str) to"
                    f" partitions, got {topic!r}"
                )


def _held(member_id: str, held: Mapping[str, Collection[int]]) -> list[tuple[str, int]]:
    """One member's part of ``current`` as claims; what is not an int32 partition number is
    refused as ``CurrentReader::read`` in rust/src/bindings/current_input.rs refuses it."""
    claims: list[tuple[str, int]] = []
    for topic, partitions in held.items():
        for partition in partitions:
            if (
                isinstance(partition, bool)
                or not isinstance(partition, int)
                or not -(2**31) <= partition < 2**31
            ):
                raise InvalidAssignorInput(
                    f"partitions of {member_id!r} in current must be int32,"
                    f" got {partition!r} in topic {topic!r}"
                )
            claims.append((topic, partition))
    return claims


def _reference_assign(
    kind: str,
    members: Mapping[str, ServerMember],
    topics: Mapping[str, int],
    current: TargetAssignment | None,
    partition_racks: PartitionRacks | None,
) -> dict[str, dict[str, tuple[int, ...]]]:
    inputs = [
        reference.MemberInput(
            member_id=member_id,
            topics=list(member.topics),
            # range ignores current (as Kafka's), so neither backend reads it
            owned=_held(member_id, current[member_id])
            if kind != "range" and current is not None and member_id in current
            else (),
            generation=0,
            group_instance_id=member.instance_id,
            rack=member.rack,
        )
        for member_id, member in members.items()
    ]
    model = reference.build_model(topics, inputs, reference.read_partition_racks(partition_racks))
    plan = _SERVER_ALGORITHMS[kind](model)
    result: dict[str, dict[str, tuple[int, ...]]] = {}
    offsets, names = model.offsets, model.topic_names
    for m, partitions in enumerate(plan):
        runs: dict[str, list[int]] = {}
        t = 0
        for p in partitions:  # sorted, so the topic cursor only moves forward
            while offsets[t + 1] <= p:
                t += 1
            runs.setdefault(names[t], []).append(p - offsets[t])
        result[model.member_ids[m]] = {topic: tuple(ps) for topic, ps in runs.items()}
    return result


_SERVER_ALGORITHMS = {
    "uniform": reference.assign_uniform,
    "range": reference.assign_range,
}
