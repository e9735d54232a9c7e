"""pytest-benchmark: ``groupcoord serve`` over real sockets.

- ``test_bench_wire_heartbeats``: M members in groups of G, spread over C connections,
  each member sending its next Heartbeat the moment the previous one is answered (the
  fastest rate the protocol allows: one in flight per member). Reports heartbeats/s, the
  server's heartbeats per CPU-second (its user+system time from /proc), and latency
  percentiles (send to answer, as the load generator sees them).
- ``test_bench_wire_heartbeats_tls``: the same load against the same server build with an
  SSL listener (TLS 1.3, stdlib ``ssl`` on both sides) and a PLAINTEXT one, alternated in
  one run: the TLS cost per heartbeat is the difference in server CPU per heartbeat.
- ``test_bench_wire_consumer_group_heartbeats``: the heartbeat load with KIP-848 members
  (steady ConsumerGroupHeartbeat v1 of converged consumer groups), then classic members
  against a fresh server of the same build, in one run: server CPU per heartbeat of each.
- ``test_bench_wire_rebalance``: a Stable group of N members, one connection each as real
  consumers have, rebalances: every member sends JoinGroup, the leader computes a range
  assignment with groupcoord's assignor from the JoinGroup metadata, every member sends
  SyncGroup. Time from the first JoinGroup sent to the last SyncGroup answered.

The load generator is this file run as a script in its own process (pre-encoded frames,
pipelined, non-blocking sockets), so it does not share a core or a GIL with pytest; the
server is pinned to one CPU and the generator to the others when the machine has more
than one. Sizes: full (M=5000 over C=50 in groups of 50, 10 s; N=1000) with
``--benchmark-only`` or ``GROUPCOORD_BENCH_SCALE=full`` (or ``all``); otherwise a smoke
size (M=200 over C=10 in groups of 10, 1 s; N=20).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import selectors
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SESSION_MS = 120_000
TOPICS = {f"topic-{i}": 64 for i in range(10)}


def _full(config: Any) -> bool:
    scale = os.environ.get("GROUPCOORD_BENCH_SCALE", "").lower()
    if scale:
        return scale in ("full", "all")
    return bool(config.getoption("benchmark_only", default=False))


# ======================================================================================
# load generator (runs in its own process: ``python bench_wire.py <mode> <json>``)
# ======================================================================================


@dataclass(slots=True)
class Conn:
    sock: socket.socket
    rbuf: bytearray
    wbuf: bytearray
    #: send times of the requests not answered yet, oldest first (answers come in order)
    sent: deque[float]


def _connect(host: str, port: int, count: int, cafile: str | None = None) -> list[Conn]:
    """``count`` connections; over TLS (handshake done, blocking) when ``cafile`` names
    the CA that signed the server's certificate."""
    context = None if cafile is None else ssl.create_default_context(cafile=cafile)
    conns = []
    for _ in range(count):
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if context is not None:
            sock = context.wrap_socket(sock, server_hostname=host)
        sock.setblocking(False)
        conns.append(Conn(sock, bytearray(), bytearray(), deque()))
    return conns


def _recv(sock: socket.socket) -> bytes:
    """What the socket has now (b"": nothing yet); ConnectionError once the server closed.
    A TLS socket gives at most one record (16 KiB) per call and may hold more already
    decrypted, which select() does not report: it is read until empty."""
    if not isinstance(sock, ssl.SSLSocket):
        data = sock.recv(1 << 20)
        if not data:
            raise ConnectionError("the server closed a connection")
        return data
    chunks = []
    while True:
        try:
            data = sock.recv(1 << 20)
        except (ssl.SSLWantReadError, BlockingIOError):
            break
        if not data:
            raise ConnectionError("the server closed a connection")
        chunks.append(data)
    return b"".join(chunks)


def _send(sock: socket.socket, buf: bytearray) -> None:
    """Send what the socket takes now from the front of ``buf`` (removed from it)."""
    try:
        sent = sock.send(buf)
    except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
        return
    del buf[:sent]


