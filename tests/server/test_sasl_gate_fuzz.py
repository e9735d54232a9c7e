"""On a SASL listener nothing but ApiVersions and the SASL APIs reaches the server before
the client has authenticated: hypothesis sends group, offset, data and admin requests
(valid ones, and random bytes) before the handshake, between handshake and login, and in
the middle of a SCRAM exchange; each ends its connection unanswered, no group or offset
comes to exist, and a real client logs in and works afterwards."""

from __future__ import annotations

import asyncio
import datetime
import struct
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.metadata.v1.request import MetadataRequest
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from server_harness import run_scenario

from groupcoord.protocol.wire import encode_request
from groupcoord.security.scram import make_credential
from groupcoord.server import Server
from groupcoord.storage.credential_store import SqliteCredentialStore

GROUP = GroupId("g")
FORBIDDEN = [
    (11, 5, JoinGroupRequest(
        group_id=GROUP, session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)), member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )),
    (12, 4, HeartbeatRequest(group_id=GROUP, generation_id=i32(1), member_id="m",
                             group_instance_id=None)),
    (8, 8, OffsetCommitRequest(
        group_id=GROUP, generation_id_or_member_epoch=i32(-1), member_id="",
        group_instance_id=None,
        topics=(OffsetCommitRequestTopic(name=TopicName("t"), partitions=(
            OffsetCommitRequestPartition(partition_index=i32(0), committed_offset=i64(5),
                                         committed_leader_epoch=i32(-1),
                                         committed_metadata=None),)),),
    )),
    (42, 2, DeleteGroupsRequest(groups_names=(GROUP,))),
    (3, 1, MetadataRequest(topics=None)),
]  # fmt: skip


def frame(api_key: int, version: int, request: object, correlation: int = 7) -> bytes:
    return encode_request(api_key, version, correlation, "fuzz", request)


async def exchange(port: int, frames: list[bytes]) -> list[bytes]:
    """Send ``frames`` one by one, each answer read before the next; stops at EOF."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers: list[bytes] = []
    try:
        for f in frames:
            writer.write(f)
            await writer.drain()
            try:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                answers.append(await reader.readexactly(size))
            except (asyncio.IncompleteReadError, ConnectionError):
                answers.append(b"")  # closed without an answer
                break
    finally:
        writer.close()
    return answers


def users_dir(tmp: Path) -> str:
    with SqliteCredentialStore(tmp / "groupcoord.db") as store:
        store.put("alice", make_credential("sha512", "s3cret"))
    return str(tmp)


@settings(max_examples=40, deadline=None)
@given(
    stage=st.sampled_from(["fresh", "after handshake", "mid scram"]),
    forbidden=st.one_of(
        st.sampled_from(range(len(FORBIDDEN))),
        st.binary(min_size=4, max_size=64),
    ),
)
def test_nothing_passes_the_gate_unauthenticated(stage: str, forbidden: int | bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _one_attempt(users_dir(Path(tmp)), stage, forbidden)


def _one_attempt(data: str, stage: str, forbidden: int | bytes) -> None:
    if isinstance(forbidden, int):
        bad = frame(*FORBIDDEN[forbidden])
    else:
        # random bytes in a frame; its first two bytes must not name ApiVersions or SASL
        body = forbidden
        if struct.unpack(">h", body[:2])[0] in (17, 18, 36):
            body = b"\x00\x0b" + body[2:]
        bad = struct.pack(">i", len(body)) + body
    client = ScramClient("alice", "s3cret", "SCRAM-SHA-512")
    before = [
        frame(18, 3, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    ]
    if stage != "fresh":
        before.append(frame(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512")))
    if stage == "mid scram":
        before.append(frame(36, 2, SaslAuthenticateRequest(auth_bytes=client.first_message())))

    async def scenario(server: Server) -> None:
        answers = await exchange(server.port, [*before, bad])
        assert len(answers) == len(before) + 1 and all(answers[:-1]), answers
        assert answers[-1] == b"", "a request before authentication was answered"
        assert server.gateway is not None and server.gateway.coordinator.group_ids() == []
        # a real login still works, then the group APIs are served
        login = ScramClient("alice", "s3cret", "SCRAM-SHA-512")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:

            async def ask(f: bytes) -> bytes:
                writer.write(f)
                await writer.drain()
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                return await reader.readexactly(size)

            await ask(frame(17, 1, SaslHandshakeRequest(mechanism="SCRAM-SHA-512")))
            first = await ask(
                frame(36, 2, SaslAuthenticateRequest(auth_bytes=login.first_message()))
            )
            # header v1 (correlation id, no tagged fields), error code, null message, token
            assert struct.unpack(">h", first[5:7])[0] == 0, first
            token_len = first[8] - 1  # compact bytes: length + 1 (the message was null)
            login.process_server_first_message(first[9 : 9 + token_len])
            final = await ask(
                frame(36, 2, SaslAuthenticateRequest(auth_bytes=login.final_message()))
            )
            assert struct.unpack(">h", final[5:7])[0] == 0, final
            await ask(frame(*FORBIDDEN[0]))  # a JoinGroup, answered now
            assert server.gateway.coordinator.group_ids() == ["g"]
        finally:
            writer.close()

    run_scenario(
        scenario, data_dir=data, listeners=("SASL_PLAINTEXT://127.0.0.1:0",),
        sasl_mechanisms=("SCRAM-SHA-512",),
    )  # fmt: skip
