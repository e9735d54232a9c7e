"""The data-plane Kafka APIs as pure functions of a kio request: kio request in, kio response out.

Metadata, CreateTopics, DeleteTopics, Produce, InitProducerId, Fetch and ListOffsets, every
version kio has a schema for and :data:`DATA_API_VERSIONS` lists, answered from a
:class:`~groupcoord.broker.log.TopicLog`. One broker (this node) leads every partition, is
the only replica and the controller. The server shell owns sockets and time-outs; the only
clock that enters is ``now_ms`` (record timestamp validation).

Choices where a single-node broker without transactions has to pick an answer (each is what
makes a client fail clearly rather than retry forever):

- Produce with ``acks=0``: :meth:`DataApis.handle` returns ``None``; the server sends no
  response (the client does not read one).
- InitProducerId with a ``transactional_id`` (or 2PC), Produce with a ``transactional_id``
  or a transactional batch: INVALID_REQUEST. The Java client and kafka-python fail at once
  ("unexpected error in InitProducerIdResponse"); librdkafka retries it until
  ``init_transactions``' time-out and then reports INVALID_REQUEST. COORDINATOR_NOT_AVAILABLE
  or NOT_COORDINATOR would be retried by all of them until their time-outs with no hint of
  the cause; TRANSACTIONAL_ID_AUTHORIZATION_FAILED would blame ACLs that do not exist.
- InitProducerId without a transactional id always hands out a fresh producer id with epoch
  0, as Kafka's transaction coordinator does (it ignores the id/epoch a client sends; an
  idempotent client bumps its epoch itself).
- Fetch sessions (KIP-227) are not kept: every Fetch is a full fetch answered with session
  id 0, which clients take as "sessions unsupported"; an incremental fetch (epoch not 0/-1)
  gets FETCH_SESSION_ID_NOT_FOUND, as a broker that lost the session would answer.
- Leader epochs are reported as -1 (unknown), so clients skip KIP-320 epoch validation.
- Topic configs in CreateTopics are accepted and not applied (there is no retention or
  compaction), except ``message.timestamp.type=LogAppendTime``, which would change what
  consumers read and is refused with INVALID_CONFIG.
- Record timestamps more than ``log.message.timestamp.after.max.ms`` (Kafka 4's default,
  one hour) ahead of ``now_ms`` are refused with INVALID_TIMESTAMP.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, ModuleType
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType

from groupcoord.broker.log import (
    MAX_PARTITIONS_PER_REQUEST,
    TIMESTAMP_AFTER_MAX_MS,
    TopicInfo,
    TopicLog,
)
from groupcoord.broker.records import ZSTD, iter_batches
from groupcoord.errors import (
    ClusterAuthorizationFailedError,
    FetchSessionIdNotFoundError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidRequiredAcksError,
    KafkaError,
    KafkaStorageError,
    PolicyViolationError,
    TopicAuthorizationFailedError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
    UnsupportedVersionError,
)
from groupcoord.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from groupcoord.security.authorizer import Allowed
from groupcoord.storage.log_store import StoreError

#: the server's logger: topics created by clients are logged as those from ``--topic`` are
log = logging.getLogger("groupcoord.server")

__all__ = [
    "API_CREATE_TOPICS",
    "API_DELETE_TOPICS",
    "API_FETCH",
    "API_INIT_PRODUCER_ID",
    "API_LIST_OFFSETS",
    "API_METADATA",
    "API_PRODUCE",
    "DATA_API_VERSIONS",
    "TIMESTAMP_AFTER_MAX_MS",
    "BrokerInfo",
    "DataApiConfig",
    "DataApis",
]

API_PRODUCE = 0
API_FETCH = 1
API_LIST_OFFSETS = 2
API_METADATA = 3
API_CREATE_TOPICS = 19
API_DELETE_TOPICS = 20
API_INIT_PRODUCER_ID = 22

#: api_key -> (min, max) version implemented here; every version in range has a kio schema
#: (Produce < 3 and Fetch < 4 carry v0/v1 message sets, which Kafka 4 dropped too).
DATA_API_VERSIONS: Mapping[int, tuple[int, int]] = MappingProxyType(
    {
        API_PRODUCE: (3, 13),
        API_FETCH: (4, 18),
        API_LIST_OFFSETS: (1, 11),
        API_METADATA: (0, 13),
        API_CREATE_TOPICS: (2, 7),
        API_DELETE_TOPICS: (1, 6),
        API_INIT_PRODUCER_ID: (0, 6),
    }
)

_NO_THROTTLE = datetime.timedelta(0)
#: KIP-110: zstd batches need Produce v7+ and Fetch v10+; older requests get
#: UNSUPPORTED_COMPRESSION_TYPE for them, as from Kafka.
_ZSTD_MIN_PRODUCE = 7
_ZSTD_MIN_FETCH = 10
_UNKNOWN_LEADER_EPOCH = -1
_OPS_NOT_REQUESTED = -(2**31)
# Authorized-operation bitfields when asked (no ACLs: everything a principal could do).
# Bits are Kafka's AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
# DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
_TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))
_CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int
    cluster_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DataApiConfig:
    """``auto_create_partitions``: None: Metadata never creates topics (UNKNOWN_TOPIC_OR_PARTITION);
    N: a Metadata request that allows it creates a missing topic with N partitions."""

    auto_create_partitions: int | None


def _code(error: KafkaError | None) -> ErrorCode:
    return ErrorCode.none if error is None else ErrorCode(error.code)


def _make(cls: Any, **fields: object) -> object:
    """Build a kio entity of any version from the fields that version has."""
    present = cls.__dataclass_fields__
    return cls(**{k: v for k, v in fields.items() if k in present})


def _response_module(request: Any) -> ModuleType:
    return load_payload_module(request.__api_key__, request.__version__, EntityType.response)


class DataApis:
    """Answers data-plane requests from one TopicLog (see the module docstring)."""

    __slots__ = ("_broker", "_config", "_handlers", "_log", "_now_ms")

    def __init__(
        self,
        log: TopicLog,
        broker: BrokerInfo,
        config: DataApiConfig,
        now_ms: Callable[[], int],
    ) -> None:
        """``now_ms``: the broker's wall clock in Unix epoch milliseconds (record timestamps
        are compared with it, so a monotonic clock would refuse every batch)."""
        self._log = log
        self._broker = broker
        self._config = config
        self._now_ms = now_ms
        self._handlers: dict[int, Callable[[Any, Allowed | None], object]] = {
            API_PRODUCE: self._produce,
            API_FETCH: self._fetch,
            API_LIST_OFFSETS: self._list_offsets,
            API_METADATA: self._metadata,
            API_CREATE_TOPICS: self._create_topics,
            API_DELETE_TOPICS: self._delete_topics,
            API_INIT_PRODUCER_ID: self._init_producer_id,
        }

    def handle(self, api_key: int, request: object, allowed: Allowed | None = None) -> object:
        """The kio response (same version) to ``request``; ``None`` for an acks=0 Produce.
        ``allowed``: the caller's ACL check (``None``: no authorizer, everything allowed);
        what each API needs is Kafka's (module docstring of :mod:`groupcoord.server.access`
        for the group APIs; here: Produce WRITE, Fetch READ, ListOffsets and Metadata
        DESCRIBE on the topic, CreateTopics CREATE on the cluster or the topic, DeleteTopics
        DELETE, InitProducerId IDEMPOTENT_WRITE on the cluster or WRITE on some topic).

        UnsupportedVersionError if ``api_key``/the request's version is not served here.
        """
        handler = self._handlers.get(api_key)
        version = getattr(request, "__version__", None)
        if handler is None or getattr(request, "__api_key__", None) != api_key:
            raise UnsupportedVersionError(f"api key {api_key} is not a data API")
        low, high = DATA_API_VERSIONS[api_key]
        if not isinstance(version, int) or not low <= version <= high:
            raise UnsupportedVersionError(f"api key {api_key} version {version} not served")
        return handler(request, allowed)

    # ------------------------------------------------------------------ Metadata

    def _metadata(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        v = req.__version__
        include_ops = bool(getattr(req, "include_topic_authorized_operations", False))
        requested = req.topics
        topics: list[object] = []
        if requested is None or (v == 0 and not requested):
            for name in sorted(self._log.topics()):
                if allowed is not None and not allowed(
                    AclOperation.DESCRIBE, ResourceType.TOPIC, name
                ):
                    continue  # Kafka lists only the topics the caller may describe
                info = self._log.topic(name)
                assert info is not None
                topics.append(self._topic_metadata(mod, info, include_ops))
        else:
            allow_auto = bool(getattr(req, "allow_auto_topic_creation", True))
            seen: set[object] = set()
            for t in requested:
                key = t.name if t.name is not None else getattr(t, "topic_id", None)
                if key in seen:
                    continue
                seen.add(key)
                topics.append(self._one_topic_metadata(mod, t, allow_auto, include_ops, allowed))
        return _make(
            mod.MetadataResponse,
            throttle_time=_NO_THROTTLE,
            brokers=(
                _make(
                    mod.MetadataResponseBroker,
                    node_id=self._broker.node_id,
                    host=self._broker.host,
                    port=self._broker.port,
                    rack=None,
                ),
            ),
            cluster_id=self._broker.cluster_id,
            controller_id=self._broker.node_id,
            topics=tuple(topics),
            cluster_authorized_operations=_CLUSTER_OPERATIONS
            if getattr(req, "include_cluster_authorized_operations", False)
            else _OPS_NOT_REQUESTED,
            error_code=ErrorCode.none,
        )

    def _one_topic_metadata(
        self, mod: ModuleType, t: Any, allow_auto: bool, include_ops: bool, allowed: Allowed | None
    ) -> object:
        if t.name is None and t.__version__ < 12:
            # v10-11 carry a topic id field but no way to answer a topic by id (the name
            # is not nullable in their responses); Kafka refuses these as invalid.
            return self._topic_error(
                mod, "", None, InvalidRequestError("topic ids need Metadata v12+")
            )
        if t.name is None:
            topic_id = getattr(t, "topic_id", None)
            info = self._log.topic_by_id(topic_id) if topic_id is not None else None
            if info is None:
                return self._topic_error(mod, None, topic_id, UnknownTopicIdError())
            if not _may(allowed, AclOperation.DESCRIBE, info.name):
                return self._topic_error(mod, None, topic_id, TopicAuthorizationFailedError())
            return self._topic_metadata(mod, info, include_ops)
        name: str = t.name
        if not _may(allowed, AclOperation.DESCRIBE, name):
            return self._topic_error(mod, name, None, TopicAuthorizationFailedError())
        info = self._log.topic(name)
        if info is None:
            partitions = self._config.auto_create_partitions
            if partitions is None or not allow_auto or not _may_create(allowed, name):
                return self._topic_error(mod, name, None, UnknownTopicOrPartitionError())
            try:
                info = self._log.create_topic(name, partitions)
            except KafkaError as e:
                return self._topic_error(mod, name, None, e)
            except StoreError as e:
                return self._topic_error(mod, name, None, KafkaStorageError(str(e)))
            log.info(
                "created topic %s with %d partitions (auto-created by Metadata)", name, partitions
            )
        return self._topic_metadata(mod, info, include_ops)

    def _topic_error(
        self, mod: ModuleType, name: str | None, topic_id: uuid.UUID | None, error: KafkaError
    ) -> object:
        return _make(
            mod.MetadataResponseTopic,
            error_code=_code(error),
            name=name,
            topic_id=topic_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_OPS_NOT_REQUESTED,
        )

    def _topic_metadata(self, mod: ModuleType, info: TopicInfo, include_ops: bool) -> object:
        node = self._broker.node_id
        partitions = tuple(
            _make(
                mod.MetadataResponsePartition,
                error_code=ErrorCode.none,
                partition_index=p,
                leader_id=node,
                leader_epoch=_UNKNOWN_LEADER_EPOCH,
                replica_nodes=(node,),
                isr_nodes=(node,),
                offline_replicas=(),
            )
            for p in range(info.partitions)
        )
        return _make(
            mod.MetadataResponseTopic,
            error_code=ErrorCode.none,
            name=info.name,
            topic_id=info.topic_id,
            is_internal=False,
            partitions=partitions,
            topic_authorized_operations=_TOPIC_OPERATIONS if include_ops else _OPS_NOT_REQUESTED,
        )

    # ------------------------------------------------------------------ CreateTopics

    def _create_topics(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        names = [t.name for t in req.topics]
        too_many = self._total_partitions(req.topics) > MAX_PARTITIONS_PER_REQUEST
        results = []
        for t in req.topics:
            if too_many:
                # Kafka's controller refuses the whole request, every topic alike.
                error: KafkaError | None = PolicyViolationError(
                    "Excessively large number of partitions per request."
                )
                partitions = replication = -1
                info = None
            elif names.count(t.name) > 1:
                error = InvalidRequestError(
                    f"topic {t.name!r} appears more than once in the request"
                )
                partitions = replication = -1
                info = None
            elif not _may_create(allowed, t.name):
                error = TopicAuthorizationFailedError("needs CREATE on the cluster or the topic")
                partitions = replication = -1
                info = None
            else:
                error, partitions, replication, info = self._create_one(t, req.validate_only)
            results.append(
                _make(
                    mod.CreatableTopicResult,
                    name=t.name,
                    topic_id=info.topic_id if info is not None else None,
                    error_code=_code(error),
                    error_message=error.message if error is not None else None,
                    num_partitions=partitions if error is None else -1,
                    replication_factor=replication if error is None else -1,
                    configs=() if error is None else None,
                )
            )
        return _make(mod.CreateTopicsResponse, throttle_time=_NO_THROTTLE, topics=tuple(results))

    def _create_one(
        self, t: Any, validate_only: bool
    ) -> tuple[KafkaError | None, int, int, TopicInfo | None]:
        """(error, partitions, replication factor, created topic) for one CreatableTopic."""
        try:
            partitions = self._requested_partitions(t)
            for config in t.configs:
                if config.name == "message.timestamp.type" and config.value not in (
                    None,
                    "CreateTime",
                ):
                    raise InvalidConfigError(
                        f"message.timestamp.type={config.value} is not supported "
                        "(topics are CreateTime)"
                    )
            if validate_only:
                self._log.check_new_topic(t.name, partitions)
                return None, partitions, 1, None
            info = self._log.create_topic(t.name, partitions)
        except KafkaError as e:
            return e, -1, -1, None
        except StoreError as e:
            return KafkaStorageError(str(e)), -1, -1, None
        log.info("created topic %s with %d partitions (CreateTopics)", t.name, partitions)
        return None, partitions, 1, info

    def _total_partitions(self, topics: Any) -> int:
        """Partitions a CreateTopics asks for in all (counted as Kafka's controller does)."""
        total = 0
        for t in topics:
            if t.assignments:
                total += len(t.assignments)
            elif t.num_partitions == -1:
                total += self._config.auto_create_partitions or 1
            elif t.num_partitions > 0:
                total += t.num_partitions
        return total

    def _requested_partitions(self, t: Any) -> int:
        """The partition count a CreatableTopic asks for, validated as a 1-broker Kafka does."""
        node = self._broker.node_id
        if t.assignments:
            if t.num_partitions != -1 or t.replication_factor != -1:
                raise InvalidRequestError(
                    "both numPartitions or replicationFactor and replicasAssignments were set"
                )
            indexes = sorted(a.partition_index for a in t.assignments)
            if indexes != list(range(len(indexes))):
                raise InvalidReplicationAssignmentError(
                    "partitions should be a consecutive 0-based integer sequence"
                )
            for a in t.assignments:
                if tuple(a.broker_ids) != (node,):
                    raise InvalidReplicationAssignmentError(
                        f"partition {a.partition_index} must have exactly broker {node} "
                        f"as its replica, not {list(a.broker_ids)}"
                    )
            return len(indexes)
        replication = t.replication_factor
        if replication == 0 or replication < -1:
            raise InvalidReplicationFactorError("replication factor must be larger than 0")
        if replication > 1:
            raise InvalidReplicationFactorError(
                f"replication factor: {replication} larger than available brokers: 1"
            )
        if t.num_partitions == -1:
            return self._config.auto_create_partitions or 1
        if t.num_partitions <= 0:
            raise InvalidPartitionsError("number of partitions must be larger than 0")
        return int(t.num_partitions)

    # ------------------------------------------------------------------ DeleteTopics

    def _delete_topics(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        if req.__version__ >= 6:
            wanted = [(t.name, t.topic_id) for t in req.topics]
        else:
            wanted = [(name, None) for name in req.topic_names]
        results = []
        seen: set[object] = set()
        for name, topic_id in wanted:
            error: KafkaError | None = None
            out_name, out_id = name, topic_id
            key = name if name is not None else topic_id
            try:
                if key in seen:
                    raise InvalidRequestError("topic appears more than once in the request")
                seen.add(key)
                if name is not None and topic_id is not None:
                    raise InvalidRequestError("a topic must be given by name or by id, not both")
                if name is None:
                    info = self._log.topic_by_id(topic_id) if topic_id is not None else None
                    if info is None:
                        raise UnknownTopicIdError(f"no topic with id {topic_id}")
                    out_name = info.name
                    if not _may(allowed, AclOperation.DELETE, info.name):
                        raise TopicAuthorizationFailedError()
                    self._log.delete_topic(info.name)
                else:
                    if not _may(allowed, AclOperation.DELETE, name):
                        raise TopicAuthorizationFailedError()
                    out_id = self._log.delete_topic(name).topic_id
            except KafkaError as e:
                error = e
            except StoreError as e:
                error = KafkaStorageError(str(e))
            results.append(
                _make(
                    mod.DeletableTopicResult,
                    name=out_name,
                    topic_id=out_id,
                    error_code=_code(error),
                    error_message=error.message if error is not None else None,
                )
            )
        return _make(mod.DeleteTopicsResponse, throttle_time=_NO_THROTTLE, responses=tuple(results))

    # ------------------------------------------------------------------ Produce

    def _produce(self, req: Any, allowed: Allowed | None) -> object | None:
        mod = _response_module(req)
        by_id = req.__version__ >= 13
        request_error: KafkaError | None = None
        if req.acks not in (0, 1, -1):
            request_error = InvalidRequiredAcksError(f"acks must be 0, 1 or -1, not {req.acks}")
        elif req.transactional_id is not None:
            request_error = InvalidRequestError("transactions are not supported by this broker")
        topics = []
        for t in req.topic_data:
            name: str | None
            if by_id:
                info = self._log.topic_by_id(t.topic_id) if t.topic_id is not None else None
                name = info.name if info is not None else None
                missing: KafkaError = UnknownTopicIdError(f"no topic with id {t.topic_id}")
            else:
                name = t.name
                missing = UnknownTopicOrPartitionError(f"topic {t.name!r} does not exist")
            refused = name is not None and not _may(allowed, AclOperation.WRITE, name)
            partitions = []
            for p in t.partition_data:
                error = request_error
                if error is None and name is None:
                    error = missing
                if error is None and refused:
                    error = TopicAuthorizationFailedError()
                base_offset = -1
                log_start = -1
                if error is None:
                    assert name is not None
                    try:
                        result = self._append(name, p.index, p.records, req.__version__)
                        base_offset, log_start = result
                    except KafkaError as e:
                        error = e
                partitions.append(
                    _make(
                        mod.PartitionProduceResponse,
                        index=p.index,
                        error_code=_code(error),
                        base_offset=base_offset,
                        log_append_time=None,
                        log_start_offset=log_start,
                        record_errors=(),
                        error_message=error.message if error is not None else None,
                    )
                )
            topics.append(
                _make(
                    mod.TopicProduceResponse,
                    name=t.name if not by_id else None,
                    topic_id=t.topic_id if by_id else None,
                    partition_responses=tuple(partitions),
                )
            )
        if req.acks == 0:
            return None
        return _make(mod.ProduceResponse, responses=tuple(topics), throttle_time=_NO_THROTTLE)

    def _append(
        self, topic: str, partition: int, records: bytes | None, version: int
    ) -> tuple[int, int]:
        """(base offset, log start offset) of one partition's produced batch."""
        if not self._log.topic(topic):
            raise UnknownTopicOrPartitionError(f"topic {topic!r} does not exist")
        data = bytes(records) if records is not None else b""
        if version < _ZSTD_MIN_PRODUCE and _has_zstd(data):
            raise UnsupportedCompressionTypeError(
                f"produce v{version} cannot carry zstd batches (v{_ZSTD_MIN_PRODUCE}+ can)"
            )
        try:
            result = self._log.append(topic, partition, data, now_ms=self._now_ms())
        except StoreError as e:
            raise KafkaStorageError(str(e)) from e
        return result.base_offset, result.log_start_offset

    # ------------------------------------------------------------------ InitProducerId

    def _init_producer_id(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        error: KafkaError | None = None
        producer_id, epoch = -1, -1
        if req.transactional_id is not None or getattr(req, "enable2_pc", False):
            error = InvalidRequestError("transactions are not supported by this broker")
        elif not (
            _may(allowed, AclOperation.IDEMPOTENT_WRITE, CLUSTER_NAME, ResourceType.CLUSTER)
            or any(_may(allowed, AclOperation.WRITE, name) for name in self._log.topics())
        ):
            # KIP-679: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or
            # WRITE on some topic
            error = ClusterAuthorizationFailedError()
        else:
            try:
                producer_id, epoch = self._log.init_producer_id()
            except StoreError as e:
                error = KafkaStorageError(str(e))
        return _make(
            mod.InitProducerIdResponse,
            throttle_time=_NO_THROTTLE,
            error_code=_code(error),
            producer_id=producer_id,
            producer_epoch=epoch,
        )

    # ------------------------------------------------------------------ Fetch

    def _fetch_targets(
        self, req: Any, allowed: Allowed | None
    ) -> list[tuple[Any, str | None, KafkaError | None]]:
        """(request topic, resolved name, error for all its partitions) per requested topic."""
        out: list[tuple[Any, str | None, KafkaError | None]] = []
        for t in req.topics:
            if req.__version__ >= 13:
                info = self._log.topic_by_id(t.topic_id) if t.topic_id is not None else None
                if info is None:
                    out.append((t, None, UnknownTopicIdError(f"no topic with id {t.topic_id}")))
                    continue
                name = info.name
            else:
                name = t.topic
            if not _may(allowed, AclOperation.READ, name):
                out.append((t, name, TopicAuthorizationFailedError()))
            else:
                out.append((t, name, None))
        return out

    @staticmethod
    def _session_error(req: Any) -> KafkaError | None:
        epoch = getattr(req, "session_epoch", -1)
        if epoch not in (0, -1):
            return FetchSessionIdNotFoundError(
                f"fetch session {getattr(req, 'session_id', 0)} epoch {epoch}: "
                "this broker keeps no fetch sessions"
            )
        return None

    def _fetch(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        session_error = self._session_error(req)
        if session_error is not None:
            return _make(
                mod.FetchResponse,
                throttle_time=_NO_THROTTLE,
                error_code=_code(session_error),
                session_id=0,
                responses=(),
            )
        limit = req.max_bytes
        min_one = True
        topics = []
        for t, name, topic_error in self._fetch_targets(req, allowed):
            partitions = []
            for p in t.partitions:
                error = topic_error
                unread = error is not None
                records = b""
                high_watermark = log_start = -1
                if error is None:
                    assert name is not None
                    try:
                        result = self._log.read(
                            name,
                            p.partition,
                            p.fetch_offset,
                            min(p.partition_max_bytes, limit),
                            min_one=min_one,
                        )
                        records = result.records
                        high_watermark = result.high_watermark
                        log_start = result.log_start_offset
                        if req.__version__ < _ZSTD_MIN_FETCH and _has_zstd(records):
                            raise UnsupportedCompressionTypeError(
                                f"fetch v{req.__version__} cannot carry zstd batches"
                            )
                    except KafkaError as e:
                        error = e
                        unread = isinstance(e, UnknownTopicOrPartitionError)
                        records = b""
                        high_watermark = log_start = -1
                if records:
                    # KIP-74: only the first partition with data may exceed the limits.
                    min_one = False
                    limit = max(0, limit - len(records))
                partitions.append(
                    _make(
                        mod.PartitionData,
                        partition_index=p.partition,
                        error_code=_code(error),
                        high_watermark=high_watermark,
                        last_stable_offset=high_watermark,
                        log_start_offset=log_start,
                        # Kafka: [] for a partition refused before its log is read
                        # (unknown topic or partition), null once it was read
                        aborted_transactions=() if unread else None,
                        preferred_read_replica=-1,
                        records=records,
                    )
                )
            topics.append(
                _make(
                    mod.FetchableTopicResponse,
                    topic=name if name is not None else "",
                    topic_id=getattr(t, "topic_id", None),
                    partitions=tuple(partitions),
                )
            )
        return _make(
            mod.FetchResponse,
            throttle_time=_NO_THROTTLE,
            error_code=ErrorCode.none,
            session_id=0,
            responses=tuple(topics),
        )

    def fetch_satisfied(self, request: object, allowed: Allowed | None = None) -> bool:
        """True when the Fetch should be answered now: min_bytes are readable, some partition
        has an error to report (``allowed``: including a topic the caller may not read), it
        asks for nothing, or it does not want to wait."""
        req: Any = request
        if self._session_error(req) is not None:
            return True
        max_wait = req.max_wait
        wait_ms = (
            max_wait.total_seconds() * 1000 if hasattr(max_wait, "total_seconds") else max_wait
        )
        if wait_ms <= 0:
            return True
        limit = req.max_bytes
        min_one = True
        readable = 0
        asked = False
        for t, name, topic_error in self._fetch_targets(req, allowed):
            for p in t.partitions:
                asked = True
                if topic_error is not None or name is None:
                    return True
                try:
                    n = self._log.readable_bytes(
                        name,
                        p.partition,
                        p.fetch_offset,
                        min(p.partition_max_bytes, limit),
                        min_one=min_one,
                    )
                except KafkaError:
                    return True
                if n:
                    min_one = False
                    limit = max(0, limit - n)
                readable += n
        return not asked or readable >= req.min_bytes

    # ------------------------------------------------------------------ ListOffsets

    def _list_offsets(self, req: Any, allowed: Allowed | None) -> object:
        mod = _response_module(req)
        topics = []
        for t in req.topics:
            partitions = []
            refused = not _may(allowed, AclOperation.DESCRIBE, t.name)
            for p in t.partitions:
                error: KafkaError | None = None
                offset = timestamp = -1
                try:
                    if refused:
                        raise TopicAuthorizationFailedError()
                    if self._log.topic(t.name) is None:
                        raise UnknownTopicOrPartitionError(f"topic {t.name!r} does not exist")
                    found = self._log.offset_for_timestamp(t.name, p.partition_index, p.timestamp)
                    offset, timestamp = found.offset, found.timestamp
                except KafkaError as e:
                    error = e
                partitions.append(
                    _make(
                        mod.ListOffsetsPartitionResponse,
                        partition_index=p.partition_index,
                        error_code=_code(error),
                        timestamp=timestamp,
                        offset=offset,
                        leader_epoch=_UNKNOWN_LEADER_EPOCH,
                    )
                )
            topics.append(
                _make(mod.ListOffsetsTopicResponse, name=t.name, partitions=tuple(partitions))
            )
        return _make(mod.ListOffsetsResponse, throttle_time=_NO_THROTTLE, topics=tuple(topics))


def _may(
    allowed: Allowed | None,
    operation: AclOperation,
    name: str,
    resource_type: ResourceType = ResourceType.TOPIC,
) -> bool:
    return allowed is None or allowed(operation, resource_type, name)


def _may_create(allowed: Allowed | None, topic: str) -> bool:
    """Kafka: CREATE on the cluster, or on the topic."""
    return _may(allowed, AclOperation.CREATE, CLUSTER_NAME, ResourceType.CLUSTER) or _may(
        allowed, AclOperation.CREATE, topic
    )


def _has_zstd(records: bytes) -> bool:
    return any(header.compression == ZSTD for header, _ in iter_batches(records))