def _frames(buf: bytearray) -> list[bytes]:
    """Complete response bodies at the front of ``buf`` (removed from it)."""
    out = []
    pos = 0
    while len(buf) - pos >= 4:
        (size,) = struct.unpack_from(">i", buf, pos)
        if len(buf) - pos - 4 < size:
            break
        out.append(bytes(buf[pos + 4 : pos + 4 + size]))
        pos += 4 + size
    del buf[:pos]
    return out


def exchange(conns: Sequence[Conn], outgoing: Sequence[Sequence[bytes]]) -> list[list[bytes]]:
    """Send every connection its frames, pipelined, and collect as many answers from each
    (all connections at once: a JoinGroup answer may wait for another connection's)."""
    sel = selectors.DefaultSelector()
    answers: list[list[bytes]] = [[] for _ in conns]
    for i, (conn, frames) in enumerate(zip(conns, outgoing, strict=True)):
        conn.wbuf += b"".join(frames)
        sel.register(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, i)
    waiting = sum(len(f) for f in outgoing)
    while waiting:
        for key, events in sel.select(timeout=60):
            i = key.data
            conn = conns[i]
            if events & selectors.EVENT_WRITE and conn.wbuf:
                _send(conn.sock, conn.wbuf)
                if not conn.wbuf:
                    sel.modify(conn.sock, selectors.EVENT_READ, i)
            if events & selectors.EVENT_READ:
                conn.rbuf += _recv(conn.sock)
                got = _frames(conn.rbuf)
                answers[i] += got
                waiting -= len(got)
    sel.close()
    return answers


def _encode(request: Any, correlation: int = 1) -> bytes:
    from groupcoord.protocol.wire import encode_request

    cls = type(request)
    return encode_request(cls.__api_key__, cls.__version__, correlation, "bench", request)


def _decode(request_cls: type[Any], body: bytes) -> Any:
    from groupcoord.protocol.wire import decode_response

    return decode_response(request_cls.__api_key__, request_cls.__version__, body)[1]


def _join_request(group: str, member_id: str, metadata: bytes) -> Any:
    from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
    from kio.schema.types import GroupId
    from kio.static.primitive import i32Timedelta

    timeout = i32Timedelta.parse(datetime.timedelta(milliseconds=SESSION_MS))
    return JoinGroupRequest(
        group_id=GroupId(group),
        session_timeout=timeout,
        rebalance_timeout=timeout,
        member_id=member_id,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=metadata),),
    )


def _sync_request(group: str, member_id: str, generation: int, assignments: Any) -> Any:
    from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
    from kio.schema.types import GroupId
    from kio.static.primitive import i32

    return SyncGroupRequest(
        group_id=GroupId(group),
        generation_id=i32(generation),
        member_id=member_id,
        assignments=tuple(
            SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in assignments
        ),
    )


@dataclass(slots=True)
class Seat:
    """A member: which group, which connection, and its id once joined."""

    group: str
    conn: int
    member_id: str = ""
    generation: int = -1


def _rounds(seats: Sequence[Seat], n_conns: int) -> list[list[Seat]]:
    """Seats per connection, in the same group order on every connection: whatever the
    server's per-connection ordering, a group's requests are never queued behind those of
    a group that waits for them."""
    per_conn: list[list[Seat]] = [[] for _ in range(n_conns)]
    for seat in seats:
        per_conn[seat.conn].append(seat)
    return per_conn


def form_groups(conns: Sequence[Conn], seats: Sequence[Seat], metadata: bytes) -> None:
    """Join every seat (KIP-394: a first JoinGroup gets the member id), then sync them."""
    from kio.schema.errors import ErrorCode
    from kio.schema.join_group.v5.request import JoinGroupRequest
    from kio.schema.sync_group.v3.request import SyncGroupRequest

    per_conn = _rounds(seats, len(conns))
    for _phase in range(2):
        answers = exchange(
            conns,
            [[_encode(_join_request(s.group, s.member_id, metadata)) for s in c] for c in per_conn],
        )
        for conn_seats, conn_answers in zip(per_conn, answers, strict=True):
            for seat, body in zip(conn_seats, conn_answers, strict=True):
                response = _decode(JoinGroupRequest, body)
                if response.error_code == ErrorCode.member_id_required:
                    seat.member_id = response.member_id
                    continue
                assert response.error_code == ErrorCode.none, response.error_code
                seat.member_id = response.member_id
                seat.generation = int(response.generation_id)
    assert all(s.generation > 0 for s in seats), "every member joined"
    groups: dict[str, list[Seat]] = {}
    for seat in seats:
        groups.setdefault(seat.group, []).append(seat)
    answers = exchange(
        conns,
        [
            [
                _encode(
                    _sync_request(
                        s.group,
                        s.member_id,
                        s.generation,
                        [(m.member_id, b"") for m in groups[s.group]],
                    )
                )
                for s in c
            ]
            for c in per_conn
        ],
    )
    for body in (b for a in answers for b in a):
        assert _decode(SyncGroupRequest, body).error_code == ErrorCode.none


