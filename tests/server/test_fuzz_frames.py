"""Fuzz a live ``groupcoord serve`` with random and mutated frames.

At least 10^5 frames (``GROUPCOORD_FUZZ_FRAMES``) go to a server subprocess over many
pipelined connections: valid requests of every advertised API and version, the same with
bit flips, corrupted length fields, truncations, garbage payloads, wrong API versions and
unknown API keys, and connection-ending size prefixes (negative, beyond
``--max-frame-bytes``) or a stream that stops mid-frame. Every frame must be answered
(matching correlation id, in order) or end its connection; nothing may hang. Meanwhile a
well-behaved member heartbeats in its own group and must never see an error. After the
storm the server still answers ApiVersions, Metadata and JoinGroup on a fresh connection,
logged a reason for the connections it closed, and shuts down cleanly.

The RNG seed is printed (``GROUPCOORD_FUZZ_SEED`` replays a run).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import types
import typing
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.metadata.v1.request import MetadataRequest, MetadataRequestTopic
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import TZAware, i32, i32Timedelta, i64Timedelta

from groupcoord import Subscription
from groupcoord.protocol import encode_subscription
from groupcoord.protocol.wire import (
    UnsupportedApiError,
    decode_request,
    decode_request_header,
    decode_request_payload,
    decode_response,
    encode_request,
)

TARGET_FRAMES = int(os.environ.get("GROUPCOORD_FUZZ_FRAMES", "100000"))
MAX_FRAME_BYTES = 65_536
CONNECTIONS_IN_FLIGHT = 8
#: a frame neither answered nor followed by a close within this long is a hang
PROGRESS_TIMEOUT_S = 10.0
CALM_GROUP = "calm-group"
CALM_SESSION_MS = 10_000
CALM_HEARTBEAT_S = 0.2


# --------------------------------------------------------------------------------------
# the server under test
# --------------------------------------------------------------------------------------


class LiveServer:
    """``groupcoord serve`` with its stderr (the log) kept in a file."""

    def __init__(self, log_path: Path, *flags: str) -> None:
        self.log_path = log_path
        cmd = [
            sys.executable, "-m", "groupcoord", "serve", "--port", "0", "--memory",
            "--max-frame-bytes", str(MAX_FRAME_BYTES),
            "--group-min-session-timeout-ms", "1000",
            "--group-initial-rebalance-delay-ms", "0",
            "--topic", "fuzz-topic:3", *flags,
        ]  # fmt: skip
        with log_path.open("w") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=log, text=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = re.fullmatch(r"groupcoord listening on (.+):(\d+)\n", line)
        if match is None:
            self.proc.kill()
            raise RuntimeError(f"server did not start: {line!r}\n{self.log()}")
        self.host, self.port = match.group(1), int(match.group(2))

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime+stime

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()


@pytest.fixture(params=["asyncio", "native-io"])
def server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    # both shells: the native one splits frames and answers heartbeats on its own thread
    flags = ("--native-io",) if request.param == "native-io" else ("--no-native-io",)
    live = LiveServer(tmp_path / "server.log", *flags)
    try:
        yield live
    finally:
        live.stop()


# --------------------------------------------------------------------------------------
# a tiny blocking client (ApiVersions, the calm member, the after-storm checks)
# --------------------------------------------------------------------------------------


class Client:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.correlation = 0

    def call(self, request: Any) -> Any:
        cls = type(request)
        self.correlation += 1
        frame = encode_request(
            cls.__api_key__, cls.__version__, self.correlation, "fuzz-check", request
        )
        self.sock.sendall(frame)
        (size,) = struct.unpack(">i", _recv_exactly(self.sock, 4))
        corr, response = decode_response(
            cls.__api_key__, cls.__version__, _recv_exactly(self.sock, size)
        )
        assert corr == self.correlation
        return response

    def close(self) -> None:
        self.sock.close()


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the server")
        buf += chunk
    return bytes(buf)


def advertised_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    client = Client(host, port)
    try:
        response = client.call(
            ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")
        )
    finally:
        client.close()
    assert response.error_code == ErrorCode.none
    return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}


def join_group(client: Client, group: str, session_ms: int) -> tuple[str, int, bool]:
    """JoinGroup v5 (KIP-394 retry with the assigned id); (member id, generation, leader)."""
    subscription = encode_subscription(Subscription(["fuzz-topic"]), 1)
    member_id = ""
    for _attempt in range(2):
        response = client.call(JoinGroupRequest(
            group_id=GroupId(group),
            session_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=session_ms)),
            rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=session_ms)),
            member_id=member_id,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=subscription),),
        ))  # fmt: skip
        if response.error_code == ErrorCode.member_id_required:
            member_id = response.member_id
            continue
        assert response.error_code == ErrorCode.none, response
        return response.member_id, int(response.generation_id), response.leader == member_id
    raise AssertionError("JoinGroup kept asking for a member id")


class CalmMember(threading.Thread):
    """A well-behaved member: joins, syncs, then heartbeats until told to stop."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(daemon=True, name="calm-member")
        self.client = Client(host, port)
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.heartbeats = 0
        self.member_id, self.generation, leader = join_group(
            self.client, CALM_GROUP, CALM_SESSION_MS
        )
        assert leader, "the calm member is alone in its group"

    def run(self) -> None:
        try:
            self._sync()
            while not self.stop_event.wait(CALM_HEARTBEAT_S):
                response = self.client.call(HeartbeatRequest(
                    group_id=GroupId(CALM_GROUP), generation_id=i32(self.generation),
                    member_id=self.member_id,
                ))  # fmt: skip
                if response.error_code != ErrorCode.none:
                    self.errors.append(f"heartbeat: {response.error_code!r}")
                self.heartbeats += 1
        except Exception as exc:  # a disconnect or a timeout is what this test looks for
            self.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self.client.close()

    def _sync(self) -> None:
        # alone in its group, the member leads: it assigns itself nothing in particular
        response = self.client.call(SyncGroupRequest(
            group_id=GroupId(CALM_GROUP), generation_id=i32(self.generation),
            member_id=self.member_id,
            assignments=(SyncGroupRequestAssignment(member_id=self.member_id,
                                                    assignment=b""),),
        ))  # fmt: skip
        if response.error_code != ErrorCode.none:
            self.errors.append(f"sync: {response.error_code!r}")


