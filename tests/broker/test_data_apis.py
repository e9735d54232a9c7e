"""DataApis: every data API, every served version, through kio's own codec both ways.

Requests are built per version, encoded and decoded with kio before they reach the
handlers (as the server will hand them over); responses are encoded and decoded again, so
a response a version cannot carry fails here. Record contents are checked with
kafka-python's record reader.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import itertools
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import hypothesis.strategies as st
import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from groupcoord.broker.data_apis import (
    API_CREATE_TOPICS,
    API_DELETE_TOPICS,
    API_FETCH,
    API_INIT_PRODUCER_ID,
    API_LIST_OFFSETS,
    API_METADATA,
    API_PRODUCE,
    DATA_API_VERSIONS,
    BrokerInfo,
    DataApiConfig,
    DataApis,
)
from groupcoord.broker.log import TIMESTAMP_AFTER_MAX_MS, TopicLog
from groupcoord.errors import UnsupportedVersionError
from groupcoord.protocol.null_check import null_arrays
from groupcoord.storage.log_store import MemoryLogStore
from log_batches import BASE_TS, build_batch, read_records

NODE = BrokerInfo(node_id=7, host="127.0.0.1", port=19092, cluster_id="groupcoord-test")


def versions(api: int) -> list[int]:
    low, high = DATA_API_VERSIONS[api]
    return list(range(low, high + 1))


class Broker:
    """A DataApis over a memory log with a settable clock; requests go through the codec."""

    def __init__(self, auto_create: int | None = None, deterministic_ids: bool = False) -> None:
        self.now = BASE_TS
        ids = itertools.count(1)
        self.log = (
            TopicLog(MemoryLogStore(), new_topic_id=lambda: uuid.UUID(int=next(ids)))
            if deterministic_ids
            else TopicLog(MemoryLogStore())
        )
        self.apis = DataApis(
            self.log, NODE, DataApiConfig(auto_create_partitions=auto_create), lambda: self.now
        )

    def call(self, api: int, version: int, cls: str = "", **fields: object) -> Any:
        mod = load_payload_module(api, version, EntityType.request)
        request = _roundtrip(_build(getattr(mod, cls or _request_class(mod)), **fields))
        response = self.apis.handle(api, request)
        if response is None:
            return None
        assert response.__version__ == version  # type: ignore[attr-defined]
        return _roundtrip(response)

    def nested(self, api: int, version: int, cls: str, **fields: object) -> object:
        mod = load_payload_module(api, version, EntityType.request)
        return _build(getattr(mod, cls), **fields)


def _request_class(mod: Any) -> str:
    return next(n for n in dir(mod) if n.endswith("Request") and n != "RequestHeader")


def _build(cls: Any, **fields: object) -> Any:
    present = cls.__dataclass_fields__
    return cls(**{k: v for k, v in fields.items() if k in present})


def _roundtrip(entity: Any) -> Any:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    data = buf.getvalue()
    value, size = entity_reader(type(entity))(data, 0)
    assert size == len(data)
    return value


def _ms(n: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=n)


# ---------------------------------------------------------------------------- table


@pytest.mark.parametrize("api", sorted(DATA_API_VERSIONS))
def test_every_advertised_version_has_kio_schemas(api: int) -> None:
    for v in versions(api):
        load_payload_module(api, v, EntityType.request)
        load_payload_module(api, v, EntityType.response)


def test_handle_refuses_what_it_does_not_serve() -> None:
    b = Broker()
    mod = load_payload_module(API_METADATA, 1, EntityType.request)
    with pytest.raises(UnsupportedVersionError):
        b.apis.handle(API_PRODUCE, mod.MetadataRequest(topics=None))
    with pytest.raises(UnsupportedVersionError):
        b.apis.handle(12, mod.MetadataRequest(topics=None))
    with pytest.raises(UnsupportedVersionError):
        b.apis.handle(API_METADATA, object())


# ---------------------------------------------------------------------------- Metadata


def metadata(b: Broker, v: int, names: list[str] | None, **kw: object) -> Any:
    topics = None
    if names is not None:
        topics = tuple(
            b.nested(API_METADATA, v, "MetadataRequestTopic", name=n, topic_id=None) for n in names
        )
    elif v == 0:
        topics = ()
    return b.call(
        API_METADATA,
        v,
        topics=topics,
        allow_auto_topic_creation=kw.get("allow_auto", True),
        include_cluster_authorized_operations=kw.get("cluster_ops", False),
        include_topic_authorized_operations=kw.get("topic_ops", False),
    )


@pytest.mark.parametrize("v", versions(API_METADATA))
def test_metadata_all_topics_every_version(v: int) -> None:
    b = Broker()
    info = b.log.create_topic("orders", 3)
    b.log.create_topic("audit", 1)
    r = metadata(b, v, None)
    assert [(x.node_id, x.host, x.port) for x in r.brokers] == [(7, "127.0.0.1", 19092)]
    if v >= 1:
        assert r.controller_id == 7
    if v >= 2:
        assert r.cluster_id == "groupcoord-test"
    assert [t.name for t in r.topics] == ["audit", "orders"]
    orders = r.topics[1]
    assert orders.error_code == ErrorCode.none
    assert [
        (p.partition_index, p.leader_id, p.replica_nodes, p.isr_nodes) for p in orders.partitions
    ] == [(i, 7, (7,), (7,)) for i in range(3)]
    if v >= 10:
        assert orders.topic_id == info.topic_id
    if v >= 7:
        assert {p.leader_epoch for p in orders.partitions} == {-1}


@pytest.mark.parametrize("v", versions(API_METADATA))
def test_metadata_unknown_topics_and_auto_creation(v: int) -> None:
    plain = Broker(auto_create=None)
    r = metadata(plain, v, ["missing"])
    assert [(t.name, t.error_code) for t in r.topics] == [
        ("missing", ErrorCode.unknown_topic_or_partition)
    ]
    assert plain.log.topic("missing") is None
    # an illegal name is only INVALID_TOPIC when the broker would try to create it
    assert metadata(plain, v, ["bad name"]).topics[0].error_code == (
        ErrorCode.unknown_topic_or_partition
    )

    auto = Broker(auto_create=4)
    r = metadata(auto, v, ["fresh", "fresh"])
    assert [(t.name, t.error_code, len(t.partitions)) for t in r.topics] == [
        ("fresh", ErrorCode.none, 4)
    ]
    assert auto.log.partitions_per_topic() == {"fresh": 4}
    assert metadata(auto, v, ["bad name"]).topics[0].error_code == ErrorCode.invalid_topic_exception
    if v >= 4:
        r = metadata(auto, v, ["notwanted"], allow_auto=False)
        assert r.topics[0].error_code == ErrorCode.unknown_topic_or_partition
        assert auto.log.topic("notwanted") is None


def test_topics_created_by_clients_are_logged_as_those_from_the_topic_flag(
    caplog: pytest.LogCaptureFixture,
) -> None:
    b = Broker(auto_create=4)
    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        create(b, 5, [{"name": "made", "partitions": 3}, {"name": "bad/name"}])
        create(b, 5, [{"name": "checked", "partitions": 2}], validate_only=True)
        metadata(b, 9, ["fresh"])
    assert [r.getMessage() for r in caplog.records] == [
        "created topic made with 3 partitions (CreateTopics)",
        "created topic fresh with 4 partitions (auto-created by Metadata)",
    ]


@pytest.mark.parametrize("v", [v for v in versions(API_METADATA) if v >= 1])
def test_metadata_empty_topic_list_means_none(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    assert metadata(b, v, []).topics == ()


@pytest.mark.parametrize("v", [v for v in versions(API_METADATA) if v >= 10])
def test_metadata_by_topic_id(v: int) -> None:
    b = Broker()
    info = b.log.create_topic("t", 2)
    unknown = uuid.UUID(int=12345)
    topics = tuple(
        b.nested(API_METADATA, v, "MetadataRequestTopic", name=None, topic_id=i)
        for i in (info.topic_id, unknown)
    )
    r = b.call(
        API_METADATA,
        v,
        topics=topics,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )
    if v < 12:
        assert [(t.name, t.error_code) for t in r.topics] == [
            ("", ErrorCode.invalid_request),
            ("", ErrorCode.invalid_request),
        ]
        return
    assert [(t.name, t.topic_id, t.error_code) for t in r.topics] == [
        ("t", info.topic_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
    ]


@pytest.mark.parametrize("v", [8, 9, 10, 13])
def test_metadata_authorized_operations_when_asked(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    r = metadata(b, v, None, topic_ops=True, cluster_ops=True)
    ops = r.topics[0].topic_authorized_operations
    assert ops & (1 << 3) and ops & (1 << 4) and ops & (1 << 8)  # READ, WRITE, DESCRIBE
    if v <= 10:
        assert r.cluster_authorized_operations & (1 << 12)  # IDEMPOTENT_WRITE
    assert metadata(b, v, None).topics[0].topic_authorized_operations == -(2**31)


# ---------------------------------------------------------------------------- CreateTopics


def create(b: Broker, v: int, specs: list[dict[str, Any]], validate_only: bool = False) -> Any:
    topics = tuple(
        b.nested(
            API_CREATE_TOPICS,
            v,
            "CreatableTopic",
            name=s["name"],
            num_partitions=s.get("partitions", 1),
            replication_factor=s.get("rf", 1),
            assignments=tuple(
                b.nested(
                    API_CREATE_TOPICS,
                    v,
                    "CreatableReplicaAssignment",
                    partition_index=i,
                    broker_ids=tuple(ids),
                )
                for i, ids in s.get("assignments", [])
            ),
            configs=tuple(
                b.nested(API_CREATE_TOPICS, v, "CreatableTopicConfig", name=k, value=val)
                for k, val in s.get("configs", {}).items()
            ),
        )
        for s in specs
    )
    return b.call(
        API_CREATE_TOPICS, v, topics=topics, timeout=_ms(1000), validate_only=validate_only
    )


@pytest.mark.parametrize("v", versions(API_CREATE_TOPICS))
def test_create_topics_every_version(v: int) -> None:
    b = Broker(auto_create=6)
    r = create(
        b,
        v,
        [
            {"name": "a", "partitions": 3},
            {"name": "b", "partitions": -1, "rf": -1},
            {"name": "c", "rf": 3},
            {"name": "d", "partitions": 0},
            {"name": "bad/name"},
            {"name": "e", "configs": {"retention.ms": "1000"}},
            {"name": "f", "configs": {"message.timestamp.type": "LogAppendTime"}},
            {"name": "g", "rf": 0},
            {"name": "__consumer_offsets"},
        ],
    )
    codes = {t.name: t.error_code for t in r.topics}
    assert codes == {
        "a": ErrorCode.none,
        "b": ErrorCode.none,
        "c": ErrorCode.invalid_replication_factor,
        "d": ErrorCode.invalid_partitions,
        "bad/name": ErrorCode.invalid_topic_exception,
        "e": ErrorCode.none,
        "f": ErrorCode.invalid_config,
        "g": ErrorCode.invalid_replication_factor,
        "__consumer_offsets": ErrorCode.invalid_request,
    }
    assert b.log.partitions_per_topic() == {"a": 3, "b": 6, "e": 1}
    if v >= 1:
        assert "larger than available brokers: 1" in next(
            t.error_message for t in r.topics if t.name == "c"
        )
    if v >= 5:
        a = next(t for t in r.topics if t.name == "a")
        assert (a.num_partitions, a.replication_factor) == (3, 1)
    if v >= 7:
        assert r.topics[0].topic_id == b.log.topic("a").topic_id  # type: ignore[union-attr]
    again = create(b, v, [{"name": "a", "partitions": 3}])
    assert again.topics[0].error_code == ErrorCode.topic_already_exists


@pytest.mark.parametrize("v", [2, 7])
def test_create_topics_validate_only_duplicates_and_assignments(v: int) -> None:
    b = Broker()
    r = create(b, v, [{"name": "x", "partitions": 2}], validate_only=True)
    assert r.topics[0].error_code == ErrorCode.none and b.log.topic("x") is None
    r = create(b, v, [{"name": "dup"}, {"name": "dup"}])
    assert [t.error_code for t in r.topics] == [ErrorCode.invalid_request] * 2
    r = create(
        b,
        v,
        [
            {"name": "m", "partitions": -1, "rf": -1, "assignments": [(0, [7]), (1, [7])]},
            {"name": "n", "partitions": -1, "rf": -1, "assignments": [(0, [1])]},
            {"name": "o", "partitions": -1, "rf": -1, "assignments": [(1, [7])]},
            {"name": "p", "partitions": 2, "rf": -1, "assignments": [(0, [7])]},
        ],
    )
    assert [t.error_code for t in r.topics] == [
        ErrorCode.none,
        ErrorCode.invalid_replica_assignment,
        ErrorCode.invalid_replica_assignment,
        ErrorCode.invalid_request,
    ]
    assert b.log.partitions_per_topic() == {"m": 2}


# ---------------------------------------------------------------------------- DeleteTopics


@pytest.mark.parametrize("v", versions(API_DELETE_TOPICS))
def test_delete_topics_every_version(v: int) -> None:
    b = Broker()
    b.log.create_topic("a", 1)
    b.log.create_topic("b", 1)
    if v >= 6:
        topics = tuple(
            b.nested(API_DELETE_TOPICS, v, "DeleteTopicState", name=n, topic_id=None)
            for n in ("a", "zz")
        )
        r = b.call(API_DELETE_TOPICS, v, topics=topics, timeout=_ms(100))
    else:
        r = b.call(API_DELETE_TOPICS, v, topic_names=("a", "zz"), timeout=_ms(100))
    assert [(x.name, x.error_code) for x in r.responses] == [
        ("a", ErrorCode.none),
        ("zz", ErrorCode.unknown_topic_or_partition),
    ]
    assert list(b.log.topics()) == ["b"]


def test_delete_topics_by_id() -> None:
    b = Broker()
    info = b.log.create_topic("a", 1)
    other = b.log.create_topic("c", 1)
    unknown = uuid.UUID(int=99)
    topics = tuple(
        b.nested(API_DELETE_TOPICS, 6, "DeleteTopicState", name=n, topic_id=i)
        for n, i in ((None, info.topic_id), (None, unknown), ("c", other.topic_id))
    )
    r = b.call(API_DELETE_TOPICS, 6, topics=topics, timeout=_ms(100))
    assert [(x.name, x.topic_id, x.error_code) for x in r.responses] == [
        ("a", info.topic_id, ErrorCode.none),
        (None, unknown, ErrorCode.unknown_topic_id),
        ("c", other.topic_id, ErrorCode.invalid_request),
    ]
    assert list(b.log.topics()) == ["c"]


# ---------------------------------------------------------------------------- Produce


def produce(
    b: Broker,
    v: int,
    parts: list[tuple[str, int, bytes | None]],
    *,
    acks: int = -1,
    transactional_id: str | None = None,
    topic_id: uuid.UUID | None = None,
) -> Any:
    by_topic: dict[str, list[object]] = {}
    for topic, p, records in parts:
        by_topic.setdefault(topic, []).append(
            b.nested(API_PRODUCE, v, "PartitionProduceData", index=p, records=records)
        )
    topic_data = []
    for topic, data in by_topic.items():
        info = b.log.topic(topic)
        tid = topic_id or (info.topic_id if info is not None else uuid.UUID(int=4242))
        topic_data.append(
            b.nested(
                API_PRODUCE,
                v,
                "TopicProduceData",
                name=topic,
                topic_id=tid,
                partition_data=tuple(data),
            )
        )
    return b.call(
        API_PRODUCE,
        v,
        transactional_id=transactional_id,
        acks=acks,
        timeout=_ms(1000),
        topic_data=tuple(topic_data),
    )


def _partition_results(r: Any) -> list[tuple[int, int, int]]:
    return [
        (p.index, p.error_code, p.base_offset) for t in r.responses for p in t.partition_responses
    ]


@pytest.mark.parametrize("v", versions(API_PRODUCE))
def test_produce_every_version(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 2)
    batch = build_batch([(b"k", b"v1"), (b"k", b"v2")])
    r = produce(b, v, [("t", 0, batch), ("t", 1, batch), ("t", 5, batch)])
    assert _partition_results(r) == [
        (0, ErrorCode.none, 0),
        (1, ErrorCode.none, 0),
        (5, ErrorCode.unknown_topic_or_partition, -1),
    ]
    r = produce(b, v, [("t", 0, batch)], acks=1)
    assert _partition_results(r) == [(0, ErrorCode.none, 2)]
    first = r.responses[0].partition_responses[0]
    assert first.log_append_time is None  # -1 on the wire: CreateTime
    if v >= 5:
        assert first.log_start_offset == 0
    assert produce(b, v, [("t", 0, batch)], acks=0) is None
    assert b.log.end_offset("t", 0) == 6
    if v >= 13:
        assert r.responses[0].topic_id == b.log.topic("t").topic_id  # type: ignore[union-attr]
    else:
        assert r.responses[0].name == "t"


@pytest.mark.parametrize("v", [3, 8, 13])
def test_produce_errors(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    good = build_batch([(None, b"x")])
    r = produce(b, v, [("t", 0, good)], acks=2)
    assert _partition_results(r) == [(0, ErrorCode.invalid_required_acks, -1)]
    r = produce(b, v, [("t", 0, good)], transactional_id="txn")
    assert _partition_results(r) == [(0, ErrorCode.invalid_request, -1)]
    r = produce(b, v, [("nope", 0, good)])
    missing = ErrorCode.unknown_topic_id if v >= 13 else ErrorCode.unknown_topic_or_partition
    assert _partition_results(r) == [(0, missing, -1)]
    corrupt = good[:-1] + bytes([good[-1] ^ 0xFF])
    r = produce(b, v, [("t", 0, corrupt), ("t", 0, None), ("t", 0, good + good)])
    assert [e for _, e, _ in _partition_results(r)] == [
        ErrorCode.corrupt_message,
        ErrorCode.invalid_record,
        ErrorCode.invalid_record,
    ]
    if v >= 8:
        assert "CRC" in r.responses[0].partition_responses[0].error_message
    b.now = BASE_TS - TIMESTAMP_AFTER_MAX_MS - 10
    r = produce(b, v, [("t", 0, good)])
    assert _partition_results(r) == [(0, ErrorCode.invalid_timestamp, -1)]
    assert b.log.end_offset("t", 0) == 0
    assert produce(b, v, [("nope", 0, good)], acks=0) is None


@pytest.mark.parametrize("v", [3, 9, 13])
def test_idempotent_produce_retry_is_not_appended_twice(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    init = b.call(API_INIT_PRODUCER_ID, 4, transactional_id=None, transaction_timeout=_ms(-1))
    pid, epoch = init.producer_id, init.producer_epoch
    first = build_batch([(None, b"a")], producer_id=pid, producer_epoch=epoch, base_sequence=0)
    second = build_batch([(None, b"b")], producer_id=pid, producer_epoch=epoch, base_sequence=1)
    gap = build_batch([(None, b"c")], producer_id=pid, producer_epoch=epoch, base_sequence=5)
    old = build_batch([(None, b"d")], producer_id=pid, producer_epoch=epoch - 1, base_sequence=2)
    assert _partition_results(produce(b, v, [("t", 0, first)])) == [(0, ErrorCode.none, 0)]
    assert _partition_results(produce(b, v, [("t", 0, second)])) == [(0, ErrorCode.none, 1)]
    assert _partition_results(produce(b, v, [("t", 0, first)])) == [(0, ErrorCode.none, 0)]
    assert _partition_results(produce(b, v, [("t", 0, gap)])) == [
        (0, ErrorCode.out_of_order_sequence_number, -1)
    ]
    assert _partition_results(produce(b, v, [("t", 0, old)])) == [
        (0, ErrorCode.invalid_producer_epoch, -1)
    ]
    assert [r.value for r in read_records(b.log.read("t", 0, 0, 1 << 20).records)] == [b"a", b"b"]


# ---------------------------------------------------------------------------- InitProducerId


@pytest.mark.parametrize("v", versions(API_INIT_PRODUCER_ID))
def test_init_producer_id_every_version(v: int) -> None:
    b = Broker()
    fields: dict[str, object] = {"transactional_id": None, "transaction_timeout": _ms(60000)}
    first = b.call(API_INIT_PRODUCER_ID, v, **fields)
    # A client re-initialising with its id and epoch gets a fresh id, as from Kafka.
    second = b.call(
        API_INIT_PRODUCER_ID, v, producer_id=first.producer_id, producer_epoch=0, **fields
    )
    assert (first.error_code, second.error_code) == (ErrorCode.none, ErrorCode.none)
    assert first.producer_id >= 0 and second.producer_id not in (-1, first.producer_id)
    assert (first.producer_epoch, second.producer_epoch) == (0, 0)
    txn = b.call(API_INIT_PRODUCER_ID, v, transactional_id="tx", transaction_timeout=_ms(1000))
    assert (txn.error_code, txn.producer_id) == (ErrorCode.invalid_request, -1)


# ---------------------------------------------------------------------------- Fetch


def fetch_request(
    b: Broker,
    v: int,
    parts: list[tuple[str, int, int, int]],
    *,
    max_bytes: int = 1 << 20,
    min_bytes: int = 1,
    max_wait_ms: int = 500,
    session_id: int = 0,
    session_epoch: int = -1,
    unknown_id: uuid.UUID | None = None,
) -> Any:
    by_topic: dict[str, list[object]] = {}
    for topic, p, offset, pmax in parts:
        by_topic.setdefault(topic, []).append(
            b.nested(
                API_FETCH,
                v,
                "FetchPartition",
                partition=p,
                fetch_offset=offset,
                partition_max_bytes=pmax,
                current_leader_epoch=-1,
                last_fetched_epoch=-1,
                log_start_offset=-1,
            )
        )
    topics = []
    for topic, partitions in by_topic.items():
        info = b.log.topic(topic)
        tid = info.topic_id if info is not None else (unknown_id or uuid.UUID(int=31337))
        topics.append(
            b.nested(
                API_FETCH, v, "FetchTopic", topic=topic, topic_id=tid, partitions=tuple(partitions)
            )
        )
    mod = load_payload_module(API_FETCH, v, EntityType.request)
    return _roundtrip(
        _build(
            mod.FetchRequest,
            replica_id=-1,
            max_wait=_ms(max_wait_ms),
            min_bytes=min_bytes,
            max_bytes=max_bytes,
            isolation_level=0,
            session_id=session_id,
            session_epoch=session_epoch,
            topics=tuple(topics),
            forgotten_topics_data=(),
            rack_id="",
        )
    )


def fetch(b: Broker, v: int, parts: list[tuple[str, int, int, int]], **kw: Any) -> Any:
    response = b.apis.handle(API_FETCH, fetch_request(b, v, parts, **kw))
    return _roundtrip(response)


def _fetched(r: Any) -> Iterator[Any]:
    for t in r.responses:
        yield from t.partitions


@pytest.mark.parametrize("v", versions(API_FETCH))
def test_fetch_every_version(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 2)
    sent = [(f"k{i}".encode(), f"value-{i}".encode()) for i in range(5)]
    produce(b, 8, [("t", 0, build_batch(sent[:3])), ("t", 1, build_batch(sent[3:]))])
    produce(b, 8, [("t", 0, build_batch(sent[3:]))])
    r = fetch(b, v, [("t", 0, 0, 1 << 20), ("t", 1, 2, 1 << 20), ("t", 1, 0, 1 << 20)])
    p0, p1_end, p1 = list(_fetched(r))
    assert p0.error_code == ErrorCode.none
    assert (p0.high_watermark, p0.last_stable_offset) == (5, 5)
    got = read_records(p0.records)
    assert [(x.offset, x.key, x.value) for x in got] == [
        (i, k, val) for i, (k, val) in enumerate(sent[:3] + sent[3:])
    ]
    assert [x.timestamp for x in got] == [BASE_TS, BASE_TS + 1, BASE_TS + 2, BASE_TS, BASE_TS + 1]
    assert (p1_end.error_code, p1_end.records, p1_end.high_watermark) == (ErrorCode.none, b"", 2)
    assert [x.value for x in read_records(p1.records)] == [b"value-3", b"value-4"]
    assert p0.aborted_transactions is None
    if v >= 5:
        assert p0.log_start_offset == 0
    if v >= 7:
        assert (r.error_code, r.session_id) == (ErrorCode.none, 0)
    if v >= 11:
        assert p0.preferred_read_replica == -1
    if v >= 13:
        assert r.responses[0].topic_id == b.log.topic("t").topic_id  # type: ignore[union-attr]
    else:
        assert r.responses[0].topic == "t"


@pytest.mark.parametrize("v", [4, 12, 13, 18])
def test_fetch_errors(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    produce(b, 8, [("t", 0, build_batch([(None, b"x")]))])
    r = fetch(b, v, [("t", 0, 2, 100), ("t", 3, 0, 100), ("missing", 0, 0, 100)])
    missing = ErrorCode.unknown_topic_id if v >= 13 else ErrorCode.unknown_topic_or_partition
    assert [(p.error_code, p.high_watermark, p.records) for p in _fetched(r)] == [
        (ErrorCode.offset_out_of_range, -1, b""),
        (ErrorCode.unknown_topic_or_partition, -1, b""),
        (missing, -1, b""),
    ]


@pytest.mark.parametrize("v", [7, 12, 18])
def test_fetch_sessions_are_not_kept(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    produce(b, 8, [("t", 0, build_batch([(None, b"x")]))])
    r = fetch(b, v, [("t", 0, 0, 100)], session_id=0, session_epoch=0)  # "create a session"
    assert r.session_id == 0 and r.error_code == ErrorCode.none
    assert read_records(next(_fetched(r)).records)[0].value == b"x"
    r = fetch(b, v, [("t", 0, 0, 100)], session_id=55, session_epoch=3)  # incremental
    assert (r.error_code, r.responses) == (ErrorCode.fetch_session_id_not_found, ())
    assert b.apis.fetch_satisfied(fetch_request(b, v, [], session_id=55, session_epoch=3))


def test_fetch_limits_follow_kip_74() -> None:
    b = Broker()
    b.log.create_topic("t", 3)
    big = build_batch([(None, b"x" * 500)])
    small = build_batch([(None, b"y")])
    produce(b, 8, [("t", 0, big), ("t", 1, small), ("t", 2, small)])
    # The first partition's batch exceeds both limits and still comes whole; the next
    # partitions then get nothing: the request's max_bytes is used up.
    r = fetch(b, 12, [("t", 0, 0, 10), ("t", 1, 0, 10), ("t", 2, 0, 1000)], max_bytes=100)
    assert [len(p.records) for p in _fetched(r)] == [len(big), 0, 0]
    # Without the oversized batch first, partitions fill up to max_bytes.
    r = fetch(b, 12, [("t", 1, 0, 1000), ("t", 2, 0, 1000)], max_bytes=len(small) * 2)
    assert [len(p.records) for p in _fetched(r)] == [len(small), len(small)]
    r = fetch(b, 12, [("t", 1, 0, 1000), ("t", 2, 0, 1000)], max_bytes=len(small) * 2 - 1)
    assert [len(p.records) for p in _fetched(r)] == [len(small), 0]


@pytest.mark.parametrize("v", [4, 13])
def test_fetch_satisfied(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 2)
    req = fetch_request(b, v, [("t", 0, 0, 1000), ("t", 1, 0, 1000)], min_bytes=1)
    assert not b.apis.fetch_satisfied(req)
    batch = build_batch([(None, b"z" * 50)])
    produce(b, 8, [("t", 1, batch)])
    assert b.apis.fetch_satisfied(req)
    many = fetch_request(b, v, [("t", 0, 0, 1000), ("t", 1, 0, 1000)], min_bytes=2 * len(batch))
    assert not b.apis.fetch_satisfied(many)
    produce(b, 8, [("t", 0, batch)])
    assert b.apis.fetch_satisfied(many)
    # errors, no wait and empty requests answer at once
    assert b.apis.fetch_satisfied(fetch_request(b, v, [("t", 0, 99, 1000)], min_bytes=10**6))
    assert b.apis.fetch_satisfied(fetch_request(b, v, [("gone", 0, 0, 1000)], min_bytes=10**6))
    assert b.apis.fetch_satisfied(fetch_request(b, v, [("t", 0, 1, 1000)], max_wait_ms=0))
    assert b.apis.fetch_satisfied(fetch_request(b, v, [], min_bytes=10))


# ---------------------------------------------------------------------------- ListOffsets


def list_offsets(b: Broker, v: int, parts: list[tuple[str, int, int]]) -> Any:
    by_topic: dict[str, list[object]] = {}
    for topic, p, ts in parts:
        by_topic.setdefault(topic, []).append(
            b.nested(
                API_LIST_OFFSETS,
                v,
                "ListOffsetsPartition",
                partition_index=p,
                current_leader_epoch=-1,
                timestamp=ts,
            )
        )
    topics = tuple(
        b.nested(API_LIST_OFFSETS, v, "ListOffsetsTopic", name=t, partitions=tuple(ps))
        for t, ps in by_topic.items()
    )
    return b.call(
        API_LIST_OFFSETS, v, replica_id=-1, isolation_level=0, topics=topics, timeout=_ms(1000)
    )


@pytest.mark.parametrize("v", versions(API_LIST_OFFSETS))
def test_list_offsets_every_version(v: int) -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    produce(b, 8, [("t", 0, build_batch([(None, b"a"), (None, b"b")], timestamps=[100, 200]))])
    produce(b, 8, [("t", 0, build_batch([(None, b"c")], timestamps=[300]))])
    r = list_offsets(
        b, v, [("t", 0, -1), ("t", 0, -2), ("t", 0, 150), ("t", 0, 999), ("t", 4, -1), ("x", 0, -1)]
    )
    got = [(p.error_code, p.offset, p.timestamp) for t in r.topics for p in t.partitions]
    assert got == [
        (ErrorCode.none, 3, -1),
        (ErrorCode.none, 0, -1),
        (ErrorCode.none, 1, 200),
        (ErrorCode.none, -1, -1),
        (ErrorCode.unknown_topic_or_partition, -1, -1),
        (ErrorCode.unknown_topic_or_partition, -1, -1),
    ]
    if v >= 7:
        r = list_offsets(b, v, [("t", 0, -3)])
        assert (r.topics[0].partitions[0].offset, r.topics[0].partitions[0].timestamp) == (2, 300)
    if v >= 4:
        assert r.topics[0].partitions[0].leader_epoch == -1


# ---------------------------------------------------------------------------- kafka-python


def _same_as_kafka_python(ours: Any, theirs: Any, path: str = "") -> None:
    """Every (non-tagged) field of our kio response reads back alike in kafka-python."""
    for spec in dataclasses.fields(ours):
        name = spec.name
        if "tag" in spec.metadata:
            continue  # tagged fields: kafka-python leaves unset ones as None
        mine = getattr(ours, name)
        where = f"{path}.{name}"
        if name.endswith("authorized_operations"):
            # kafka-python renames these and decodes the bitfield to a set of bit numbers
            ops = theirs.authorized_operations
            assert ops == (None if mine == -(2**31) else _bits(mine)), where
            continue
        # kafka-python keeps the schema's "Ms" suffix that kio drops for time fields
        their_name = name if name in theirs._struct.fields else f"{name}_ms"
        theirs_value = getattr(theirs, their_name)
        if isinstance(mine, tuple) and mine and hasattr(mine[0], "__dataclass_fields__"):
            assert len(mine) == len(theirs_value), where
            for i, (a, b) in enumerate(zip(mine, theirs_value, strict=True)):
                _same_as_kafka_python(a, b, f"{where}[{i}]")
        elif hasattr(mine, "__dataclass_fields__"):
            _same_as_kafka_python(mine, theirs_value, where)
        elif isinstance(mine, datetime.timedelta):
            assert theirs_value == mine // datetime.timedelta(milliseconds=1), where
        elif mine is None and name == "log_append_time":
            assert theirs_value == -1, where
        elif isinstance(mine, tuple):
            assert list(mine) == list(theirs_value), where
        else:
            assert theirs_value == mine, where


def _bits(field: int) -> set[int]:
    return {i for i in range(32) if field & (1 << i)}


def _check_with_kafka_python(response: Any) -> None:
    from kafka.protocol.admin import topics
    from kafka.protocol.consumer import FetchResponse, ListOffsetsResponse
    from kafka.protocol.metadata import MetadataResponse
    from kafka.protocol.producer import ProduceResponse, transaction

    decoders = {
        API_PRODUCE: ProduceResponse,
        API_FETCH: FetchResponse,
        API_LIST_OFFSETS: ListOffsetsResponse,
        API_METADATA: MetadataResponse,
        API_CREATE_TOPICS: topics.CreateTopicsResponse,
        API_DELETE_TOPICS: topics.DeleteTopicsResponse,
        API_INIT_PRODUCER_ID: transaction.InitProducerIdResponse,
    }
    buf = io.BytesIO()
    entity_writer(type(response))(buf, response)
    decoder: Any = decoders[response.__api_key__]
    theirs = decoder.decode(buf.getvalue(), version=response.__version__)
    _same_as_kafka_python(response, theirs)


@pytest.mark.parametrize("api", sorted(DATA_API_VERSIONS))
def test_kafka_python_reads_every_response_version_alike(api: int) -> None:
    for v in versions(api):
        b = Broker(auto_create=2)
        b.log.create_topic("t", 2)
        pid = b.log.init_producer_id()[0]
        batch = build_batch([(b"k", b"v")], producer_id=pid, producer_epoch=0, base_sequence=0)
        produce(b, 8, [("t", 0, batch)])
        if api == API_METADATA:
            responses = [
                metadata(b, v, None, topic_ops=True, cluster_ops=True),
                metadata(b, v, ["t", "auto", "bad name"]),
            ]
        elif api == API_CREATE_TOPICS:
            responses = [create(b, v, [{"name": "n", "partitions": 2}, {"name": "t"}])]
        elif api == API_DELETE_TOPICS:
            if v >= 6:
                topics = (
                    b.nested(API_DELETE_TOPICS, v, "DeleteTopicState", name="t", topic_id=None),
                )
                responses = [b.call(API_DELETE_TOPICS, v, topics=topics, timeout=_ms(10))]
            else:
                responses = [b.call(API_DELETE_TOPICS, v, topic_names=("t", "x"), timeout=_ms(10))]
        elif api == API_PRODUCE:
            responses = [produce(b, v, [("t", 0, batch), ("t", 1, b"bad"), ("t", 9, batch)])]
        elif api == API_INIT_PRODUCER_ID:
            fields: dict[str, object] = {"transaction_timeout": _ms(100)}
            responses = [
                b.call(API_INIT_PRODUCER_ID, v, transactional_id=None, **fields),
                b.call(API_INIT_PRODUCER_ID, v, transactional_id="tx", **fields),
            ]
        elif api == API_FETCH:
            responses = [fetch(b, v, [("t", 0, 0, 1000), ("t", 1, 5, 1000), ("t", 7, 0, 10)])]
        else:
            responses = [list_offsets(b, v, [("t", 0, -1), ("t", 0, 0), ("t", 8, -2)])]
        for response in responses:
            _check_with_kafka_python(response)


def _as_zstd(batch: bytes) -> bytes:
    """The batch flagged zstd (the log stores compressed batches unopened, so the flag and a
    valid CRC are all the broker looks at)."""
    out = bytearray(batch)
    out[22] = (out[22] & ~0x07) | 4
    out[17:21] = crc32c(bytes(out[21:])).to_bytes(4, "big")
    return bytes(out)


def test_zstd_needs_produce_v7_and_fetch_v10() -> None:
    b = Broker()
    b.log.create_topic("t", 1)
    zstd = _as_zstd(build_batch([(None, b"z")]))
    assert _partition_results(produce(b, 6, [("t", 0, zstd)])) == [
        (0, ErrorCode.unsupported_compression_type, -1)
    ]
    assert _partition_results(produce(b, 7, [("t", 0, zstd)])) == [(0, ErrorCode.none, 0)]
    old = next(_fetched(fetch(b, 9, [("t", 0, 0, 1000)])))
    assert (old.error_code, old.records, old.high_watermark) == (
        ErrorCode.unsupported_compression_type,
        b"",
        -1,
    )
    new = next(_fetched(fetch(b, 10, [("t", 0, 0, 1000)])))
    assert (new.error_code, new.records[16:]) == (ErrorCode.none, zstd[16:])


@pytest.mark.parametrize("v", [2, 7])
def test_create_topics_refuses_excessive_partition_counts_as_a_whole(v: int) -> None:
    b = Broker(auto_create=4000)
    r = create(b, v, [{"name": "a", "partitions": 5000}, {"name": "b", "partitions": -1}])
    assert [t.error_code for t in r.topics] == [ErrorCode.none, ErrorCode.none]
    r = create(
        b,
        v,
        [{"name": "c", "partitions": 6000}, {"name": "d", "partitions": -1}, {"name": "e"}],
    )
    assert [t.error_code for t in r.topics] == [ErrorCode.policy_violation] * 3
    assert sorted(b.log.topics()) == ["a", "b"]
    r = metadata(Broker(auto_create=20_000), 9, ["huge"])
    assert r.topics[0].error_code == ErrorCode.policy_violation


# ---------------------------------------------------------------------------- mutated input


def _seed_requests(b: Broker) -> list[tuple[int, bytes, type]]:
    """Valid encoded requests of every data API at its lowest and highest version."""
    out: list[tuple[int, bytes, type]] = []
    batch = build_batch(
        [(b"k", b"v"), (None, b"w")], producer_id=3, producer_epoch=0, base_sequence=0
    )
    for api in sorted(DATA_API_VERSIONS):
        for v in (DATA_API_VERSIONS[api][0], DATA_API_VERSIONS[api][1]):
            mod = load_payload_module(api, v, EntityType.request)
            n = b.nested
            if api == API_METADATA:
                topics = (n(api, v, "MetadataRequestTopic", name="t", topic_id=None),)
                req = _build(
                    mod.MetadataRequest,
                    topics=topics,
                    allow_auto_topic_creation=True,
                    include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=True,
                )
            elif api == API_PRODUCE:
                part = n(api, v, "PartitionProduceData", index=0, records=batch)
                topic = n(
                    api,
                    v,
                    "TopicProduceData",
                    name="t",
                    topic_id=b.log.topic("t").topic_id,
                    partition_data=(part,),
                )  # type: ignore[union-attr]
                req = _build(
                    mod.ProduceRequest,
                    transactional_id=None,
                    acks=-1,
                    timeout=_ms(10),
                    topic_data=(topic,),
                )
            elif api == API_FETCH:
                req = fetch_request(b, v, [("t", 0, 0, 1000), ("t", 1, 0, 1000)])
            elif api == API_LIST_OFFSETS:
                part = n(
                    api,
                    v,
                    "ListOffsetsPartition",
                    partition_index=0,
                    current_leader_epoch=-1,
                    timestamp=-1,
                )
                topic = n(api, v, "ListOffsetsTopic", name="t", partitions=(part,))
                req = _build(
                    mod.ListOffsetsRequest,
                    replica_id=-1,
                    isolation_level=0,
                    topics=(topic,),
                    timeout=_ms(10),
                )
            elif api == API_CREATE_TOPICS:
                topic = n(
                    api,
                    v,
                    "CreatableTopic",
                    name="c",
                    num_partitions=2,
                    replication_factor=1,
                    assignments=(),
                    configs=(),
                )
                req = _build(
                    mod.CreateTopicsRequest, topics=(topic,), timeout=_ms(10), validate_only=False
                )
            elif api == API_DELETE_TOPICS:
                states = (n(api, v, "DeleteTopicState", name="c", topic_id=None),) if v >= 6 else ()
                req = _build(
                    mod.DeleteTopicsRequest, topics=states, topic_names=("c",), timeout=_ms(10)
                )
            else:
                req = _build(
                    mod.InitProducerIdRequest, transactional_id=None, transaction_timeout=_ms(10)
                )
            buf = io.BytesIO()
            entity_writer(type(req))(buf, req)
            out.append((api, buf.getvalue(), type(req)))
    return out


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_decodable_request_gets_an_encodable_response(data: st.DataObject) -> None:
    b = _seed_broker()
    api, raw, cls = data.draw(st.sampled_from(_SEEDS))
    mutated = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(mutated) - 1))
        mutated[pos] = data.draw(st.integers(0, 255))
    try:
        request, _ = entity_reader(cls)(bytes(mutated), 0)
    except Exception:  # kio refused the bytes: the server never gets this far
        return
    if null_arrays(request):  # the wire codec refuses these frames before any handler
        return
    response = b.apis.handle(api, request)
    if response is None:
        assert api == API_PRODUCE and request.acks == 0
        return
    _roundtrip(response)


def _seed_broker() -> Broker:
    b = Broker(auto_create=2, deterministic_ids=True)
    b.log.create_topic("t", 2)
    return b


_SEEDS = _seed_requests(_seed_broker())