def heartbeat_load(args: dict[str, Any]) -> dict[str, Any]:
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.types import GroupId
    from kio.static.primitive import i32

    from groupcoord import Subscription
    from groupcoord.protocol import encode_subscription

    members, n_conns, group_size = args["members"], args["connections"], args["group_size"]
    conns = _connect(args["host"], args["port"], n_conns, args.get("cafile"))
    seats = [
        Seat(group=f"hb-{i // group_size}", conn=i % group_size % n_conns) for i in range(members)
    ]
    seats.sort(key=lambda s: (s.conn, s.group))
    form_groups(conns, seats, encode_subscription(Subscription(list(TOPICS)), 1))
    per_conn = _rounds(seats, n_conns)
    frames = [
        [
            _encode(
                HeartbeatRequest(
                    group_id=GroupId(s.group),
                    generation_id=i32(s.generation),
                    member_id=s.member_id,
                ),
                correlation=k,
            )
            for k, s in enumerate(c)
        ]
        for c in per_conn
    ]
    print("ready", flush=True)
    sys.stdin.readline()  # the parent reads the server's CPU time, then says go
    return _heartbeat_loop(conns, frames, args["seconds"])


def _consumer_heartbeat(
    group: str, member_id: str, epoch: int, owned: Any = None, join: bool = False
) -> Any:
    """ConsumerGroupHeartbeat v1: a join (epoch 0, the subscription, empty owned list), a
    report of what the member owns, or (``owned`` None) a steady beat with nothing new."""
    from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
    from kio.schema.types import GroupId, TopicName
    from kio.static.primitive import i32, i32Timedelta

    return ConsumerGroupHeartbeatRequest(
        group_id=GroupId(group),
        member_id=member_id,
        member_epoch=i32(epoch),
        instance_id=None,
        rack_id=None,
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=SESSION_MS))
        if join
        else i32Timedelta.parse(datetime.timedelta(milliseconds=-1)),
        subscribed_topic_names=tuple(TopicName(t) for t in TOPICS) if join else None,
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=() if join else owned,
    )


def form_consumer_groups(conns: Sequence[Conn], seats: Sequence[Seat]) -> None:
    """KIP-848: every seat joins with epoch 0 (its own member id, KIP-1082), then reports
    what it was assigned until no answer brings a new assignment: the groups have
    converged and every member is at its group's epoch."""
    from kio.schema.consumer_group_heartbeat.v1.request import (
        ConsumerGroupHeartbeatRequest,
        TopicPartitions,
    )
    from kio.schema.errors import ErrorCode

    per_conn = _rounds(seats, len(conns))
    owned: dict[int, Any] = {}
    for i, seat in enumerate(seats):
        seat.member_id = f"bench-{i:05d}-{seat.group}"
    joining = True
    for _round in range(50):
        frames = [
            [
                _encode(
                    _consumer_heartbeat(
                        s.group, s.member_id, max(s.generation, 0), owned.get(id(s)), joining
                    )
                )
                for s in c
            ]
            for c in per_conn
        ]
        answers = exchange(conns, frames)
        changed = False
        for conn_seats, conn_answers in zip(per_conn, answers, strict=True):
            for seat, body in zip(conn_seats, conn_answers, strict=True):
                response = _decode(ConsumerGroupHeartbeatRequest, body)
                assert response.error_code == ErrorCode.none, response
                if seat.generation != int(response.member_epoch):
                    changed = True
                seat.generation = int(response.member_epoch)
                if response.assignment is not None:
                    new = tuple(
                        TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                        for t in response.assignment.topic_partitions
                    )
                    if new != owned.get(id(seat)):
                        changed = True
                    owned[id(seat)] = new
        if not joining and not changed:
            return
        joining = False
    raise AssertionError("the consumer groups did not converge in 50 rounds")


