"""The asyncio server over real sockets: ordering, isolation, errors, routing."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
import struct
from pathlib import Path

import pytest
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsV3
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.find_coordinator.v1.request import FindCoordinatorRequest as FindCoordinatorV1
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.join_group.v5.request import JoinGroupRequest as KioJoinV5
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from server_harness import run_scenario
from wire_client import WireClient

from groupcoord.broker.data_apis import DATA_API_VERSIONS
from groupcoord.broker.find_coordinator import GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE
from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    SqliteOffsetStore,
)
from groupcoord.errors import (
    MemberIdRequiredError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
)
from groupcoord.protocol.group_messages import from_kio_response, to_kio_request
from groupcoord.protocol.wire import encode_frame, kio_version_range
from groupcoord.server import Server, ServerConfig
from log_batches import build_batch, read_records


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def join(version: int = 5, member_id: str = "", group: str = "g") -> JoinGroupRequest:
    return JoinGroupRequest(
        version=version,
        group_id=group,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=(("range", b""),),
    )


async def connect(server: Server) -> WireClient:
    return await WireClient.connect("127.0.0.1", server.port)


async def group_call(client: WireClient, request: object) -> object:
    kio_response = await client.call(to_kio_request(request))  # type: ignore[arg-type]
    return from_kio_response(request.API_KEY, request.version, kio_response)  # type: ignore[attr-defined]


async def joined_member(client: WireClient, group: str = "g") -> JoinGroupResponse:
    """A member that completed a join phase (v4+: first asked for a member id)."""
    first = await group_call(client, join(group=group))
    assert isinstance(first, JoinGroupResponse) and first.error is MemberIdRequiredError
    second = await group_call(client, join(member_id=first.member_id, group=group))
    assert isinstance(second, JoinGroupResponse) and second.error is None
    return second


# ---------------------------------------------------------------- ApiVersions


def test_api_versions_advertises_exactly_what_is_served() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        response = await client.call(
            ApiVersionsV3(client_software_name="t", client_software_version="1")
        )
        assert response.error_code == ErrorCode.none
        table = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        for api_key, versions in DATA_API_VERSIONS.items():
            assert table[api_key] == versions
        assert table[18] == (0, 4)
        assert table[10] == (0, 6)
        assert table[11] == (0, 9) and table[12] == (0, 4) and table[8] == (2, 9)
        for api_key, (lo, hi) in table.items():
            known = kio_version_range(api_key)
            assert known is not None and known[0] <= lo <= hi <= known[1]
        await client.close()

    run_scenario(scenario)


def test_unsupported_api_versions_version_gets_the_v0_fallback() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        # ApiVersions v99: header v2 layout; the server answers v0 with error 35
        body = struct.pack(">hhih", 18, 99, 7, 1) + b"c" + b"\x00" + b"\x00\x00"
        await client.send_raw(encode_frame(body))
        frame = await client.receive_raw()
        correlation_id, error_code, count = struct.unpack_from(">ihi", frame)
        assert (correlation_id, error_code) == (7, 35)
        # as Kafka (KIP-511): only ApiVersions' own range, for the client to retry with
        assert count == 1
        assert struct.unpack_from(">hhh", frame, 10) == (18, 0, 4)
        # the connection stays usable
        response = await client.call(ApiVersionsV0())
        assert response.error_code == ErrorCode.none
        await client.close()

    run_scenario(scenario)


@pytest.mark.parametrize(
    ("api_key", "version"),
    # unknown key, unknown version, not served (DescribeGroups v7, CreatePartitions)
    [(9999, 0), (12, 99), (15, 7), (37, 0)],
)
def test_unknown_api_or_version_gets_unsupported_version_and_keeps_the_connection(
    api_key: int, version: int
) -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        body = struct.pack(">hhih", api_key, version, 41, -1) + b"\x00" * 8
        await client.send_raw(encode_frame(body))
        frame = await client.receive_raw()
        assert struct.unpack(">ih", frame[:6]) == (41, 35)
        response = await client.call(ApiVersionsV0())
        assert response.error_code == ErrorCode.none
        await client.close()

    run_scenario(scenario)


# ---------------------------------------------------------------- malformed frames


MALFORMED_FRAMES = [
    struct.pack(">i", -1),
    struct.pack(">i", 2_000_000),  # over the configured limit below
    encode_frame(struct.pack(">hhih", 12, 4, 5, -1) + b"\x00" + b"\xff\xff\xff"),  # garbage
    encode_frame(b"\x00\x0c"),  # truncated header
]
MALFORMED_IDS = ["negative-size", "oversized", "garbage-payload", "truncated-header"]


@pytest.mark.parametrize("raw", MALFORMED_FRAMES, ids=MALFORMED_IDS)
def test_malformed_frame_closes_only_that_connection(
    raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(server: Server) -> None:
        bystander = await connect(server)
        member = await joined_member(bystander)
        victim = await connect(server)
        await victim.send_raw(raw)
        assert await victim.closed_by_server()
        heartbeat = HeartbeatRequest(
            version=4, group_id="g", generation_id=member.generation_id, member_id=member.member_id
        )
        assert (await group_call(bystander, heartbeat)).error is None  # type: ignore[attr-defined]
        await bystander.close()

    with caplog.at_level(logging.WARNING, logger="groupcoord.server"):
        run_scenario(scenario, max_frame_bytes=1_000_000)
    assert any("closing connection" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- ordering and isolation


def test_pipelined_replies_come_back_in_request_order() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        first = await group_call(client, join())
        assert isinstance(first, JoinGroupResponse)
        # the JoinGroup is parked for the initial rebalance delay; the ApiVersions and
        # Heartbeat behind it on this connection must wait for it
        ids = [
            await client.send(to_kio_request(join(member_id=first.member_id))),
            await client.send(ApiVersionsV0()),
            await client.send(
                to_kio_request(
                    HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="nobody")
                )
            ),
        ]
        received = [await client.receive() for _ in ids]
        assert [r.correlation_id for r in received] == ids
        assert received[0].response.error_code == ErrorCode.none
        await client.close()

    run_scenario(scenario, coordinator=_delay(300))


def test_parked_join_does_not_block_other_connections() -> None:
    async def scenario(server: Server) -> None:
        joiner = await connect(server)
        first = await group_call(joiner, join())
        assert isinstance(first, JoinGroupResponse)
        parked = await joiner.send(to_kio_request(join(member_id=first.member_id)))
        other = await connect(server)
        heartbeat = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="x")
        answer = await group_call(other, heartbeat)
        assert answer.error is UnknownMemberIdError  # type: ignore[attr-defined]
        assert (await other.call(ApiVersionsV0())).error_code == ErrorCode.none
        # the parked join is still unanswered: its group is in the initial delay
        assert server.gateway is not None and server.gateway.pending == 1
        received = await joiner.receive()
        assert received.correlation_id == parked
        assert received.response.error_code == ErrorCode.none
        await joiner.close()
        await other.close()

    run_scenario(scenario, coordinator=_delay(2_000))


def _delay(ms_: int) -> CoordinatorConfig:
    return CoordinatorConfig(group_initial_rebalance_delay_ms=ms_)


# ---------------------------------------------------------------- FindCoordinator


def test_find_coordinator_batched_keys_all_map_to_this_node() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        response = await client.call(
            FindCoordinatorV4(key_type=i8(GROUP_KEY_TYPE), coordinator_keys=("a", "b", "c"))
        )
        assert [c.key for c in response.coordinators] == ["a", "b", "c"]
        for c in response.coordinators:
            assert (c.node_id, c.host, c.port) == (0, "127.0.0.1", server.port)
            assert c.error_code == ErrorCode.none
        txn = await client.call(
            FindCoordinatorV4(key_type=i8(TRANSACTION_KEY_TYPE), coordinator_keys=("tx",))
        )
        assert txn.coordinators[0].port == server.port
        share = await client.call(FindCoordinatorV4(key_type=i8(2), coordinator_keys=("s",)))
        assert share.coordinators[0].error_code == ErrorCode.invalid_request
        single = await client.call(FindCoordinatorV1(key="g", key_type=i8(GROUP_KEY_TYPE)))
        assert (single.error_code, single.port) == (ErrorCode.none, server.port)
        await client.close()

    run_scenario(scenario)


# ---------------------------------------------------------------- OffsetCommit routing


def test_offset_commit_to_unknown_topics_or_partitions_is_refused_per_partition() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)

        def part(index: int, offset: int) -> OffsetCommitRequestPartition:
            return OffsetCommitRequestPartition(partition_index=index, committed_offset=offset)

        commit = OffsetCommitRequest(
            version=8,
            group_id="offsets",
            topics=(
                OffsetCommitRequestTopic(name="t", partitions=(part(0, 5), part(7, 9))),
                OffsetCommitRequestTopic(name="missing", partitions=(part(0, 1),)),
            ),
        )
        response = await group_call(client, commit)
        assert isinstance(response, OffsetCommitResponse)
        errors = {
            (t.name, p.partition_index): p.error for t in response.topics for p in t.partitions
        }
        assert errors == {
            ("t", 0): None,
            ("t", 7): UnknownTopicOrPartitionError,
            ("missing", 0): UnknownTopicOrPartitionError,
        }
        fetched = await group_call(
            client,
            OffsetFetchRequest(
                version=7,
                group_id="offsets",
                topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),),
            ),
        )
        assert isinstance(fetched, OffsetFetchResponse)
        assert fetched.topics[0].partitions[0].committed_offset == 5
        await client.close()

    run_scenario(scenario, topics=(("t", 2),))


def test_offset_delete_over_the_wire_is_durable(tmp_path: Path) -> None:
    """OffsetDelete (API 47, advertised) of an Empty group's offset; a restart on the same
    data directory does not bring it back."""
    data_dir = str(tmp_path / "data")

    def part(index: int) -> OffsetCommitRequestPartition:
        return OffsetCommitRequestPartition(partition_index=index, committed_offset=10 + index)

    async def commit_then_delete(server: Server) -> None:
        client = await connect(server)
        versions = await client.call(
            ApiVersionsV3(client_software_name="t", client_software_version="1")
        )
        assert {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}[47] == (
            0,
            0,
        )
        commit = OffsetCommitRequest(
            version=8,
            group_id="offsets",
            topics=(OffsetCommitRequestTopic(name="t", partitions=(part(0), part(1))),),
        )
        assert isinstance(await group_call(client, commit), OffsetCommitResponse)
        deleted = await group_call(
            client,
            OffsetDeleteRequest(
                version=0,
                group_id="offsets",
                topics=(
                    OffsetDeleteRequestTopic(name="t", partitions=(0, 5)),
                    OffsetDeleteRequestTopic(name="missing", partitions=(0,)),
                ),
            ),
        )
        assert isinstance(deleted, OffsetDeleteResponse) and deleted.error is None
        assert {
            (t.name, p.partition_index): p.error for t in deleted.topics for p in t.partitions
        } == {
            ("t", 0): None,
            ("t", 5): UnknownTopicOrPartitionError,
            ("missing", 0): UnknownTopicOrPartitionError,
        }
        await client.close()

    async def fetch(server: Server) -> dict[int, int]:
        client = await connect(server)
        fetched = await group_call(
            client,
            OffsetFetchRequest(
                version=7,
                group_id="offsets",
                topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1)),),
            ),
        )
        await client.close()
        assert isinstance(fetched, OffsetFetchResponse)
        return {p.partition_index: p.committed_offset for p in fetched.topics[0].partitions}

    run_scenario(commit_then_delete, topics=(("t", 2),), data_dir=data_dir)
    assert run_scenario(fetch, topics=(("t", 2),), data_dir=data_dir) == {0: -1, 1: 11}


# ---------------------------------------------------------------- Fetch long poll


def _fetch(topic: str, offset: int, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(
        max_wait=ms(max_wait_ms),
        min_bytes=i32(1),
        topics=(
            FetchTopic(
                topic=topic,
                partitions=(
                    FetchPartition(
                        partition=i32(0),
                        fetch_offset=i64(offset),
                        partition_max_bytes=i32(1 << 20),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


def test_long_poll_fetch_is_woken_by_a_produce() -> None:
    async def scenario(server: Server) -> None:
        consumer = await connect(server)
        producer = await connect(server)
        # max_wait far beyond the client's receive timeout: only the append can answer it
        waiting = await consumer.send(_fetch("t", 0, 600_000))
        await asyncio.sleep(0.2)
        produce = ProduceRequest(
            acks=i16(1),
            timeout=ms(5_000),
            topic_data=(
                TopicProduceData(
                    name="t",
                    partition_data=(
                        PartitionProduceData(
                            index=i32(0), records=Records(build_batch([(b"k", b"v")]))
                        ),
                    ),
                ),
            ),
        )
        produced = await producer.call(produce)
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.none
        received = await consumer.receive()
        assert received.correlation_id == waiting
        partition = received.response.responses[0].partitions[0]
        assert [r.value for r in read_records(partition.records)] == [b"v"]
        await consumer.close()
        await producer.close()

    run_scenario(scenario, topics=(("t", 1),))


def test_fetch_with_nothing_to_read_answers_after_max_wait() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        response = await client.call(_fetch("t", 0, 100))
        partition = response.responses[0].partitions[0]
        assert partition.error_code == ErrorCode.none
        assert not partition.records
        await client.close()

    run_scenario(scenario, topics=(("t", 1),))


# ---------------------------------------------------------------- rebalance log


def test_every_completed_rebalance_is_logged_with_its_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(server: Server) -> JoinGroupResponse:
        client = await connect(server)
        first = await group_call(client, join(version=8))
        assert isinstance(first, JoinGroupResponse)
        request = JoinGroupRequest(
            version=8,
            group_id="logged",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id="",
            protocol_type="consumer",
            protocols=(("range", b""),),
            reason="scaling out",
        )
        first = await group_call(client, request)
        assert isinstance(first, JoinGroupResponse)
        second = await group_call(client, dataclasses.replace(request, member_id=first.member_id))
        assert isinstance(second, JoinGroupResponse) and second.error is None
        await client.close()
        return second

    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        member = run_scenario(scenario)
    lines = [r.getMessage() for r in caplog.records if "rebalance completed" in r.getMessage()]
    logged = [line for line in lines if "group=logged" in line]
    assert len(logged) == 1
    line = logged[0]
    assert "generation=1" in line and member.member_id in line
    assert "protocol=consumer/range" in line and "duration_ms=" in line
    assert "scaling out" in line


# ---------------------------------------------------------------- shutdown


def test_close_gives_up_parked_requests_and_closes_the_stores(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"

    async def main() -> None:
        server = Server(
            ServerConfig(
                port=0,
                data_dir=str(data_dir),
                topics=(("t", 1),),
                coordinator=CoordinatorConfig(group_initial_rebalance_delay_ms=60_000),
            )
        )
        await server.start()
        client = await connect(server)
        first = await group_call(client, join())
        assert isinstance(first, JoinGroupResponse)
        await client.send(to_kio_request(join(member_id=first.member_id)))
        commit = OffsetCommitRequest(
            version=8,
            group_id="other",
            topics=(
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=(
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=3),
                    ),
                ),
            ),
        )
        other = await connect(server)
        committed = await group_call(other, commit)
        assert isinstance(committed, OffsetCommitResponse)
        assert committed.topics[0].partitions[0].error is None
        assert server.gateway is not None and server.gateway.pending == 1
        async with asyncio.timeout(10):
            await server.close()
        assert server.connections == 0
        assert await client.closed_by_server()
        assert await other.closed_by_server()
        await client.close()
        await other.close()

    asyncio.run(main())
    # both stores let go of the database: it reopens with the commit in it
    store = SqliteOffsetStore(data_dir / "groupcoord.db")
    try:
        offsets = store.load().offsets["other"]
        assert [o.committed_offset for o in offsets.values()] == [3]
    finally:
        store.close()


def test_a_group_request_our_messages_refuse_gets_invalid_request() -> None:
    async def scenario(server: Server) -> None:
        client = await connect(server)
        duplicate = JoinGroupRequestProtocol(name="range", metadata=b"")
        response = await client.call(
            KioJoinV5(
                group_id="g",
                session_timeout=ms(10_000),
                rebalance_timeout=ms(10_000),
                member_id="m",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(duplicate, duplicate),
            )
        )
        assert response.error_code == ErrorCode.invalid_request
        assert response.member_id == "m"
        # the connection is still in service
        assert (await client.call(ApiVersionsV0())).error_code == ErrorCode.none
        await client.close()

    run_scenario(scenario)


def test_a_flood_of_pipelined_requests_is_answered_in_full_and_in_order() -> None:
    count = 3 * 1024  # beyond the queue limit: reading pauses and resumes on the way

    async def scenario(server: Server) -> None:
        client = await connect(server)
        frames = [client.codec.encode(ApiVersionsV0()) for _ in range(count)]
        await client.send_raw(b"".join(frame for _, frame in frames))
        received = [await client.receive() for _ in range(count)]
        assert [r.correlation_id for r in received] == [c for c, _ in frames]
        assert all(r.response.error_code == ErrorCode.none for r in received)
        await client.close()

    run_scenario(scenario)