# --------------------------------------------------------------------------------------
# frames
# --------------------------------------------------------------------------------------


def _example_value(kafka_type: str) -> Any:
    return {
        "int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "float64": 0.0,
        "bool": False, "string": "fuzz", "bytes": b"", "records": b"",
        "uuid": uuid.UUID(int=1), "error_code": ErrorCode.none,
        "timedelta_i32": i32Timedelta.parse(datetime.timedelta(0)),
        "timedelta_i64": i64Timedelta.parse(datetime.timedelta(0)),
        "datetime_i64": TZAware.truncate(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
    }[kafka_type]  # fmt: skip


def example_request(cls: type[Any]) -> Any:
    """A request of kio schema ``cls`` with every required field filled (one element in
    every array), so every field's encoding is present for the mutations to hit.

    Values are chosen to be answered at once: group "fuzz" and member "fuzz" are unknown,
    timeouts and max_wait are 0, producer acks is 1 (acks=0 would get no answer at all).
    """
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        hint = hints[f.name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if typing.get_origin(hint) is tuple:
            inner = typing.get_args(hint)[0]
            values[f.name] = (
                (_example_value(kafka_type),) if kafka_type else (example_request(inner),)
            )
        elif kafka_type is None:
            values[f.name] = example_request(hint)
        elif f.name == "acks":
            values[f.name] = 1
        elif f.default is dataclasses.MISSING:
            values[f.name] = _example_value(kafka_type)
    return cls(**values)


def valid_frames(versions: dict[int, tuple[int, int]]) -> list[bytes]:
    frames = []
    for api_key, (low, high) in sorted(versions.items()):
        for version in range(low, high + 1):
            request = example_request(load_request_schema(api_key, version))
            frames.append(encode_request(api_key, version, 0, "fuzz", request))
    return frames


#: kinds that are answerable by construction (``_answerable`` holds for every frame)
WELL_FORMED_KINDS = frozenset({"valid", "wrong-version", "unknown-api"})


@dataclass(slots=True)
class Frame:
    kind: str
    data: bytes
    #: the connection cannot go on after this frame (the server must close it)
    fatal: bool = False


@dataclass(slots=True)
class FrameFactory:
    rng: random.Random
    valid: list[bytes]
    versions: dict[int, tuple[int, int]]
    correlation: int = 0

    def _with_correlation(self, frame: bytes) -> bytes:
        # correlation ids are bytes 8..12 (after size, api key, api version)
        self.correlation = (self.correlation + 1) & 0x7FFFFFFF
        return frame[:8] + struct.pack(">i", self.correlation) + frame[12:]

    def _reframe(self, body: bytes) -> bytes:
        return struct.pack(">i", len(body)) + body

    def batch(self) -> list[Frame]:
        """One connection's frames: well-formed ones (answered, even when the version or
        API is one we do not serve) first, then mutated ones, sometimes an ending."""
        rng = self.rng
        frames = [self.well_formed() for _ in range(rng.randint(0, 40))]
        frames += [self.mutated() for _ in range(rng.randint(1, 8))]
        if rng.random() < 0.2:
            frames.append(self.ending())
        return frames

    def well_formed(self) -> Frame:
        rng = self.rng
        base = self._with_correlation(rng.choice(self.valid))
        roll = rng.random()
        if roll < 0.5:
            return Frame("valid", base)
        body = bytearray(base[4:])
        if roll < 0.75:
            api_key = struct.unpack_from(">h", body, 0)[0]
            low, high = self.versions[api_key]
            wrong = rng.choice((high + 1, high + rng.randint(2, 100), -1, 32767, low - 1))
            struct.pack_into(">h", body, 2, wrong)
            return Frame("wrong-version", self._reframe(bytes(body)))
        unknown = rng.choice((-1, 32767, rng.randint(100, 32766), rng.randint(-32768, -2)))
        struct.pack_into(">h", body, 0, unknown)
        return Frame("unknown-api", self._reframe(bytes(body)))

    def mutated(self) -> Frame:
        rng = self.rng
        body = bytearray(self._with_correlation(rng.choice(self.valid))[4:])
        roll = rng.random()
        if roll < 0.3:
            for _ in range(rng.randint(1, 8)):
                pos = rng.randrange(len(body))
                body[pos] ^= 1 << rng.randrange(8)
            return Frame("bit-flip", self._reframe(bytes(body)))
        if roll < 0.5:
            # an int16/int32 length or count field overwritten with a hostile value
            width = rng.choice((2, 4))
            bits = 8 * width - 1
            hostile = rng.choice((-1, -2, 0, 1, 0x7FFF, 0x7FFFFFFF, rng.randrange(1 << 16)))
            hostile = max(-(1 << bits), min(hostile, (1 << bits) - 1))
            pos = rng.randrange(4, max(5, len(body) - width + 1))
            body[pos : pos + width] = struct.pack(">h" if width == 2 else ">i", hostile)
            return Frame("length-corruption", self._reframe(bytes(body)))
        if roll < 0.65:
            return Frame("truncated", self._reframe(bytes(body[: rng.randrange(len(body))])))
        if roll < 0.85:
            garbage = rng.randbytes(rng.randrange(0, 200))
            return Frame("garbage-payload", self._reframe(bytes(body[:12]) + garbage))
        return Frame("random-bytes", self._reframe(rng.randbytes(rng.randrange(0, 64))))

    def ending(self) -> Frame:
        """A frame after which the stream cannot continue."""
        choice = self.rng.randrange(3)
        if choice == 0:
            size = self.rng.choice((MAX_FRAME_BYTES + 1, 1 << 30, 0x7FFFFFFF))
            return Frame("oversized", struct.pack(">i", size) + b"\x00" * 64, fatal=True)
        if choice == 1:
            size = self.rng.choice((-1, -(1 << 31), self.rng.randint(-1000, -2)))
            return Frame("negative-length", struct.pack(">i", size), fatal=True)
        # the size says more than will ever come: the client goes away mid-frame
        return Frame("eof-mid-frame", struct.pack(">i", 1000) + b"\x00" * 10, fatal=True)


def _answerable(data: bytes, versions: dict[int, tuple[int, int]]) -> bool:
    """A complete frame the server can read: a request it decodes, or one whose header
    names an API or version it does not serve (answered with UNSUPPORTED_VERSION)."""
    if len(data) < 4 or struct.unpack_from(">i", data)[0] != len(data) - 4:
        return False
    try:
        header, offset = decode_request_header(data[4:])
    except UnsupportedApiError:
        return True
    except Exception:
        return False
    low, high = versions.get(header.api_key, (0, -1))
    if not low <= header.api_version <= high:
        return True
    try:
        decode_request_payload(header, data[4:], offset)
    except Exception:
        return False
    return True


def _expects_no_answer(data: bytes) -> bool:
    """Produce with acks=0 is the one request Kafka never answers."""
    if data[4:6] != b"\x00\x00":  # not Produce (api key 0): no need to decode it
        return False
    try:
        header, request = decode_request(data[4:])
    except Exception:
        return False
    return header.api_key == 0 and getattr(request, "acks", None) == 0


# --------------------------------------------------------------------------------------
# the storm
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    processed: int = 0
    sent: int = 0
    connections: int = 0
    closed_by_server: int = 0
    answered_by_kind: Counter[str] = field(default_factory=Counter)
    closing_kind: Counter[str] = field(default_factory=Counter)
    closed_ports: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def one_connection(host: str, port: int, factory: FrameFactory, tally: Tally) -> None:
    frames = factory.batch()
    reader, writer = await asyncio.open_connection(host, port)
    local_port = writer.get_extra_info("sockname")[1]
    tally.connections += 1
    try:
        writer.write(b"".join(f.data for f in frames))
        await writer.drain()
        if frames[-1].kind == "eof-mid-frame":
            writer.write_eof()
    except (ConnectionError, OSError):
        pass  # the server closed early; the reads below find out where
    tally.sent += len(frames)
    index = await _read_answers(reader, frames, tally)
    if index < len(frames):  # the connection closed; frames[index] got no answer
        # Its cause must be a bad frame at or after the first one not answered: the server
        # reads ahead, and may give up replies still being worked on (a group request)
        # when a later frame is bad, but never closes on good input.
        cause = next(
            (j for j in range(index, len(frames))
             if frames[j].kind not in WELL_FORMED_KINDS
             and not _answerable(frames[j].data, factory.versions)),
            None,
        )  # fmt: skip
        if cause is None:
            tally.failures.append(
                f"closed with no bad frame in {[f.kind for f in frames[index:]]} "
                f"after answering {index} of {[f.kind for f in frames]}"
            )
            cause = len(frames) - 1
        tally.processed += cause + 1
        tally.closed_by_server += 1
        tally.closing_kind[frames[cause].kind] += 1
        if frames[cause].kind != "eof-mid-frame":  # there the client went away
            tally.closed_ports.append(local_port)
    else:
        tally.processed += len(frames)
        if frames[-1].fatal:
            tally.failures.append(f"a {frames[-1].kind} frame did not end the connection")
    writer.close()
    with contextlib.suppress(ConnectionError, OSError):
        await writer.wait_closed()


async def _read_answers(reader: asyncio.StreamReader, frames: list[Frame], tally: Tally) -> int:
    """Match answers to frames in order; the index of the first frame neither answered
    nor legitimately silent (``len(frames)`` when all were)."""
    silent = [_expects_no_answer(f.data) for f in frames]
    index = 0
    while index < len(frames) and not frames[index].fatal:
        if all(silent[index:]):
            return len(frames)  # nothing more to wait for
        try:
            prefix = await asyncio.wait_for(reader.readexactly(4), PROGRESS_TIMEOUT_S)
            (size,) = struct.unpack(">i", prefix)
            body = await asyncio.wait_for(reader.readexactly(size), PROGRESS_TIMEOUT_S)
        except (asyncio.IncompleteReadError, ConnectionError):
            return index
        except TimeoutError:
            tally.failures.append(
                f"no answer and no close for {PROGRESS_TIMEOUT_S} s after a "
                f"{frames[index].kind} frame: {frames[index].data[:200].hex()}"
            )
            return len(frames)
        (corr,) = struct.unpack_from(">i", body, 0)
        # skip frames that legitimately get no answer (Produce with acks=0)
        while index < len(frames) and not _answers(frames[index], corr):
            if not silent[index]:
                tally.failures.append(
                    f"answer {corr} does not match the {frames[index].kind} frame "
                    f"{frames[index].data[:200].hex()} (frames on this connection: "
                    f"{[f.kind for f in frames]})"
                )
                return len(frames)
            index += 1
        if index < len(frames):
            tally.answered_by_kind[frames[index].kind] += 1
            index += 1
    if index < len(frames):
        # a fatal frame: the server must close, with nothing more to say
        try:
            extra = await asyncio.wait_for(reader.read(1), PROGRESS_TIMEOUT_S)
        except ConnectionError:
            extra = b""
        except TimeoutError:
            tally.failures.append(f"a {frames[index].kind} frame left the connection open")
            return len(frames)
        if extra:
            tally.failures.append(f"an answer to a {frames[index].kind} frame")
    return index


def _answers(frame: Frame, corr: int) -> bool:
    return len(frame.data) >= 12 and struct.unpack_from(">i", frame.data, 8)[0] == corr


async def storm(host: str, port: int, factory: FrameFactory, tally: Tally) -> None:
    async def worker() -> None:
        while tally.processed < TARGET_FRAMES and not tally.failures:
            await one_connection(host, port, factory, tally)

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS_IN_FLIGHT)))