def consumer_heartbeat_load(args: dict[str, Any]) -> dict[str, Any]:
    """The heartbeat load with KIP-848 members: ConsumerGroupHeartbeat v1, steady beats
    (the member's epoch, every optional field null) once the groups converged."""
    members, n_conns, group_size = args["members"], args["connections"], args["group_size"]
    conns = _connect(args["host"], args["port"], n_conns, args.get("cafile"))
    seats = [
        Seat(group=f"cg-{i // group_size}", conn=i % group_size % n_conns) for i in range(members)
    ]
    seats.sort(key=lambda s: (s.conn, s.group))
    form_consumer_groups(conns, seats)
    per_conn = _rounds(seats, n_conns)
    frames = [
        [
            _encode(_consumer_heartbeat(s.group, s.member_id, s.generation), correlation=k)
            for k, s in enumerate(c)
        ]
        for c in per_conn
    ]
    print("ready", flush=True)
    sys.stdin.readline()
    return _heartbeat_loop(conns, frames, args["seconds"])


def _heartbeat_loop(
    conns: Sequence[Conn], frames: Sequence[Sequence[bytes]], seconds: float
) -> dict[str, Any]:
    """Each member has one heartbeat in flight; an answer releases that member's next.
    Connection i cycles through its members' pre-encoded frames in order, and answers
    come back in order, so the member answered is always the oldest in flight."""
    sel = selectors.DefaultSelector()
    cursor = [0] * len(conns)
    now = time.perf_counter()
    for i, conn in enumerate(conns):
        conn.wbuf += b"".join(frames[i])
        conn.sent.extend([now] * len(frames[i]))
        sel.register(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, i)
    latencies: list[float] = []
    answered = answered_total = errors = 0
    end = now + seconds
    # after the end, send nothing new but collect what is in flight (closing with
    # requests in flight would only make the server log broken connections)
    drained = end + 30
    while now < end or (now < drained and any(c.sent for c in conns)):
        for key, events in sel.select(timeout=1):
            i = key.data
            conn = conns[i]
            if events & selectors.EVENT_READ:
                conn.rbuf += _recv(conn.sock)
                bodies = _frames(conn.rbuf)
                now = time.perf_counter()
                own = frames[i]
                for body in bodies:
                    # Heartbeat v4 and ConsumerGroupHeartbeat v1 answers alike: correlation,
                    # tagged fields (1), throttle, error
                    errors += body[9] != 0 or body[10] != 0
                    latencies.append(now - conn.sent.popleft())
                answered_total += len(bodies)
                if now < end:
                    answered += len(bodies)
                    k = cursor[i]
                    nxt = [own[(k + j) % len(own)] for j in range(len(bodies))]
                    cursor[i] = (k + len(bodies)) % len(own)
                    conn.wbuf += b"".join(nxt)
                    conn.sent.extend([now] * len(bodies))
            if conn.wbuf:
                _send(conn.sock, conn.wbuf)
            sel.modify(
                conn.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wbuf else 0), i
            )
        now = time.perf_counter()
    sel.close()
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        "answered": answered,
        "answered_total": answered_total,
        "errors": errors,
        "elapsed_s": seconds,
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "max_ms": latencies[-1] * 1000,
    }


