"""The kafka-python and aiokafka adapters, exercised with those libraries' real classes.

No broker: cluster metadata is loaded from real MetadataResponse objects, JoinGroup members
come from real JoinGroupResponse bytes, and subscriptions/assignments are encoded and
decoded by each library's own codecs, as their consumer coordinators do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.cluster import ClusterMetadata as AioClusterMetadata
from aiokafka.coordinator.assignors.range import (
    RangePartitionAssignor as AioRangePartitionAssignor,
)
from aiokafka.coordinator.assignors.roundrobin import (
    RoundRobinPartitionAssignor as AioRoundRobinPartitionAssignor,
)
from aiokafka.coordinator.protocol import ConsumerProtocol
from aiokafka.protocol.group import JoinGroupResponse_v5
from aiokafka.protocol.metadata import MetadataResponse_v1
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaRebalanceProtocol
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.errors import KafkaConfigurationError
from kafka.protocol.consumer.group import JoinGroupResponse, SyncGroupRequest
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import MetadataResponse

from groupcoord import (
    Assignment,
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from groupcoord.assignors import aiokafka as aio_adapter
from groupcoord.assignors import kafka_python as kp_adapter
from groupcoord.protocol import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)

TOPICS = {"orders": 7, "payments": 3, "audit": 5}
ASSIGNOR_CLASSES = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
EAGER_CLASSES = [RangeAssignor, RoundRobinAssignor, StickyAssignor]

Partitions = dict[str, set[TopicPartition]]


# ----------------------------------------------------------------------------- kafka-python


def kp_metadata_response(topics: Mapping[str, int]) -> Any:
    """A kafka-python MetadataResponse for ``topics``, decoded from its own bytes."""
    v = 1
    response_cls: Any = MetadataResponse
    topic_cls = response_cls.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    response = response_cls(
        version=v,
        brokers=[
            response_cls.MetadataResponseBroker(
                version=v, node_id=0, host="127.0.0.1", port=1, rack=None
            )
        ],
        controller_id=0,
        topics=[
            topic_cls(
                version=v,
                error_code=0,
                name=name,
                is_internal=False,
                partitions=[
                    partition_cls(
                        version=v,
                        error_code=0,
                        partition_index=p,
                        leader_id=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                    )
                    for p in range(count)
                ],
            )
            for name, count in topics.items()
        ],
    )
    return response_cls.decode(response.encode(version=v), version=v)


def kp_cluster(topics: Mapping[str, int]) -> Any:
    """A kafka-python ClusterMetadata as after a metadata fetch of ``topics``."""
    cluster = ClusterMetadata()
    cluster.update_metadata(kp_metadata_response(topics))
    return cluster


def kp_members(joined: Sequence[tuple[str, str | None, Any]], *, decode: bool = True) -> list[Any]:
    """JoinGroup members as kafka-python's leader sees them.

    ``joined`` is ``(member_id, group_instance_id, metadata)`` with metadata as a member's
    ``metadata()`` returns it (or bytes). The members travel through a real v5
    JoinGroupResponse; with ``decode`` their metadata is then decoded as
    ConsumerCoordinator._perform_assignment does before it calls the assignor.
    """
    member_cls = JoinGroupResponse.JoinGroupResponseMember
    response = JoinGroupResponse(
        version=5,
        throttle_time_ms=0,
        error_code=0,
        generation_id=1,
        protocol_name="x",
        leader=joined[0][0],
        member_id=joined[0][0],
        members=[
            member_cls(
                version=5,
                member_id=member_id,
                group_instance_id=instance,
                metadata=metadata if isinstance(metadata, bytes) else metadata.encode(),
            )
            for member_id, instance, metadata in joined
        ],
    )
    members = JoinGroupResponse.decode(response.encode(version=5), version=5).members
    for member in members if decode else ():
        member.metadata = ConsumerProtocolSubscription.decode(member.metadata)
    return list(members)


def kp_sub(
    topics: Sequence[str],
    owned: Sequence[TopicPartition] = (),
    generation: int = -1,
    user_data: bytes | None = None,
    version: int = 3,
) -> Any:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in owned:
        by_topic.setdefault(topic, []).append(partition)
    item = ConsumerProtocolSubscription.TopicPartition
    fields: dict[str, Any] = {"topics": list(topics), "user_data": user_data}
    if version >= 1:
        fields["owned_partitions"] = [item(topic=t, partitions=p) for t, p in by_topic.items()]
    if version >= 2:
        fields["generation_id"] = generation
    if version >= 3:
        fields["rack_id"] = None
    return ConsumerProtocolSubscription(version=version, **fields)


def kp_partitions(assignments: Mapping[str, Any]) -> Partitions:
    return {
        m: {TopicPartition(tp.topic, tp.partition) for tp in a.partitions()}
        for m, a in assignments.items()
    }


def own_partitions(result: Mapping[str, Assignment]) -> Partitions:
    return {m: set(a.partitions) for m, a in result.items()}


@pytest.fixture
def kafka_consumer() -> Any:
    """A factory of KafkaConsumers that are closed (with their IO thread) after the test."""
    consumers: list[Any] = []

    def make(strategy: list[Any]) -> Any:
        consumer = KafkaConsumer(
            bootstrap_servers="127.0.0.1:1",
            group_id="adapter-test",
            partition_assignment_strategy=strategy,
            api_version=(2, 8),  # no version probe: construction must not need a broker
            enable_auto_commit=False,
        )
        consumers.append(consumer)
        return consumer

    threads_before = set(threading.enumerate())
    yield make
    for consumer in consumers:
        consumer.close()
    assert set(threading.enumerate()) <= threads_before


def test_adapt_rejects_non_assignors() -> None:
    with pytest.raises(TypeError):
        kp_adapter.adapt(RangePartitionAssignor)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        aio_adapter.adapt("range")  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", ASSIGNOR_CLASSES)
def test_kafka_python_name_and_protocols(cls: type[Assignor]) -> None:
    adapter = kp_adapter.adapt(cls())
    assert adapter.name == cls.name
    expected = (
        [KafkaRebalanceProtocol.COOPERATIVE]
        if cls is CooperativeStickyAssignor
        else [KafkaRebalanceProtocol.EAGER]
    )
    assert adapter.supported_protocols() == expected


@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize("cls", ASSIGNOR_CLASSES)
def test_kafka_python_assign_equals_groupcoord_assign(cls: type[Assignor], backend: str) -> None:
    """Mixed subscriptions, static members, previous ownership, a topic without metadata."""
    previous = [TopicPartition("orders", p) for p in (0, 1, 2)] + [TopicPartition("audit", 4)]
    # m-4 is on subscription v1 (no generation field): sticky members keep their previous
    # assignment in user data, cooperative ones their generation (Java's two layouts)
    user_data = (
        encode_cooperative_user_data(3)
        if cls is CooperativeStickyAssignor
        else encode_sticky_user_data(previous[:2], 3)
    )
    joined = [
        ("m-1", None, kp_sub(["orders", "payments", "audit"])),
        ("m-2", "static-b", kp_sub(["orders", "audit"], owned=previous, generation=4)),
        ("m-3", "static-a", kp_sub(["payments", "ghost"], user_data=None, version=0)),
        ("m-4", None, kp_sub(["orders", "payments", "audit"], user_data=user_data, version=1)),
    ]
    assignor = cls(backend=backend)  # type: ignore[arg-type]
    result = kp_adapter.adapt(assignor).assign(kp_cluster(TOPICS), kp_members(joined))

    subscriptions = {
        "m-1": Subscription(["orders", "payments", "audit"], user_data=None),
        "m-2": Subscription(
            ["orders", "audit"],
            owned_partitions=previous,
            generation_id=4,
            group_instance_id="static-b",
        ),
        "m-3": Subscription(["payments", "ghost"], group_instance_id="static-a"),
        "m-4": Subscription(["orders", "payments", "audit"], user_data=user_data),
    }
    expected = assignor.assign(TOPICS, subscriptions)
    assert kp_partitions(result) == own_partitions(expected)
    assert all(isinstance(a, ConsumerProtocolAssignment) for a in result.values())
    # each assignment is written at the version its member subscribed with (at most 3)
    assert [result[m].version for m in ("m-1", "m-2", "m-3", "m-4")] == [3, 3, 0, 1]


def test_kafka_python_skips_topics_without_metadata() -> None:
    joined = [("m-1", None, kp_sub(["ghost"])), ("m-2", None, kp_sub(["ghost", "payments"]))]
    result = kp_adapter.adapt(RangeAssignor()).assign(kp_cluster(TOPICS), kp_members(joined))
    assert kp_partitions(result) == {
        "m-1": set(),
        "m-2": {TopicPartition("payments", p) for p in range(3)},
    }


def test_kafka_python_accepts_undecoded_member_metadata() -> None:
    """JoinGroup members still carrying their metadata bytes are decoded first."""
    member_cls = JoinGroupResponse.JoinGroupResponseMember
    raw = [
        member_cls(member_id=m, group_instance_id=None, metadata=kp_sub(["orders"]).encode())
        for m in ("a", "b")
    ]
    result = kp_adapter.adapt(RangeAssignor()).assign(kp_cluster(TOPICS), raw)
    assert kp_partitions(result) == {
        "a": {TopicPartition("orders", p) for p in range(4)},
        "b": {TopicPartition("orders", p) for p in range(4, 7)},
    }


@settings(max_examples=60, deadline=None)
@given(
    partition_counts=st.lists(st.integers(0, 12), min_size=1, max_size=4),
    member_count=st.integers(1, 9),
    static_count=st.integers(0, 9),
    ours_cls=st.sampled_from([RangeAssignor, RoundRobinAssignor]),
)
def test_kafka_python_range_and_roundrobin_match_kafka_pythons_own(
    partition_counts: list[int], member_count: int, static_count: int, ours_cls: type[Assignor]
) -> None:
    """Uniform subscriptions: kafka-python's assignors and ours assign the same partitions.

    Static members join first: kafka-python groups static and dynamic members with
    itertools.groupby, which only works when each kind is contiguous (see the next test).
    Member ids sort against the join order and instance ids, so the ordering is exercised.
    """
    topics = {f"t{i}": n for i, n in enumerate(partition_counts)}
    cluster = kp_cluster(topics)
    own_cls = RangePartitionAssignor if ours_cls is RangeAssignor else RoundRobinPartitionAssignor
    joined = [
        (
            f"member-{member_count - i}",
            f"instance-{i}" if i < static_count else None,
            kp_sub(list(topics)),
        )
        for i in range(member_count)
    ]
    ours = kp_adapter.adapt(ours_cls()).assign(cluster, kp_members(joined))
    theirs = own_cls().assign(cluster, kp_members(joined))
    assert kp_partitions(ours) == kp_partitions(theirs)


def test_kafka_python_static_members_interleaved_with_dynamic_ones() -> None:
    """Java's order whatever the join order: static members by instance id, then dynamic ones.

    (kafka-python's own Range/RoundRobin lose the dynamic members that joined before a
    static one here: their groupby keeps only the last run of each kind.)
    """
    joined = [
        ("d-2", None, kp_sub(["orders"])),
        ("s-1", "instance-b", kp_sub(["orders"])),
        ("d-1", None, kp_sub(["orders"])),
        ("s-2", "instance-a", kp_sub(["orders"])),
    ]
    result = kp_adapter.adapt(RangeAssignor()).assign(kp_cluster(TOPICS), kp_members(joined))
    # 7 partitions over instance-a, instance-b, d-1, d-2: 2, 2, 2, 1
    assert kp_partitions(result) == {
        "s-2": {TopicPartition("orders", p) for p in (0, 1)},
        "s-1": {TopicPartition("orders", p) for p in (2, 3)},
        "d-1": {TopicPartition("orders", p) for p in (4, 5)},
        "d-2": {TopicPartition("orders", 6)},
    }


@pytest.mark.parametrize("cls", ASSIGNOR_CLASSES)
def test_kafka_python_metadata_before_any_assignment(cls: type[Assignor]) -> None:
    sub = kp_adapter.adapt(cls()).metadata({"payments", "orders"})
    assert isinstance(sub, ConsumerProtocolSubscription)
    assert sub.version == 3
    assert sub.topics == ["orders", "payments"]
    assert sub.owned_partitions == []
    assert sub.generation_id == -1
    if cls is CooperativeStickyAssignor:
        assert decode_cooperative_user_data(sub.user_data) == -1
    else:
        assert sub.user_data is None
    # what goes on the wire is a valid subscription for Java and for us
    assert (
        encode_subscription(
            Subscription(["orders", "payments"], generation_id=-1, user_data=sub.user_data), 3
        )
        == sub.encode()
    )


def test_kafka_python_cooperative_round_trip_through_the_consumer(kafka_consumer: Any) -> None:
    """kafka-python's own ConsumerCoordinator drives the adapter through two rebalances.

    Round 1: m1 alone gets everything. Round 2: m2 joins; m1 reports what it owns and its
    generation, so the leader gives m2 nothing m1 still owns (KIP-429), and m1 keeps exactly
    what it does not have to give up.
    """
    first = kp_adapter.adapt(CooperativeStickyAssignor())
    second = kp_adapter.adapt(CooperativeStickyAssignor())
    consumer = kafka_consumer([first])
    consumer._client.cluster.update_metadata(kp_metadata_response(TOPICS))
    consumer.subscribe(list(TOPICS))
    coordinator = consumer._coordinator
    assert coordinator._rebalance_protocol == KafkaRebalanceProtocol.COOPERATIVE
    everything = {TopicPartition(t, p) for t, n in TOPICS.items() for p in range(n)}

    (name, metadata), *_ = coordinator.group_protocols()
    assert name == "cooperative-sticky"
    round1 = coordinator._perform_assignment(
        "m1", name, kp_members([("m1", None, metadata)], decode=False)
    )
    assert kp_partitions(round1) == {"m1": everything}
    asyncio.run(coordinator._on_join_complete_async(5, "m1", name, round1["m1"].encode()))
    assert {TopicPartition(tp.topic, tp.partition) for tp in consumer.assignment()} == everything

    (_, metadata), *_ = coordinator.group_protocols()
    assert metadata.generation_id == 5
    assert decode_cooperative_user_data(metadata.user_data) == 5
    owned = {TopicPartition(tp.topic, p) for tp in metadata.owned_partitions for p in tp.partitions}
    assert owned == everything

    joined = [("m1", None, metadata), ("m2", None, second.metadata(set(TOPICS)))]
    round2 = kp_partitions(
        coordinator._perform_assignment("m1", name, kp_members(joined, decode=False))
    )
    assert round2["m2"] == set()  # everything m2 should get is still owned by m1
    assert len(round2["m1"]) == len(everything) // 2 + len(everything) % 2
    # the same as the assignor itself decides from the same subscriptions
    expected = CooperativeStickyAssignor().assign(
        TOPICS,
        {
            "m1": Subscription(list(TOPICS), owned_partitions=sorted(everything), generation_id=5),
            "m2": Subscription(list(TOPICS)),
        },
    )
    assert round2 == own_partitions(expected)


def test_kafka_python_cooperative_metadata_drops_unsubscribed_topics() -> None:
    adapter = kp_adapter.adapt(CooperativeStickyAssignor())
    assignment = ConsumerProtocolAssignment.decode(
        ConsumerProtocolAssignment(
            version=3,
            assigned_partitions=[("orders", [1, 4]), ("audit", [0])],
            user_data=None,
        ).encode()
    )
    adapter.on_assignment(assignment, 9)
    # kafka-python revokes partitions of topics the member no longer subscribes to before it
    # rejoins, so they must not be reported as owned
    sub = adapter.metadata({"orders", "payments"})
    assert [(tp.topic, tp.partitions) for tp in sub.owned_partitions] == [("orders", [1, 4])]
    assert sub.generation_id == 9


def test_kafka_python_sticky_metadata_carries_user_data_v1() -> None:
    adapter = kp_adapter.adapt(StickyAssignor())
    wire = ConsumerProtocolAssignment(
        version=3, assigned_partitions=[("orders", [2, 5]), ("payments", [1])], user_data=None
    ).encode()
    adapter.on_assignment(ConsumerProtocolAssignment.decode(wire), 12)
    sub = ConsumerProtocolSubscription.decode(adapter.metadata({"orders", "payments"}).encode())
    assert sub.version == 3
    assert sub.owned_partitions == []  # eager: everything was revoked before rejoining
    assert sub.generation_id == 12
    partitions, generation = decode_sticky_user_data(sub.user_data)
    assert generation == 12
    assert partitions == [
        TopicPartition("orders", 2),
        TopicPartition("orders", 5),
        TopicPartition("payments", 1),
    ]


def test_kafka_python_sticky_leader_keeps_previous_owners() -> None:
    """Three members rebalance after a fourth left: no surviving partition moves."""
    cluster = kp_cluster(TOPICS)
    adapters = {m: kp_adapter.adapt(StickyAssignor()) for m in ("a", "b", "c", "d")}
    round1 = adapters["a"].assign(
        cluster, kp_members([(m, None, x.metadata(set(TOPICS))) for m, x in adapters.items()])
    )
    for member, assignment in round1.items():
        adapters[member].on_assignment(ConsumerProtocolAssignment.decode(assignment.encode()), 1)
    del adapters["d"]
    joined = [(m, None, x.metadata(set(TOPICS))) for m, x in adapters.items()]
    round2 = kp_partitions(adapters["a"].assign(cluster, kp_members(joined)))
    before = kp_partitions(round1)
    for member in adapters:
        assert before[member] <= round2[member]
    assert set().union(*round2.values()) == set().union(*before.values())
    sizes = sorted(len(p) for p in round2.values())
    assert sizes[-1] - sizes[0] <= 1


def test_kafka_consumer_accepts_the_adapters(kafka_consumer: Any) -> None:
    consumer = kafka_consumer([kp_adapter.adapt(CooperativeStickyAssignor())])
    assert consumer._coordinator._rebalance_protocol == KafkaRebalanceProtocol.COOPERATIVE
    consumer = kafka_consumer(
        [
            kp_adapter.adapt(StickyAssignor()),
            kp_adapter.adapt(RangeAssignor()),
            RoundRobinPartitionAssignor,
        ]
    )
    assert consumer._coordinator._rebalance_protocol == KafkaRebalanceProtocol.EAGER
    assert list(consumer._coordinator._assignors) == ["sticky", "range", "roundrobin"]
    # cooperative-sticky announces COOPERATIVE only, so kafka-python refuses eager company.
    # (Checked with the coordinator's own validation: a KafkaConsumer whose constructor
    # raises leaks its IO thread.)
    coordinator = consumer._coordinator
    coordinator._assignors = {
        "cooperative-sticky": kp_adapter.adapt(CooperativeStickyAssignor()),
        "range": RangePartitionAssignor(),
    }
    with pytest.raises(KafkaConfigurationError):
        coordinator._validate_rebalance_protocol()


_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)


@settings(max_examples=100, deadline=None)
@given(
    version=st.integers(0, 3),
    topics=st.lists(_names, max_size=4),
    user_data=st.none() | st.binary(max_size=16),
    # non-empty lists: a topic with no partitions has no flat (topic, partition) form
    owned=st.dictionaries(
        _names, st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=5), max_size=3
    ),
    generation=st.integers(-(2**31), 2**31 - 1),
    rack=st.none() | _names,
)
def test_kafka_python_subscription_bytes_are_the_members_bytes(
    version: int,
    topics: list[str],
    user_data: bytes | None,
    owned: dict[str, list[int]],
    generation: int,
    rack: str | None,
) -> None:
    """What the adapter re-encodes for assign_encoded is byte for byte what the member sent."""
    item = ConsumerProtocolSubscription.TopicPartition
    sent = ConsumerProtocolSubscription(
        version=version,
        topics=topics,
        user_data=user_data,
        owned_partitions=[item(topic=t, partitions=p) for t, p in owned.items()],
        generation_id=generation,
        rack_id=rack,
    ).encode()
    decoded = ConsumerProtocolSubscription.decode(sent)
    assert kp_adapter.encode_subscription(decoded) == sent
    ours = Subscription(
        topics,
        owned_partitions=[TopicPartition(t, p) for t, ps in owned.items() for p in ps],
        generation_id=generation,
        rack_id=rack,
        user_data=user_data,
    )
    assert encode_subscription(ours, version) == sent


def test_kafka_python_encoded_assignment_is_lazy_and_faithful() -> None:
    raw = RangeAssignor().assign_encoded(
        TOPICS, {"m": encode_subscription(Subscription(["orders", "audit"]), 3)}
    )["m"]
    lazy = kp_adapter.EncodedConsumerProtocolAssignment(raw)
    assert lazy.encode() is raw
    # SyncGroup carries exactly the assignor's bytes
    request_cls: Any = SyncGroupRequest
    request = request_cls(
        version=3,
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        assignments=[request_cls.SyncGroupRequestAssignment(member_id="m", assignment=lazy)],
    )
    assert request.encode(version=3).endswith(raw)
    # the fields are kafka-python's own decoding of those bytes
    plain = ConsumerProtocolAssignment.decode(raw)
    assert lazy == plain
    assert plain == lazy
    assert lazy.version == 3
    assert lazy.partitions() == plain.partitions()
    assert lazy.user_data is None
    assert lazy.encode() == raw  # decoded now, re-encoded from the fields: same bytes
    # changes made through the fields are what gets encoded
    lazy.user_data = b"x"
    assert ConsumerProtocolAssignment.decode(lazy.encode()).user_data == b"x"


# ----------------------------------------------------------------------------- aiokafka


def aio_cluster(topics: Mapping[str, int]) -> Any:
    """An aiokafka ClusterMetadata loaded from a MetadataResponse (v1) decoded from bytes."""
    response = MetadataResponse_v1(
        [(0, "127.0.0.1", 1, None)],
        0,
        [(0, t, False, [(0, p, 0, [0], [0]) for p in range(n)]) for t, n in topics.items()],
    )
    cluster = AioClusterMetadata()
    cluster.update_metadata(MetadataResponse_v1.decode(response.encode()))
    return cluster


def aio_members(joined: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """Members as aiokafka's GroupCoordinator._perform_assignment hands them to an assignor.

    ``joined`` is ``(member_id, metadata)``, metadata as ``metadata()`` returns it or bytes;
    it travels in a real v5 JoinGroupResponse and is decoded with ConsumerProtocol.METADATA.
    """
    response = JoinGroupResponse_v5(
        0,
        0,
        1,
        "x",
        joined[0][0],
        joined[0][0],
        [(m, None, md if isinstance(md, bytes) else md.encode()) for m, md in joined],
    )
    decoded = JoinGroupResponse_v5.decode(response.encode())
    return {m: ConsumerProtocol.METADATA.decode(data) for m, _instance, data in decoded.members}


def aio_partitions(assignments: Mapping[str, Any]) -> Partitions:
    """What each member reads from SyncGroup: the encoded assignment, decoded by aiokafka."""
    out: Partitions = {}
    for member, assignment in assignments.items():
        wire = assignment if isinstance(assignment, bytes) else assignment.encode()
        decoded = ConsumerProtocol.ASSIGNMENT.decode(wire)
        out[member] = {TopicPartition(tp.topic, tp.partition) for tp in decoded.partitions()}
    return out


def test_aiokafka_refuses_cooperative_assignors() -> None:
    with pytest.raises(ValueError, match="cooperative"):
        aio_adapter.adapt(CooperativeStickyAssignor())


@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize("cls", EAGER_CLASSES)
def test_aiokafka_assign_equals_groupcoord_assign(cls: type[Assignor], backend: str) -> None:
    previous = [TopicPartition("orders", p) for p in (0, 1, 2)] + [TopicPartition("audit", 4)]
    sticky_data = encode_sticky_user_data(previous, 4)
    java_v3 = Subscription(
        ["orders", "audit"], owned_partitions=previous[:1], generation_id=4, user_data=sticky_data
    )
    joined = [
        ("m-1", aio_adapter.adapt(cls()).metadata({"orders", "payments", "audit"})),
        # a Java member (subscription v3); aiokafka reads only its version-0 fields
        ("m-2", encode_subscription(java_v3, 3)),
        ("m-3", encode_subscription(Subscription(["payments", "ghost"]), 0)),
    ]
    assignor = cls(backend=backend)  # type: ignore[arg-type]
    result = aio_adapter.adapt(assignor).assign(aio_cluster(TOPICS), aio_members(joined))

    expected = assignor.assign(
        TOPICS,
        {
            "m-1": Subscription(["audit", "orders", "payments"]),
            "m-2": Subscription(["orders", "audit"], user_data=sticky_data),
            "m-3": Subscription(["payments", "ghost"]),
        },
    )
    assert aio_partitions(result) == own_partitions(expected)
    assert {m: a.partitions() for m, a in result.items()} == {
        m: [(tp.topic, tp.partition) for tp in a.partitions] for m, a in expected.items()
    }


@pytest.mark.parametrize("ours_cls", [RangeAssignor, RoundRobinAssignor])
@pytest.mark.parametrize("member_count", [1, 2, 3, 5, 8])
def test_aiokafka_range_and_roundrobin_match_aiokafkas_own(
    ours_cls: type[Assignor], member_count: int
) -> None:
    topics = {"t0": 0, "t1": 1, "t2": 7, "t3": 12}
    cluster = aio_cluster(topics)
    joined = [
        (f"member-{member_count - i}", aio_adapter.adapt(ours_cls()).metadata(set(topics)))
        for i in range(member_count)
    ]
    theirs_cls = (
        AioRangePartitionAssignor if ours_cls is RangeAssignor else AioRoundRobinPartitionAssignor
    )
    ours = aio_adapter.adapt(ours_cls()).assign(cluster, aio_members(joined))
    theirs = theirs_cls.assign(cluster, aio_members(joined))
    assert aio_partitions(ours) == aio_partitions(theirs)


def test_aiokafka_sticky_round_trip() -> None:
    cluster = aio_cluster(TOPICS)
    adapters = {m: aio_adapter.adapt(StickyAssignor()) for m in ("a", "b", "c")}
    first = adapters["a"].metadata(set(TOPICS))
    assert first.version == 0
    assert first.subscription == sorted(TOPICS)
    assert first.user_data is None  # nothing to be sticky about yet

    round1 = adapters["a"].assign(
        cluster, aio_members([(m, x.metadata(set(TOPICS))) for m, x in adapters.items()])
    )
    for member, assignment in round1.items():
        # what aiokafka's _on_join_complete does with the SyncGroup bytes
        adapters[member].on_assignment(ConsumerProtocol.ASSIGNMENT.decode(assignment.encode()))
    adapters["b"].on_generation_assignment(6)

    metadata_b = adapters["b"].metadata(set(TOPICS))
    partitions, generation = decode_sticky_user_data(metadata_b.user_data)
    assert generation == 6
    assert set(partitions) == aio_partitions(round1)["b"]
    _, generation_a = decode_sticky_user_data(adapters["a"].metadata(set(TOPICS)).user_data)
    assert generation_a == -1  # aiokafka never tells assignors the generation

    del adapters["c"]
    joined = [(m, x.metadata(set(TOPICS))) for m, x in adapters.items()]
    round2 = aio_partitions(adapters["a"].assign(cluster, aio_members(joined)))
    before = aio_partitions(round1)
    assert before["a"] <= round2["a"] and before["b"] <= round2["b"]
    assert round2["a"] | round2["b"] == {
        TopicPartition(t, p) for t, n in TOPICS.items() for p in range(n)
    }


def test_aiokafka_encoded_assignment_is_lazy_and_faithful() -> None:
    raw = RangeAssignor().assign_encoded(
        TOPICS, {"m": encode_subscription(Subscription(["orders", "audit"]), 0)}
    )["m"]
    lazy = aio_adapter.EncodedMemberAssignment(raw)
    assert lazy.encode() == raw
    plain = ConsumerProtocol.ASSIGNMENT.decode(raw)
    assert lazy == plain
    assert plain == lazy
    assert lazy.version == 0
    assert lazy.partitions() == plain.partitions()
    assert repr(lazy).endswith(repr(plain)[len(type(plain).__name__) :])
    assert lazy.encode() == raw  # re-encoded from the decoded fields
    lazy.user_data = b"x"
    assert ConsumerProtocol.ASSIGNMENT.decode(lazy.encode()).user_data == b"x"


def test_aiokafka_consumer_accepts_the_adapter() -> None:
    async def construct() -> list[Any]:
        consumer = AIOKafkaConsumer(
            "orders",
            bootstrap_servers="127.0.0.1:1",
            group_id="adapter-test",
            partition_assignment_strategy=[aio_adapter.adapt(StickyAssignor())],
        )
        try:
            return list(consumer._partition_assignment_strategy)
        finally:
            await consumer.stop()

    (strategy,) = asyncio.run(construct())
    assert isinstance(strategy, aio_adapter.AiokafkaAssignor)
    assert strategy.name == "sticky"
