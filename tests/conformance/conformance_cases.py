"""The conformance catalogue: request sequences over the wire, and the server they expect.

Not a test module. Each case is a function of a :class:`~conformance_driver.Run`: it
opens connections (one per simulated client), sends requests and records every answer
under a step label. The same catalogue runs against Apache Kafka (the goldens,
``tools/conformance_goldens.py``) and against ``groupcoord serve`` (``test_conformance.py``);
both servers are configured alike (:data:`KAFKA_PROPERTIES`, :data:`SERVE_ARGS`).

Cases are deterministic by construction: each uses its own group and topics, members act
one at a time, and a step whose answer the coordinator parks (JoinGroup, SyncGroup) is
sent, checked unanswered, then released by the step that completes it. Nothing depends on
which of two members a coordinator picks when Kafka leaves the choice to a hash map.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance_driver import Case, Conn, Pending, Run
from kafka.record.default_records import DefaultRecordBatchBuilder

from groupcoord.protocol import encode_assignment, encode_subscription
from groupcoord.types import Assignment, Subscription, TopicPartition

#: what both servers are told (the broker's properties, serve's flags): the same group
#: limits, no initial rebalance delay, no topics created by Metadata requests
GROUP_MAX_SIZE = 3
MIN_SESSION_MS = 3000
MAX_SESSION_MS = 1_800_000
KAFKA_PROPERTIES = {
    "group.max.size": str(GROUP_MAX_SIZE),
    "group.min.session.timeout.ms": str(MIN_SESSION_MS),
    "group.max.session.timeout.ms": str(MAX_SESSION_MS),
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
}
SERVE_ARGS = (
    "--group-max-size", str(GROUP_MAX_SIZE),
    "--group-min-session-timeout-ms", str(MIN_SESSION_MS),
    "--group-max-session-timeout-ms", str(MAX_SESSION_MS),
    "--group-initial-rebalance-delay-ms", "0",
)  # fmt: skip

# API keys
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN, HEARTBEAT, LEAVE, SYNC, DESCRIBE, LIST = 11, 12, 13, 14, 15, 16
API_VERSIONS, CREATE_TOPICS, INIT_PRODUCER_ID, DELETE_GROUPS = 18, 19, 22, 42

#: the newest version of each group API that we, Kafka 4.4 and Kafka 3.9 all serve: what
#: the error-path cases speak (the version sweep covers the others)
V = {JOIN: 9, SYNC: 5, HEARTBEAT: 4, LEAVE: 5, OFFSET_COMMIT: 9, OFFSET_FETCH: 9}
V |= {DESCRIBE: 5, LIST: 5, DELETE_GROUPS: 2, FIND_COORDINATOR: 6}

#: how long a parked request must stay unanswered to count as parked
PARKED_S = 0.5
#: a fixed record timestamp (2023-11-14), accepted by both servers
BASE_TS = 1_700_000_000_000
#: the topic group cases commit offsets for (created before the cases run)
T = "conformance-t"
SHARED_TOPICS = {T: 2}

CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        if name in CASES:
            raise ValueError(f"case {name} registered twice")
        CASES[name] = fn
        return fn

    return register


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(topics=list(topics)), 1)


def assignment(*partitions: tuple[str, int]) -> bytes:
    return encode_assignment(Assignment([TopicPartition(t, p) for t, p in partitions]), 1)


class Member:
    """One simulated consumer: its connection, its member id and generation."""

    def __init__(
        self,
        run: Run,
        name: str,
        *,
        instance: str | None = None,
        session_ms: int = 10_000,
        rebalance_ms: int = 10_000,
        protocols: tuple[str, ...] = ("range",),
        protocol_type: str = "consumer",
        topics: tuple[str, ...] = (T,),
    ) -> None:
        self.run = run
        self.name = name
        self.conn: Conn = run.connect(f"cf-{name}")
        self.instance = instance
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        self.protocols = protocols
        self.protocol_type = protocol_type
        self.meta = subscription(*topics)
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol: str | None = None

    def join_fields(self, group: str | None = None) -> dict[str, Any]:
        return {
            "group_id": self.run.group if group is None else group,
            "session_timeout": self.session_ms,
            "rebalance_timeout": self.rebalance_ms,
            "member_id": self.member_id,
            "group_instance_id": self.instance,
            "protocol_type": self.protocol_type,
            "protocols": [{"name": p, "metadata": self.meta} for p in self.protocols],
            "reason": "conformance",
        }

    def join_send(self, step: str, version: int = V[JOIN], **override: Any) -> Pending:
        return self.run.send(self.conn, step, JOIN, version, **(self.join_fields() | override))

    def joined(self, pending: Pending) -> Any:
        response = self.run.receive(pending)
        self._learn(response)
        return response

    def join(self, step: str, version: int = V[JOIN], **override: Any) -> Any:
        return self.joined(self.join_send(step, version, **override))

    def join_new(self, step: str, version: int = V[JOIN]) -> Any:
        """Join with no member id; from v4 the first answer is MEMBER_ID_REQUIRED, and the
        second join (``step`` + "-again") carries the id it gave."""
        response = self.join(step, version)
        if response.error_code == 79:
            response = self.join(f"{step}-again", version)
        return response

    def _learn(self, response: Any) -> None:
        if response.member_id:
            self.member_id = response.member_id
        if response.error_code == 0:
            self.generation = response.generation_id
            self.leader = response.leader
            self.protocol = response.protocol_name

    def sync_send(
        self,
        step: str,
        assignments: dict[Member, bytes] | None = None,
        version: int = V[SYNC],
        **override: Any,
    ) -> Pending:
        fields = {
            "group_id": self.run.group,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.instance,
            "protocol_type": self.protocol_type,
            "protocol_name": self.protocol,
            "assignments": [
                {"member_id": m.member_id, "assignment": a} for m, a in (assignments or {}).items()
            ],
        }
        return self.run.send(self.conn, step, SYNC, version, **(fields | override))

    def sync(
        self,
        step: str,
        assignments: dict[Member, bytes] | None = None,
        version: int = V[SYNC],
        **override: Any,
    ) -> Any:
        return self.run.receive(self.sync_send(step, assignments, version, **override))

    def heartbeat(self, step: str, version: int = V[HEARTBEAT], **override: Any) -> Any:
        fields = {
            "group_id": self.run.group,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.instance,
        }
        return self.run.call(self.conn, step, HEARTBEAT, version, **(fields | override))

    def leave(self, step: str, version: int = V[LEAVE], **override: Any) -> Any:
        fields = {
            "group_id": self.run.group,
            "member_id": self.member_id,
            "members": [
                {"member_id": self.member_id, "group_instance_id": self.instance,
                 "reason": "conformance"}
            ],
        }  # fmt: skip
        return self.run.call(self.conn, step, LEAVE, version, **(fields | override))

    def commit(
        self,
        step: str,
        offsets: dict[tuple[str, int], int],
        version: int = V[OFFSET_COMMIT],
        **override: Any,
    ) -> Any:
        return self.run.call(
            self.conn, step, OFFSET_COMMIT, version,
            **(commit_fields(self.run.group, offsets, self.generation, self.member_id,
                             self.instance) | override),
        )  # fmt: skip


def commit_fields(
    group: str,
    offsets: dict[tuple[str, int], int],
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
    metadata: str = "",
) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset,
             "committed_leader_epoch": -1, "committed_metadata": metadata,
             "commit_timestamp": -1}
        )  # fmt: skip
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "group_instance_id": instance,
        "retention_time": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def offset_fetch(
    run: Run,
    conn: Conn,
    step: str,
    group: str,
    topics: dict[str, list[int]] | None,
    version: int = V[OFFSET_FETCH],
    require_stable: bool = False,
) -> Any:
    wanted = (
        None
        if topics is None
        else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
    )
    fields: dict[str, Any] = {"require_stable": require_stable}
    if version >= 8:
        fields["groups"] = [{"group_id": group, "topics": wanted}]
    else:
        fields |= {"group_id": group, "topics": wanted}
    return run.call(conn, step, OFFSET_FETCH, version, **fields)


def describe(run: Run, conn: Conn, step: str, *groups: str, version: int = V[DESCRIBE]) -> Any:
    return run.call(
        conn, step, DESCRIBE, version,
        groups=list(groups) or [run.group], include_authorized_operations=False,
    )  # fmt: skip


def stable_group(run: Run, *members: Member) -> None:
    """Bring ``members`` (fresh, first is the leader) into one stable generation: the
    first joins alone, each next one joins and the ones before rejoin, then all sync."""
    first, *rest = members
    first.join_new(f"{first.name}-join")
    first.sync(f"{first.name}-sync", {first: assignment()})
    joined = [first]
    for m in rest:
        response = m.join(f"{m.name}-join")
        if response.error_code == 79:
            pending = m.join_send(f"{m.name}-join-again")
        else:  # pre-v4: the join is parked at once
            raise AssertionError("stable_group expects JoinGroup v4+")
        # every earlier member rejoins (all sent first: each answer waits for the last)
        rejoins = [(j, j.join_send(f"{j.name}-rejoin-for-{m.name}")) for j in joined]
        for j, p in rejoins:
            j.joined(p)
        m.joined(pending)
        joined.append(m)
        leader = next(j for j in joined if j.member_id == j.leader)
        followers = [j for j in joined if j is not leader]
        parked = [j.sync_send(f"{j.name}-sync-with-{m.name}") for j in followers]
        leader.sync(f"{leader.name}-sync-with-{m.name}", {j: assignment() for j in joined})
        for p in parked:
            run.receive(p)


# --------------------------------------------------------------------------------------
# basics: ApiVersions, Metadata, FindCoordinator, CreateTopics, data APIs
# --------------------------------------------------------------------------------------

for _v in range(5):

    def _api_versions(run: Run, v: int = _v) -> None:
        run.call_any(
            "api-versions", API_VERSIONS, v,
            client_software_name="conformance", client_software_version="1.0",
        )  # fmt: skip

    case(f"api-versions-v{_v}")(_api_versions)


@case("metadata")
def _metadata(run: Run) -> None:
    topic = f"{run.case}-t"
    run.create_topic(topic, 2)
    conn = run.connect()
    for v in (1, 4, 8, 9, 10, 12, 13):
        run.call_any(
            f"topic-v{v}", METADATA, v,
            topics=[{"name": topic, "topic_id": None}], allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )  # fmt: skip
    run.call(
        conn, "unknown-topic", METADATA, 12,
        topics=[{"name": f"{run.case}-missing", "topic_id": None}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )  # fmt: skip
    # every topic (the record keeps only this case's and internal ones)
    run.call(
        conn, "all-topics", METADATA, 12,
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False,
    )  # fmt: skip
    run.call(
        conn, "no-topics", METADATA, 12,
        topics=[], allow_auto_topic_creation=False, include_topic_authorized_operations=False,
    )  # fmt: skip


@case("find-coordinator")
def _find_coordinator(run: Run) -> None:
    conn = run.connect()
    for v in range(4):
        run.call_any(f"group-v{v}", FIND_COORDINATOR, v, key=run.group, key_type=0)
    for v in (4, 5, 6):
        run.call_any(
            f"batched-v{v}", FIND_COORDINATOR, v,
            key_type=0, coordinator_keys=[run.group, f"{run.case}-other"],
        )  # fmt: skip
    run.call(conn, "transaction-v3", FIND_COORDINATOR, 3, key=f"{run.case}-txn", key_type=1)


@case("create-topics")
def _create_topics(run: Run) -> None:
    conn = run.connect()
    name = f"{run.case}-t"

    def create(
        step: str, v: int, topic: str, partitions: int, rf: int = 1, validate_only: bool = False
    ) -> None:
        run.call(
            conn, step, CREATE_TOPICS, v, timeout=30_000, validate_only=validate_only,
            topics=[{"name": topic, "num_partitions": partitions, "replication_factor": rf,
                     "assignments": [], "configs": []}],
        )  # fmt: skip

    for v in range(2, 8):
        create(f"create-v{v}", v, f"{name}{v}", 3)
    create("exists", 4, f"{name}4", 3)
    create("zero-partitions", 4, f"{name}-zero", 0)
    create("bad-name", 4, "bad name!", 1)
    create("replication-too-high", 4, f"{name}-rf", 1, rf=3)
    create("validate-only", 4, f"{name}-dry", 2, validate_only=True)
    create("defaults", 4, f"{name}-default", -1, rf=-1)
    # Kafka's brokers learn of a new topic from the metadata log a moment after
    # CreateTopics answers: wait for it (not recorded) before recording what Metadata says
    _wait_for_topic(run, conn, f"{name}-default")
    run.call(
        conn, "metadata-after", METADATA, 9,
        topics=[{"name": f"{name}-dry", "topic_id": None},
                {"name": f"{name}-default", "topic_id": None}],
        allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False,
    )  # fmt: skip


def _wait_for_topic(run: Run, conn: Conn, topic: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        metadata = run.setup(
            conn, METADATA, 12, topics=[{"name": topic, "topic_id": None}],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False,
        )  # fmt: skip
        if metadata.topics[0].error_code == 0 and metadata.topics[0].partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {topic} never appeared in Metadata")


def _batch(values: list[bytes], base_ts: int = BASE_TS) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i, value in enumerate(values):
        assert builder.append(i, timestamp=base_ts + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def _topic_id(run: Run, conn: Conn, topic: str) -> str:
    metadata = run.setup(
        conn, METADATA, 12, topics=[{"name": topic, "topic_id": None}],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )  # fmt: skip
    return str(metadata.topics[0].topic_id)


@case("produce-fetch-list-offsets")
def _produce_fetch(run: Run) -> None:
    topic = f"{run.case}-t"
    run.create_topic(topic, 2)
    conn = run.connect()
    topic_id = _topic_id(run, conn, topic)
    offset = 0
    for v in (3, 5, 7, 8, 9, 11, 12, 13):
        run.call_any(
            f"produce-v{v}", PRODUCE, v, transactional_id=None, acks=-1, timeout=10_000,
            topic_data=[{"name": topic, "topic_id": topic_id,
                         "partition_data": [{"index": 0, "records": _batch([b"a", b"b"])}]}],
        )  # fmt: skip
        offset += 2
    run.call(
        conn, "produce-unknown-partition", PRODUCE, 9, transactional_id=None, acks=-1,
        timeout=10_000,
        topic_data=[{"name": topic, "partition_data": [{"index": 7, "records": _batch([b"x"])}]}],
    )  # fmt: skip
    run.call(
        conn, "produce-unknown-topic", PRODUCE, 9, transactional_id=None, acks=-1,
        timeout=10_000,
        topic_data=[{"name": f"{run.case}-missing",
                     "partition_data": [{"index": 0, "records": _batch([b"x"])}]}],
    )  # fmt: skip
    for v in (4, 7, 11, 12, 13, 15, 16, 17, 18):
        run.call_any(
            f"fetch-v{v}", FETCH, v, replica_id=-1, max_wait=0, min_bytes=0,
            max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
            topics=[{"topic": topic, "topic_id": topic_id, "partitions": [
                {"partition": 0, "fetch_offset": 2, "partition_max_bytes": 1 << 20,
                 "log_start_offset": -1, "current_leader_epoch": -1}]}],
            forgotten_topics_data=[], rack_id="",
        )  # fmt: skip
    run.call(
        conn, "fetch-out-of-range", FETCH, 12, replica_id=-1, max_wait=0, min_bytes=0,
        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[{"topic": topic, "partitions": [
            {"partition": 0, "fetch_offset": 1000, "partition_max_bytes": 1 << 20}]}],
        forgotten_topics_data=[], rack_id="",
    )  # fmt: skip
    run.call(
        conn, "fetch-unknown-partition", FETCH, 12, replica_id=-1, max_wait=0, min_bytes=0,
        max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
        topics=[{"topic": topic, "partitions": [
            {"partition": 9, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        forgotten_topics_data=[], rack_id="",
    )  # fmt: skip
    for v in (1, 2, 4, 6, 7, 8, 9):
        for label, ts in (("earliest", -2), ("latest", -1), ("by-time", BASE_TS + 1)):
            run.call_any(
                f"list-offsets-v{v}-{label}", LIST_OFFSETS, v, replica_id=-1,
                isolation_level=0,
                topics=[{"name": topic, "partitions": [
                    {"partition_index": p, "timestamp": ts, "current_leader_epoch": -1,
                     "max_num_offsets": 1} for p in (0, 1)]}],
            )  # fmt: skip


# --------------------------------------------------------------------------------------
# group APIs: the lifecycle in every version we serve
# --------------------------------------------------------------------------------------


def _lifecycle(run: Run, i: int) -> None:
    def v(api: int, lo: int, hi: int) -> int:
        return max(lo, min(i, hi))

    group = run.group
    m = Member(run, "m")
    fv = v(FIND_COORDINATOR, 0, 6)
    if fv < 4:
        run.call(m.conn, "find-coordinator", FIND_COORDINATOR, fv, key=group, key_type=0)
    else:
        run.call(
            m.conn, "find-coordinator", FIND_COORDINATOR, fv, key_type=0,
            coordinator_keys=[group],
        )  # fmt: skip
    m.join_new("join", v(JOIN, 0, 9))
    m.sync("sync", {m: assignment((T, 0))}, v(SYNC, 0, 5))
    m.heartbeat("heartbeat", v(HEARTBEAT, 0, 4))
    m.commit("commit", {(T, 0): 5}, v(OFFSET_COMMIT, 2, 9))
    offset_fetch(run, m.conn, "offset-fetch", group, {T: [0, 1]}, v(OFFSET_FETCH, 1, 9))
    describe(run, m.conn, "describe", version=v(DESCRIBE, 0, 5))
    run.call(m.conn, "list", LIST, v(LIST, 0, 5), states_filter=[], types_filter=[])
    m.leave("leave", v(LEAVE, 0, 5))
    describe(run, m.conn, "describe-after-leave", version=v(DESCRIBE, 0, 5))
    run.call(m.conn, "delete", DELETE_GROUPS, v(DELETE_GROUPS, 0, 2), groups_names=[group])
    describe(run, m.conn, "describe-after-delete", version=v(DESCRIBE, 0, 5))


for _i in range(10):
    case(f"lifecycle-v{_i}")(lambda run, i=_i: _lifecycle(run, i))


@case("two-members-v3")
def _two_members_pre_kip394(run: Run) -> None:
    # before JoinGroup v4 a new member gets its id at once and is parked with the group
    a, b = Member(run, "a"), Member(run, "b")
    a.join("a-join", 3)
    a.sync("a-sync", {a: assignment((T, 0), (T, 1))}, 2)
    pending = b.join_send("b-join", 3)
    run.unanswered(pending, PARKED_S, "b-join-parked")
    a.heartbeat("a-heartbeat-rebalancing", 2)
    a.join("a-rejoin", 3)
    b.joined(pending)
    parked = b.sync_send("b-sync", version=2)
    run.unanswered(parked, PARKED_S, "b-sync-parked")
    a.sync("a-sync-2", {a: assignment((T, 0)), b: assignment((T, 1))}, 2)
    run.receive(parked)


# --------------------------------------------------------------------------------------
# group APIs: error paths
# --------------------------------------------------------------------------------------


@case("unknown-member-and-generation")
def _unknown_member(run: Run) -> None:
    a = Member(run, "a")
    a.join_new("join")
    a.sync("sync", {a: assignment((T, 0))})
    a.heartbeat("heartbeat-unknown-member", member_id="nobody")
    a.heartbeat("heartbeat-next-generation", generation_id=a.generation + 1)
    a.heartbeat("heartbeat-old-generation", generation_id=a.generation - 1)
    a.heartbeat("heartbeat-unknown-group", group_id=f"{run.case}-missing")
    a.sync("sync-unknown-member", {}, member_id="nobody")
    a.sync("sync-wrong-generation", {}, generation_id=a.generation + 1)
    a.commit("commit-unknown-member", {(T, 0): 1}, member_id="nobody")
    a.commit("commit-wrong-generation", {(T, 0): 1}, generation_id_or_member_epoch=99)
    a.leave("leave-unknown-member", members=[{"member_id": "nobody", "reason": "x"}])
    a.leave("leave-mixed", members=[{"member_id": "nobody"}, {"member_id": a.member_id}])
    describe(run, a.conn, "describe-after")


@case("join-unknown-member-id")
def _join_unknown_member(run: Run) -> None:
    a = Member(run, "a")
    a.member_id = "ghost"
    a.join("join-ghost-new-group")
    b = Member(run, "b")
    b.join_new("b-join")
    b.sync("b-sync", {b: assignment()})
    a.join("join-ghost-existing-group")


@case("rebalance-in-progress")
def _rebalance_in_progress(run: Run) -> None:
    a, b = Member(run, "a"), Member(run, "b")
    a.join_new("a-join")
    a.sync("a-sync", {a: assignment((T, 0), (T, 1))})
    b.join("b-join")
    pending = b.join_send("b-join-again")
    run.unanswered(pending, PARKED_S, "b-join-parked")
    a.heartbeat("a-heartbeat")
    a.commit("a-commit-during-rebalance", {(T, 0): 3})
    a.sync("a-sync-during-rebalance", {a: assignment()})
    describe(run, a.conn, "describe-preparing")
    a.join("a-rejoin")
    b.joined(pending)
    describe(run, a.conn, "describe-completing")
    a.heartbeat("a-heartbeat-completing")
    a.commit("a-commit-completing", {(T, 0): 4})
    parked = b.sync_send("b-sync")
    run.unanswered(parked, PARKED_S, "b-sync-parked")
    a.sync("a-sync-2", {a: assignment((T, 0)), b: assignment((T, 1))})
    run.receive(parked)
    a.heartbeat("a-heartbeat-stable")
    a.commit("a-commit-stable", {(T, 0): 5})
    offset_fetch(run, a.conn, "offsets", run.group, {T: [0]})


@case("session-timeouts")
def _session_timeouts(run: Run) -> None:
    Member(run, "low", session_ms=MIN_SESSION_MS - 1).join("below-min")
    Member(run, "high", session_ms=MAX_SESSION_MS + 1).join("above-max")
    Member(run, "min", session_ms=MIN_SESSION_MS).join_new("at-min")


@case("group-max-size")
def _group_max_size(run: Run) -> None:
    members = [Member(run, f"m{i}") for i in range(GROUP_MAX_SIZE)]
    stable_group(run, *members)
    extra = Member(run, "extra")
    extra.join("extra-join")
    extra.join("extra-join-again")
    describe(run, members[0].conn, "describe")


@case("inconsistent-protocol")
def _inconsistent_protocol(run: Run) -> None:
    a = Member(run, "a", protocols=("range", "roundrobin"))
    a.join_new("a-join")
    a.sync("a-sync", {a: assignment()})
    Member(run, "connect", protocol_type="connect").join("other-protocol-type")
    Member(run, "sticky", protocols=("sticky",)).join("no-common-protocol")
    Member(run, "none", protocols=()).join("no-protocols")
    Member(run, "empty-type", protocol_type="").join("empty-protocol-type")
    a.sync("sync-wrong-protocol-name", {}, protocol_name="roundrobin")
    a.sync("sync-wrong-protocol-type", {}, protocol_type="connect")
    a.sync("sync-v5-without-protocol-name", {}, protocol_name=None)
    a.sync("sync-v5-without-protocol-type", {}, protocol_type=None)
    a.sync("sync-v4-has-neither", {}, 4)
    describe(run, a.conn, "describe")


@case("protocol-vote")
def _protocol_vote(run: Run) -> None:
    # each member votes for its first choice among the protocols all support: the leader's
    # first choice loses 1 to 2 (b and c join in the same rebalance, so no vote ties)
    a = Member(run, "a", protocols=("range", "roundrobin"))
    b = Member(run, "b", protocols=("roundrobin", "range"))
    c = Member(run, "c", protocols=("roundrobin", "range"))
    a.join_new("a-join")
    a.sync("a-sync", {a: assignment()})
    b.join("b-join")
    c.join("c-join")
    pending = [b.join_send("b-join-again"), c.join_send("c-join-again")]
    a.join("a-rejoin")
    b.joined(pending[0])
    c.joined(pending[1])
    parked = [b.sync_send("b-sync"), c.sync_send("c-sync")]
    a.sync("a-sync-2", {a: assignment(), b: assignment(), c: assignment()})
    for p in parked:
        run.receive(p)
    describe(run, a.conn, "describe")


@case("fenced-instance")
def _fenced_instance(run: Run) -> None:
    old = Member(run, "old", instance="inst-1")
    old.join_new("old-join")
    old.sync("old-sync", {old: assignment((T, 0))})
    old.commit("old-commit", {(T, 0): 1})
    new = Member(run, "new", instance="inst-1")
    new.join("new-join")  # the same instance id: replaces the old member, no rebalance
    new.sync("new-sync")
    old.heartbeat("old-heartbeat")
    old.commit("old-commit-fenced", {(T, 0): 2})
    old.sync("old-sync-fenced")
    old.join("old-rejoin")
    old.leave("old-leave")
    new.heartbeat("new-heartbeat")
    new.heartbeat("new-heartbeat-other-instance", group_instance_id="inst-2")
    describe(run, new.conn, "describe")
    new.leave("new-leave")
    describe(run, new.conn, "describe-after-leave")


@case("static-leave-by-instance")
def _static_leave(run: Run) -> None:
    a = Member(run, "a", instance="inst-a")
    a.join_new("join")
    a.sync("sync", {a: assignment()})
    # LeaveGroup v3+ may name a static member by its instance id alone
    a.leave("leave-by-instance", members=[{"member_id": "", "group_instance_id": "inst-a"}])
    a.leave("leave-unknown-instance", members=[{"member_id": "", "group_instance_id": "inst-x"}])
    describe(run, a.conn, "describe")


@case("stale-commits")
def _stale_commits(run: Run) -> None:
    a, b = Member(run, "a"), Member(run, "b")
    stable_group(run, a, b)
    a.commit("commit-current", {(T, 0): 10})
    a.commit("commit-stale-generation", {(T, 0): 11}, generation_id_or_member_epoch=1)
    a.commit("commit-simple-while-active", {(T, 0): 12},
             generation_id_or_member_epoch=-1, member_id="")  # fmt: skip
    a.commit("commit-v5-simple-while-active", {(T, 0): 13}, version=5,
             generation_id_or_member_epoch=-1, member_id="")  # fmt: skip
    offset_fetch(run, a.conn, "offsets", run.group, {T: [0]})
    conn = run.connect()
    run.call(conn, "simple-commit-new-group", OFFSET_COMMIT, 9,
             **commit_fields(f"{run.case}-simple", {(T, 0): 7}))  # fmt: skip
    run.call(conn, "simple-commit-with-member", OFFSET_COMMIT, 9,
             **commit_fields(f"{run.case}-simple", {(T, 0): 8}, 1, "nobody"))  # fmt: skip
    offset_fetch(run, conn, "simple-offsets", f"{run.case}-simple", None)


@case("offset-commit-errors")
def _offset_commit_errors(run: Run) -> None:
    topic = f"{run.case}-t"
    run.create_topic(topic, 2)
    conn = run.connect()
    group = f"{run.case}-g"
    run.call(conn, "unknown-topic", OFFSET_COMMIT, 9,
             **commit_fields(group, {(f"{run.case}-missing", 0): 1}))  # fmt: skip
    run.call(conn, "unknown-partition", OFFSET_COMMIT, 9,
             **commit_fields(group, {(topic, 5): 1}))  # fmt: skip
    run.call(conn, "metadata-too-large", OFFSET_COMMIT, 9,
             **commit_fields(group, {(topic, 0): 1}, metadata="x" * 4097))  # fmt: skip
    run.call(conn, "metadata-at-limit", OFFSET_COMMIT, 9,
             **commit_fields(group, {(topic, 1): 1}, metadata="x" * 4096))  # fmt: skip
    run.call(conn, "negative-offset", OFFSET_COMMIT, 9,
             **commit_fields(group, {(topic, 0): -5}))  # fmt: skip
    for v in (2, 5, 8, 9):
        offset_fetch(run, conn, f"offsets-v{v}", group, {topic: [0, 1]}, v if v < 9 else 9)
    offset_fetch(run, conn, "offsets-all", group, None)
    # a commit refused in full: does it leave a group behind?
    refused = f"{run.case}-refused"
    run.call(conn, "refused-commit", OFFSET_COMMIT, 9,
             **commit_fields(refused, {(f"{run.case}-missing", 0): 1}))  # fmt: skip
    describe(run, conn, "describe-after-refused-commit", refused)
    run.call(conn, "list-after-refused-commit", LIST, 4, states_filter=[])


@case("offset-fetch")
def _offset_fetch(run: Run) -> None:
    topic = f"{run.case}-t"
    run.create_topic(topic, 2)
    conn = run.connect()
    run.setup(conn, OFFSET_COMMIT, 9, **commit_fields(run.group, {(topic, 1): 42}))
    for v in (1, 2, 5, 7, 8, 9):
        offset_fetch(run, conn, f"unknown-group-v{v}", f"{run.case}-missing", {topic: [0]}, v)
        offset_fetch(run, conn, f"partitions-v{v}", run.group, {topic: [0, 1, 7]}, v)
    offset_fetch(run, conn, "all-topics", run.group, None, 7)
    offset_fetch(run, conn, "unknown-topic", run.group, {f"{run.case}-missing": [0]}, 7)
    offset_fetch(run, conn, "require-stable", run.group, {topic: [1]}, 7, require_stable=True)
    run.call(
        conn, "batched-groups", OFFSET_FETCH, 9, require_stable=False,
        groups=[{"group_id": run.group, "topics": None},
                {"group_id": f"{run.case}-missing", "topics": [
                    {"name": topic, "partition_indexes": [1]}]}],
    )  # fmt: skip


@case("delete-groups")
def _delete_groups(run: Run) -> None:
    a = Member(run, "a")
    a.join_new("join")
    a.sync("sync", {a: assignment()})
    conn = run.connect()
    empty = f"{run.case}-empty"
    run.setup(conn, OFFSET_COMMIT, 9, **commit_fields(empty, {(T, 0): 1}))
    run.call(conn, "non-empty", DELETE_GROUPS, 2, groups_names=[run.group])
    run.call(conn, "unknown", DELETE_GROUPS, 2, groups_names=[f"{run.case}-missing"])
    run.call(conn, "empty-with-offsets", DELETE_GROUPS, 2, groups_names=[empty])
    run.call(conn, "again", DELETE_GROUPS, 2, groups_names=[empty])
    offset_fetch(run, conn, "offsets-after", empty, None, 7)
    run.call(conn, "batch", DELETE_GROUPS, 2, groups_names=[run.group, f"{run.case}-missing"])
    for v in (0, 1):
        run.call(conn, f"unknown-v{v}", DELETE_GROUPS, v, groups_names=[f"{run.case}-x"])


@case("session-expiry")
def _session_expiry(run: Run) -> None:
    a = Member(run, "a", session_ms=MIN_SESSION_MS)
    a.join_new("join")
    a.sync("sync", {a: assignment()})
    time.sleep(MIN_SESSION_MS / 1000 + 1.5)  # no heartbeat for longer than the session
    a.heartbeat("heartbeat-after-expiry")
    a.commit("commit-after-expiry", {(T, 0): 1})
    describe(run, a.conn, "describe")
    a.join("rejoin-with-old-id")


@case("rebalance-timeout")
def _rebalance_timeout(run: Run) -> None:
    kw = {"rebalance_ms": MIN_SESSION_MS, "session_ms": 20_000}
    a, b, c = Member(run, "a", **kw), Member(run, "b", **kw), Member(run, "c", **kw)
    stable_group(run, a, b)
    c.join("c-join")
    pending = c.join_send("c-join-again")
    a.join("a-rejoin")
    # b never rejoins: the join phase ends after the rebalance timeout without it
    c.joined(pending)
    b.heartbeat("b-heartbeat-after")
    describe(run, a.conn, "describe")


@case("sync-before-join-completes")
def _completing(run: Run) -> None:
    a, b = Member(run, "a"), Member(run, "b")
    stable_group(run, a, b)
    # the leader rejoins (new generation), then the follower's late SyncGroup of the old
    # generation arrives
    a.join_send("a-rejoin")
    b.sync("b-old-sync-during-rebalance")
    b.heartbeat("b-heartbeat")


@case("describe-and-list")
def _describe_list(run: Run) -> None:
    a = Member(run, "a", instance="inst-a")
    a.join_new("join")
    a.sync("sync", {a: assignment((T, 0))})
    conn = run.connect()
    empty = f"{run.case}-empty"
    run.setup(conn, OFFSET_COMMIT, 9, **commit_fields(empty, {(T, 0): 1}))
    for v in range(6):
        describe(run, conn, f"describe-v{v}", run.group, empty, f"{run.case}-missing", version=v)
    run.call(conn, "describe-with-operations", DESCRIBE, 5,
             groups=[run.group], include_authorized_operations=True)  # fmt: skip
    # v6 (KIP-1043, Kafka 4.0+; Kafka 3.9 closes the connection): a missing group says why
    run.call_any("describe-v6", DESCRIBE, 6, groups=[run.group, empty, f"{run.case}-missing"],
                 include_authorized_operations=True)  # fmt: skip
    for v in range(6):
        run.call(conn, f"list-v{v}", LIST, v, states_filter=[], types_filter=[])
    run.call(conn, "list-stable", LIST, 4, states_filter=["Stable"])
    run.call(conn, "list-empty", LIST, 4, states_filter=["Empty"])
    run.call(conn, "list-lowercase-state", LIST, 4, states_filter=["stable"])
    run.call(conn, "list-classic", LIST, 5, states_filter=[], types_filter=["classic"])
    run.call(conn, "list-consumer-type", LIST, 5, states_filter=[], types_filter=["consumer"])


@case("invalid-group-id")
def _invalid_group_id(run: Run) -> None:
    a = Member(run, "a")
    a.join("join-empty-group", group_id="")
    a.heartbeat("heartbeat-empty-group", group_id="", generation_id=1, member_id="x")
    a.sync("sync-empty-group", {}, group_id="", generation_id=1, member_id="x")
    a.leave("leave-empty-group", group_id="", members=[{"member_id": "x"}])
    describe(run, a.conn, "describe-empty-group", "")
    run.call_any("describe-v6-empty-group", DESCRIBE, 6, groups=[""],
                 include_authorized_operations=False)  # fmt: skip
    offset_fetch(run, a.conn, "offset-fetch-empty-group", "", {T: [0]}, 7)
    run.call(a.conn, "find-coordinator-empty", FIND_COORDINATOR, 3, key="", key_type=0)
    # the only case that names the group "": cases run side by side on one server
    run.call(a.conn, "commit-empty-group", OFFSET_COMMIT, 9, **commit_fields("", {(T, 0): 1}))
    describe(run, a.conn, "describe-empty-group-after-commit", "")
    run.call(a.conn, "delete-empty-group", DELETE_GROUPS, 2, groups_names=[""])


@case("join-v0-session-as-rebalance-timeout")
def _join_v0(run: Run) -> None:
    # JoinGroup v0 has no rebalance timeout: the session timeout stands for it
    a = Member(run, "a", session_ms=MIN_SESSION_MS)
    a.join("a-join", 0)
    a.sync("a-sync", {a: assignment()}, 0)
    b = Member(run, "b", session_ms=MIN_SESSION_MS)
    pending = b.join_send("b-join", 0)
    # a keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins: the join phase
    # ends one session timeout after it began, without a
    for i in range(2):
        time.sleep(0.5)
        a.heartbeat(f"a-heartbeat-{i}", 0)
    b.joined(pending)
    a.heartbeat("a-heartbeat-after", 0)
    describe(run, b.conn, "describe", version=0)