def rebalance_driver(args: dict[str, Any]) -> None:
    """Forms a group of N members (one connection each), then rebalances it once per
    ``go`` line on stdin, answering ``done <seconds>``."""
    from kio.schema.errors import ErrorCode
    from kio.schema.join_group.v5.request import JoinGroupRequest
    from kio.schema.sync_group.v3.request import SyncGroupRequest

    from groupcoord import RangeAssignor, Subscription
    from groupcoord.protocol import encode_subscription

    n = args["members"]
    metadata = encode_subscription(Subscription(list(TOPICS)), 1)
    conns = _connect(args["host"], args["port"], n)
    seats = [Seat(group="big", conn=i) for i in range(n)]
    form_groups(conns, seats, metadata)
    assignor = RangeAssignor()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        started = time.perf_counter()
        answers = exchange(
            conns, [[_encode(_join_request("big", s.member_id, metadata))] for s in seats]
        )
        joins = [_decode(JoinGroupRequest, a[0]) for a in answers]
        assert all(j.error_code == ErrorCode.none for j in joins), joins[0].error_code
        generation = int(joins[0].generation_id)
        leader = next(j for j in joins if j.members)
        assignment = assignor.assign_encoded(
            TOPICS, {m.member_id: m.metadata for m in leader.members}
        )
        answers = exchange(
            conns,
            [
                [
                    _encode(
                        _sync_request(
                            "big",
                            s.member_id,
                            generation,
                            assignment.items() if s.member_id == leader.member_id else (),
                        )
                    )
                ]
                for s in seats
            ],
        )
        syncs = [_decode(SyncGroupRequest, a[0]) for a in answers]
        elapsed = time.perf_counter() - started
        assert all(s.error_code == ErrorCode.none and s.assignment for s in syncs)
        print(f"done {elapsed} {generation}", flush=True)


# ======================================================================================
# pytest side
# ======================================================================================


@dataclass
class BenchServer:
    proc: subprocess.Popen[str]
    host: str
    port: int

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
        fields = stat.rsplit(")", 1)[1].split()  # after "pid (comm)"; utime, stime: 11, 12
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks


