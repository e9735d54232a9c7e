"""The native shell (``native_io``): heartbeats of current members answered on its thread,
byte for byte as Python answers them, and never for a member the coordinator would not
answer so; everything else through the dispatcher, in each connection's request order.

The listener scenarios run over the native shell (the default) and again over the asyncio
one (``test_asyncio_shell_scenarios.py``); the two shells answer the same request
sequences alike (``test_native_commits.py``, heartbeats and commits together)."""

from __future__ import annotations

import asyncio
import time

from group_calls import call, join, synced_member
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v1.request import MetadataRequestTopic
from kio.schema.types import TopicName
from server_harness import run_scenario
from wire_client import WireClient, pipeline_without_reading

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
)
from groupcoord.protocol.group_messages import to_kio_request
from groupcoord.protocol.heartbeat_codec import encode_heartbeat_response
from groupcoord.server import Server

REBALANCE_IN_PROGRESS = 27
UNKNOWN_MEMBER_ID = 25
ILLEGAL_GENERATION = 22
FENCED_INSTANCE_ID = 82


def native(**overrides: object) -> dict[str, object]:
    return {"native_io": True, **overrides}


def answered(server: Server) -> int:
    (listener,) = server.native_listeners
    return listener.counters()["heartbeats_answered"]


def heartbeat(m: JoinGroupResponse, version: int = 4, generation: int | None = None) -> object:
    return HeartbeatRequest(
        version=version,
        group_id="g",
        generation_id=m.generation_id if generation is None else generation,
        member_id=m.member_id,
    )


def leave(m: JoinGroupResponse) -> LeaveGroupRequest:
    return LeaveGroupRequest(
        version=3, group_id="g", members=(MemberIdentity(member_id=m.member_id),)
    )


async def heartbeat_error(client: WireClient, m: JoinGroupResponse, **kw: int) -> int:
    response = await call(client, heartbeat(m, **kw))
    assert isinstance(response, HeartbeatResponse)
    return response.error_code


def test_a_synced_members_heartbeats_are_answered_natively_byte_for_byte() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        before = answered(server)
        for version in range(5):
            correlation_id, frame = client.codec.encode(to_kio_request(heartbeat(member, version)))
            await client.send_raw(frame)
            body = await client.receive_raw()
            # what Python's codec writes for a heartbeat answered with no error
            assert body == encode_heartbeat_response(correlation_id, version, 0)[4:]
        assert answered(server) == before + 5
        await client.close()

    run_scenario(scenario, **native())


def test_wrong_generations_and_strangers_get_the_coordinators_errors() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        before = answered(server)
        assert await heartbeat_error(client, member, generation=member.generation_id + 1) == (
            ILLEGAL_GENERATION
        )
        stranger = HeartbeatRequest(version=4, group_id="g", generation_id=1, member_id="x")
        response = await call(client, stranger)
        assert isinstance(response, HeartbeatResponse)
        assert response.error_code == UNKNOWN_MEMBER_ID
        assert answered(server) == before  # both went to the coordinator
        assert await heartbeat_error(client, member) == 0
        assert answered(server) == before + 1
        await client.close()

    run_scenario(scenario, **native())


def test_a_joining_member_moves_the_others_to_the_coordinator() -> None:
    async def scenario(server: Server) -> None:
        first = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(first)
        assert await heartbeat_error(first, member) == 0
        # a second member joins: the group prepares a rebalance, and the first member's
        # next heartbeat must say so (the native answer would be "no error")
        second = await WireClient.connect("127.0.0.1", server.port)
        asked = await call(second, join())
        assert isinstance(asked, JoinGroupResponse)
        await second.send(to_kio_request(join(asked.member_id)))  # parks in the join phase
        await asyncio.sleep(0.05)
        before = answered(server)
        assert await heartbeat_error(first, member) == REBALANCE_IN_PROGRESS
        assert answered(server) == before
        await first.close()
        await second.close()

    run_scenario(scenario, **native())


def test_native_heartbeats_keep_a_member_alive_and_silence_expires_it() -> None:
    session_ms = 400

    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client, session_ms=session_ms)
        before = answered(server)
        end = time.monotonic() + 3 * session_ms / 1000
        while time.monotonic() < end:  # three session timeouts, answered natively
            assert await heartbeat_error(client, member) == 0
            await asyncio.sleep(session_ms / 4000)
        assert answered(server) - before >= 8
        described = await call(client, DescribeGroupsRequest(version=5, groups=("g",)))
        assert isinstance(described, DescribeGroupsResponse)
        assert [m.member_id for m in described.groups[0].members] == [member.member_id]
        # silence: the coordinator expires it, and its next heartbeat is not answered "ok"
        await asyncio.sleep(2 * session_ms / 1000)
        assert await heartbeat_error(client, member) == UNKNOWN_MEMBER_ID
        await client.close()

    run_scenario(
        scenario,
        coordinator=CoordinatorConfig(
            group_initial_rebalance_delay_ms=0, group_min_session_timeout_ms=100
        ),
        **native(),
    )


def test_a_native_answer_waits_behind_a_parked_reply_on_its_connection() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        other = await call(client, join(group="h"))
        assert isinstance(other, JoinGroupResponse)
        before = answered(server)
        # a join that parks for the initial rebalance delay, then a heartbeat the shell
        # answers at once: the heartbeat's reply must still come second
        parked = await client.send(to_kio_request(join(other.member_id, group="h")))
        beat = await client.send(to_kio_request(heartbeat(member)))
        first, second = await client.receive(), await client.receive()
        assert [first.correlation_id, second.correlation_id] == [parked, beat]
        assert answered(server) == before + 1
        await client.close()

    run_scenario(
        scenario,
        coordinator=CoordinatorConfig(group_initial_rebalance_delay_ms=300),
        **native(),
    )


def test_a_leave_takes_the_member_off_the_native_path() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        member = await synced_member(client)
        assert await heartbeat_error(client, member) == 0
        left = await call(client, leave(member))
        assert left.error is None  # type: ignore[attr-defined]
        before = answered(server)
        assert await heartbeat_error(client, member) == UNKNOWN_MEMBER_ID
        assert answered(server) == before
        await client.close()

    run_scenario(scenario, **native())


def test_a_client_that_never_reads_holds_bounded_memory_and_blocks_nobody() -> None:
    budget = 64 * 1024
    requests = 2_000  # replies of ~20 KB: 40 MB if nothing held the client back

    async def scenario(server: Server) -> None:
        big = MetadataV1(topics=(MetadataRequestTopic(name=TopicName("big")),))
        writer = await pipeline_without_reading(server.port, big, requests)
        (listener,) = server.native_listeners
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            other = await WireClient.connect("127.0.0.1", server.port)
            assert (await other.call(MetadataV1(topics=()))).brokers
            await other.close()
        # the budget, plus the replies of the frames one connection may have with Python
        # (32) and one read's worth: far below what it asked for
        assert budget // 2 < listener.counters()["peak_unsent"] <= 1_000_000
        # the write timeout closes it
        deadline = time.monotonic() + 10
        while listener.connections and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert listener.connections == 0
        writer.transport.abort()

    run_scenario(
        scenario,
        topics=(("big", 1_000),),
        max_buffered_bytes_per_connection=budget,
        connections_write_timeout_ms=1_000,
        **native(),
    )