def test_server_survives_a_frame_storm(server: LiveServer) -> None:
    seed = int(os.environ.get("GROUPCOORD_FUZZ_SEED", random.randrange(1 << 32)))
    print(f"fuzz seed {seed} (GROUPCOORD_FUZZ_SEED={seed} replays it)")
    versions = advertised_versions(server.host, server.port)
    factory = FrameFactory(random.Random(seed), valid_frames(versions), versions)

    calm = CalmMember(server.host, server.port)
    calm.start()
    tally = Tally()
    started, server_cpu, own_cpu = time.monotonic(), server.cpu_seconds(), time.process_time()
    asyncio.run(storm(server.host, server.port, factory, tally))
    elapsed = time.monotonic() - started
    server_cpu, own_cpu = server.cpu_seconds() - server_cpu, time.process_time() - own_cpu
    calm.stop_event.set()
    calm.join(timeout=30)

    print(
        f"seed {seed}: {tally.processed} frames processed ({tally.sent} sent) over "
        f"{tally.connections} connections in {elapsed:.1f} s (CPU: server {server_cpu:.1f} s, "
        f"this process {own_cpu:.1f} s); "
        f"answered {dict(tally.answered_by_kind)}; "
        f"connections closed after {dict(tally.closing_kind)}"
    )
    assert not tally.failures, f"seed {seed}: {tally.failures[:5]}"
    assert tally.processed >= TARGET_FRAMES
    assert server.proc.poll() is None, f"seed {seed}: the server died\n{server.log()[-5000:]}"
    assert calm.errors == [], f"seed {seed}: the calm member was disturbed: {calm.errors}"
    assert calm.heartbeats >= elapsed / CALM_HEARTBEAT_S / 3

    # still serving on a fresh connection
    after_versions = advertised_versions(server.host, server.port)
    assert after_versions == versions
    client = Client(server.host, server.port)
    try:
        metadata = client.call(MetadataRequest(
            topics=(MetadataRequestTopic(name=TopicName("fuzz-topic")),),
        ))  # fmt: skip
        assert [(b.host, b.port) for b in metadata.brokers] == [(server.host, server.port)]
        assert len(metadata.topics[0].partitions) == 3
        _member, generation, leader = join_group(client, "after-the-storm", 6000)
        assert (generation, leader) == (1, True)
    finally:
        client.close()

    log = server.log()
    assert "Traceback" not in log, log[-5000:]
    # every connection the server closed is in its log, with a reason (ports are reused
    # over a run this long, so a port's latest reason stands for all its connections)
    reasons = dict(re.findall(r"closing connection [\d.]+:(\d+): (\S.*)", log))
    unexplained = sorted({p for p in tally.closed_ports if str(p) not in reasons})
    assert not unexplained, f"closed without a logged reason: ports {unexplained[:20]}"
    assert server.stop() == 0