def _cpus() -> tuple[set[int], set[int]]:
    """(server CPUs, load generator CPUs): one CPU for the server, the rest for the load."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return set(cpus), set(cpus)
    return {cpus[0]}, set(cpus[1:])


@contextlib.contextmanager
def bench_server(
    store: Sequence[str] = ("--memory",),
    extra: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> Iterator[BenchServer]:
    """A ``groupcoord serve`` on one CPU; ``store`` its storage flags, ``extra`` more
    flags, ``env`` its environment (default: this process's)."""
    cmd = [
        sys.executable, "-m", "groupcoord", "serve", "--port", "0", *store,
        "--log-level", "warning", "--group-initial-rebalance-delay-ms", "100",
        *[a for t, p in TOPICS.items() for a in ("--topic", f"{t}:{p}")], *extra,
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.fullmatch(r"groupcoord listening on (.+):(\d+)\n", line)
        assert match, f"server did not start: {line!r}"
        _pin_process(proc.pid, _cpus()[0])
        yield BenchServer(proc, match.group(1), int(match.group(2)))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pin_process(pid: int, cpus: set[int]) -> None:
    """Every thread of ``pid`` on ``cpus`` (``sched_setaffinity(pid)`` moves only the main
    thread; the store's writer and a native shell's I/O thread are already running)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task), cpus)


@contextlib.contextmanager
def load_generator(
    mode: str, args: dict[str, Any], script: str = __file__
) -> Iterator[subprocess.Popen[str]]:
    """``script`` run as the load generator (on the other CPUs), once it said "ready"."""

    def pin() -> None:
        os.sched_setaffinity(0, _cpus()[1])

    proc = subprocess.Popen(
        [sys.executable, script, mode, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=pin,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "ready\n", f"load generator failed to set up: {line!r}"
        yield proc
    finally:
        with contextlib.suppress(OSError):
            assert proc.stdin is not None
            proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """(certificate, key) PEM files for 127.0.0.1, self-signed (the client trusts it as its
    CA): ECDSA P-256, as a TLS server would have."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "server.pem", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def measure_heartbeats(
    args: dict[str, Any],
    store: Sequence[str] = ("--memory",),
    extra: Sequence[str] = (),
    benchmark: Any = None,
    tls: tuple[Path, Path] | None = None,
    mode: str = "heartbeat",
) -> dict[str, Any]:
    """One heartbeat load (``args``: members, connections, group_size, seconds) against a
    server started with ``store`` and ``extra`` flags: the generator's result plus the
    server's CPU seconds (``server_cpu_s``) and answers per server CPU-second
    (``per_cpu``: its CPU time covers the drain after the window too, so all its answers
    count). Timed by ``benchmark`` when given. With ``tls`` (certificate, key), the server
    has one SSL listener and the generator speaks TLS to it."""
    if tls is not None:
        cert_file, key_file = tls
        extra = (
            *extra, "--listener", "SSL://127.0.0.1:0", "--ssl-certfile", str(cert_file),
            "--ssl-keyfile", str(key_file),
        )  # fmt: skip
        args = args | {"cafile": str(cert_file)}
    with bench_server(store, extra) as server:
        args = args | {"host": server.host, "port": server.port}
        with load_generator(mode, args) as gen:
            assert gen.stdin is not None and gen.stdout is not None
            cpu_before = server.cpu_seconds()

            def run() -> dict[str, Any]:
                assert gen.stdin is not None and gen.stdout is not None
                gen.stdin.write("go\n")
                gen.stdin.flush()
                return dict(json.loads(gen.stdout.readline()))

            result = run() if benchmark is None else benchmark.pedantic(run, rounds=1, iterations=1)
            cpu = server.cpu_seconds() - cpu_before
    result["server_cpu_s"] = cpu
    result["per_cpu"] = result["answered_total"] / cpu if cpu > 0 else float("nan")
    return result


def heartbeat_args(full: bool) -> dict[str, Any]:
    """The heartbeat load's size: full (5,000 members over 50 connections, 10 s) or smoke."""
    return {
        "members": 5000 if full else 200,
        "connections": 50 if full else 10,
        "group_size": 50 if full else 10,
        "seconds": 10.0 if full else 1.0,
    }


def test_bench_wire_heartbeats(benchmark: Any, request: Any) -> None:
    args = heartbeat_args(_full(request.config))
    result = measure_heartbeats(args, benchmark=benchmark)
    assert result["errors"] == 0, result
    assert result["answered"] > 0
    rate = result["answered"] / result["elapsed_s"]
    per_cpu, cpu = result["per_cpu"], result["server_cpu_s"]
    benchmark.extra_info.update(
        args | {"heartbeats_per_s": rate, "heartbeats_per_server_cpu_s": per_cpu} | result
    )
    print(
        f"\nwire heartbeats: {args['members']} members / {args['connections']} connections: "
        f"{rate:,.0f}/s ({per_cpu:,.0f} per server CPU-second, server CPU {cpu:.2f} s "
        f"in {result['elapsed_s']:.2f} s); latency p50 {result['p50_ms']:.2f} ms, "
        f"p99 {result['p99_ms']:.2f} ms, max {result['max_ms']:.2f} ms"
    )


def test_bench_wire_heartbeats_tls(benchmark: Any, request: Any, tmp_path: Path) -> None:
    """PLAINTEXT and SSL listeners alternated (full: three P, T pairs), same load and server
    build: the machine's drift hits both alike."""
    full = _full(request.config)
    args = heartbeat_args(full)
    tls = self_signed_certificate(tmp_path)
    runs: dict[str, list[dict[str, Any]]] = {"PLAINTEXT": [], "SSL": []}
    in_order: list[tuple[str, dict[str, Any]]] = []
    for i in range(3 if full else 1):
        for label in runs:
            result = measure_heartbeats(
                args,
                benchmark=benchmark if i == 0 and label == "PLAINTEXT" else None,
                tls=tls if label == "SSL" else None,
            )
            assert result["errors"] == 0, (label, result)
            assert result["answered"] > 0, (label, result)
            runs[label].append(result)
            in_order.append((label, result))

    def us_per_heartbeat(result: dict[str, Any]) -> float:
        return 1e6 / result["per_cpu"]

    def mean_us(label: str) -> float:
        return sum(us_per_heartbeat(r) for r in runs[label]) / len(runs[label])

    lines = []
    for label, result in in_order:
        rate = result["answered"] / result["elapsed_s"]
        lines.append(
            f"  {label:<9} {rate:>9,.0f}/s, {result['per_cpu']:>9,.0f} per server CPU-s "
            f"({us_per_heartbeat(result):.1f} us), server CPU {result['server_cpu_s']:.2f} s, "
            f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms"
        )
    plain, secure = mean_us("PLAINTEXT"), mean_us("SSL")
    benchmark.extra_info.update(
        args
        | {
            label: [{"per_server_cpu_s": r["per_cpu"], "p99_ms": r["p99_ms"]} for r in results]
            for label, results in runs.items()
        }
        | {"tls_us_per_heartbeat": secure - plain}
    )
    print(
        f"\nwire heartbeats over TLS vs plaintext, {args['members']} members / "
        f"{args['connections']} connections (in run order):\n"
        + "\n".join(lines)
        + f"\n  TLS cost: {secure - plain:.2f} us of server CPU per heartbeat (means:"
        f" {plain:.2f} -> {secure:.2f} us, {plain / secure:.2f}x the heartbeats per CPU-s)"
    )


def test_bench_wire_consumer_group_heartbeats(benchmark: Any, request: Any) -> None:
    """KIP-848 beside classic: the same members, connections and group sizes, steady
    ConsumerGroupHeartbeats (v1) of converged consumer groups, then classic Heartbeats
    (v4) of Stable groups against a fresh server of the same build, in one run."""
    args = heartbeat_args(_full(request.config))
    kip848 = measure_heartbeats(args, benchmark=benchmark, mode="consumer-heartbeat")
    classic = measure_heartbeats(args)
    for result in (kip848, classic):
        assert result["errors"] == 0, result
        assert result["answered"] > 0
    lines = []
    for label, result in (("ConsumerGroupHeartbeat", kip848), ("classic Heartbeat", classic)):
        rate = result["answered"] / result["elapsed_s"]
        per_cpu = result["per_cpu"]
        us = 1e6 / per_cpu
        lines.append(
            f"{label}: {rate:,.0f}/s, {per_cpu:,.0f} per server CPU-second ({us:.2f} us), "
            f"p50 {result['p50_ms']:.2f} ms, p99 {result['p99_ms']:.2f} ms"
        )
    benchmark.extra_info.update(
        args
        | {
            "kip848_per_server_cpu_s": kip848["per_cpu"],
            "classic_per_server_cpu_s": classic["per_cpu"],
        }
    )
    print(f"\nwire heartbeats, {args['members']} members / {args['connections']} connections:")
    print("\n".join(lines))
    print(
        f"ConsumerGroupHeartbeat / classic server CPU per heartbeat: "
        f"{classic['per_cpu'] / kip848['per_cpu']:.2f}x"
    )


def test_bench_wire_rebalance(benchmark: Any, request: Any) -> None:
    full = _full(request.config)
    n = 1000 if full else 20
    with bench_server() as server:
        args = {"members": n, "host": server.host, "port": server.port}
        with load_generator("rebalance", args) as gen:
            generations: list[int] = []
            durations: list[float] = []
            server_cpu: list[float] = []

            def rebalance() -> None:
                assert gen.stdin is not None and gen.stdout is not None
                cpu = server.cpu_seconds()
                gen.stdin.write("go\n")
                gen.stdin.flush()
                word, seconds, generation = gen.stdout.readline().split()
                server_cpu.append(server.cpu_seconds() - cpu)
                assert word == "done"
                durations.append(float(seconds))
                generations.append(int(generation))

            benchmark.pedantic(rebalance, rounds=5 if full else 2, iterations=1)
    # each round was one complete rebalance: one generation more each time
    assert generations == list(range(generations[0], generations[0] + len(generations)))
    benchmark.extra_info.update(
        {
            "members": n,
            "rebalance_ms": [d * 1000 for d in durations],
            "server_cpu_ms": [c * 1000 for c in server_cpu],
        }
    )
    print(
        f"\nwire rebalance of {n} members: "
        + ", ".join(f"{d * 1000:.1f}" for d in durations)
        + " ms (first JoinGroup sent to last SyncGroup answered); server CPU "
        + ", ".join(f"{c * 1000:.0f}" for c in server_cpu)
        + " ms"
    )


if __name__ == "__main__":
    mode, raw = sys.argv[1], json.loads(sys.argv[2])
    if mode == "heartbeat":
        print(json.dumps(heartbeat_load(raw)), flush=True)
    elif mode == "consumer-heartbeat":
        print(json.dumps(consumer_heartbeat_load(raw)), flush=True)
    elif mode == "rebalance":
        rebalance_driver(raw)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
