"""SaslHandshake v0 (Kafka 0.10's framing): after it the tokens travel as bare frames
without a request header. SCRAM (kafka-python's client as the peer) and PLAIN log in and
the group APIs are served afterwards; a wrong password closes the connection with no
answer, as Kafka's does, and no bare frame reaches the group APIs. ApiVersions lists v0-v1
(what librdkafka 2.0.2, kcat 1.7.1's, checks for before it uses SASL)."""

from __future__ import annotations

import asyncio
import datetime
import struct
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from kafka.net.sasl.scram import ScramClient
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest
from kio.schema.types import GroupId
from kio.static.primitive import i32Timedelta
from server_harness import run_scenario

from groupcoord.protocol.wire import decode_response, encode_request
from groupcoord.security.scram import make_credential
from groupcoord.server import Server
from groupcoord.storage.credential_store import SqliteCredentialStore

JOIN = encode_request(11, 5, 9, "t", JoinGroupRequest(
    group_id=GroupId("g"), session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
    rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)), member_id="",
    group_instance_id=None, protocol_type="consumer",
    protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
))  # fmt: skip


def bare(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def ask(self, frame: bytes) -> bytes | None:
        """Send a frame, read one answer frame (``None``: the server closed)."""
        self.writer.write(frame)
        await self.writer.drain()
        try:
            size = struct.unpack(">i", await self.reader.readexactly(4))[0]
            return await self.reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def handshake_v0(self, mechanism: str) -> None:
        answer = await self.ask(
            encode_request(17, 0, 1, "t", SaslHandshakeRequest(mechanism=mechanism))
        )
        assert answer is not None
        correlation, response = decode_response(17, 0, answer)
        assert correlation == 1 and response.error_code == 0, response


async def connect(server: Server) -> Connection:
    return Connection(*await asyncio.open_connection("127.0.0.1", server.port))


def run(scenario: Callable[[Server], Awaitable[None]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with SqliteCredentialStore(Path(tmp) / "groupcoord.db") as store:
            store.put("alice", make_credential("sha512", "s3cret"))
        run_scenario(
            scenario,
            data_dir=tmp, listeners=("SASL_PLAINTEXT://127.0.0.1:0",),
            sasl_mechanisms=("SCRAM-SHA-512", "PLAIN"),
        )  # fmt: skip


def test_api_versions_lists_handshake_v0_and_v1() -> None:
    async def scenario(server: Server) -> None:
        c = await connect(server)
        answer = await c.ask(
            encode_request(
                18,
                3,
                1,
                "t",
                ApiVersionsRequest(client_software_name="t", client_software_version="1"),
            )
        )
        assert answer is not None
        _, response = decode_response(18, 3, answer)
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert ranges[17] == (0, 1) and ranges[36] == (0, 2)
        c.writer.close()

    run(scenario)


@pytest.mark.parametrize("password", ["s3cret", "wrong"])
def test_scram_with_bare_tokens(password: str) -> None:
    async def scenario(server: Server) -> None:
        c = await connect(server)
        await c.handshake_v0("SCRAM-SHA-512")
        client = ScramClient("alice", password, "SCRAM-SHA-512")
        server_first = await c.ask(bare(client.first_message()))
        assert server_first is not None and server_first.startswith(b"r=")
        client.process_server_first_message(server_first)
        server_final = await c.ask(bare(client.final_message()))
        if password != "s3cret":
            assert server_final is None  # closed, unanswered: no frame carries the error
            assert server.gateway is not None and server.gateway.coordinator.group_ids() == []
            return
        assert server_final is not None
        client.process_server_final_message(server_final)  # checks the server's proof
        assert await c.ask(JOIN) is not None
        assert server.gateway is not None and server.gateway.coordinator.group_ids() == ["g"]
        c.writer.close()

    run(scenario)


@pytest.mark.parametrize(("token", "ok"), [(b"\0alice\0s3cret", True), (b"\0alice\0no", False)])
def test_plain_with_a_bare_token(token: bytes, ok: bool) -> None:
    async def scenario(server: Server) -> None:
        c = await connect(server)
        await c.handshake_v0("PLAIN")
        answer = await c.ask(bare(token))
        assert (answer == b"") if ok else (answer is None)
        if ok:
            assert await c.ask(JOIN) is not None
        c.writer.close()

    run(scenario)


def test_a_request_frame_after_a_v0_handshake_is_a_token_not_a_request() -> None:
    async def scenario(server: Server) -> None:
        c = await connect(server)
        await c.handshake_v0("SCRAM-SHA-512")
        # a JoinGroup where the client-first-message belongs: a malformed token, closed
        assert await c.ask(JOIN) is None
        assert server.gateway is not None and server.gateway.coordinator.group_ids() == []

    run(scenario)
