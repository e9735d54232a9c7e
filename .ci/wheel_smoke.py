"""Smoke test of an installed groupcoord wheel, as a user gets it (issue 13).

Run by .ci/run with the Python of a fresh venv that has only the wheel (and its declared
dependencies) installed, from a directory outside the checkout, with no ``cargo`` on PATH:

    VENV/bin/python .ci/wheel_smoke.py

It checks that the package imports from that venv (not from a source tree) with the
compiled extension, that every assignor assigns through the Rust backend (objects and
encoded bytes agreeing with the pure-Python reference), and that ``groupcoord serve
--port 0 --memory`` answers a Kafka ApiVersions request. The request and the response are
packed here by hand with ``struct``, so the server's own codec is not checking itself.
Exits non-zero with a message on the first failure.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

import groupcoord
from groupcoord import (
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from groupcoord.protocol import decode_assignment, encode_subscription

#: how long the server may take to print its listening line, and to stop
SERVE_TIMEOUT_S = 30.0
API_VERSIONS_KEY = 18
#: the group APIs a client needs from a coordinator: JoinGroup, Heartbeat, SyncGroup,
#: LeaveGroup, OffsetCommit, OffsetFetch, FindCoordinator, and ApiVersions itself
REQUIRED_API_KEYS = {11, 12, 14, 13, 8, 9, 10, API_VERSIONS_KEY}


def fail(message: str) -> NoReturn:
    print(f"wheel smoke: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check_installed() -> None:
    """The package and its extension come from this venv, and no Rust toolchain is here."""
    if shutil.which("cargo") is not None:
        fail(f"cargo is on PATH ({shutil.which('cargo')}): this must run without a toolchain")
    package = Path(groupcoord.__file__).resolve()
    prefix = Path(sys.prefix).resolve()
    if prefix not in package.parents:
        fail(f"groupcoord imported from {package}, not from the venv {prefix}")
    core = Path(groupcoord._core.__file__ or "").name
    if not core.endswith(".abi3.so"):
        fail(f"the extension is {core!r}, not an abi3 shared object")
    print(f"wheel smoke: groupcoord {groupcoord._core.__version__} from {package.parent}")


def check_assignors() -> None:
    """Every assignor, Rust backend, on a small group with two topics and mixed
    subscriptions: each subscribed partition goes to exactly one subscriber, objects and
    bytes give the same answer, and so does the pure-Python reference (for range and
    round-robin, whose output is fully specified; the sticky ones satisfy the same checks)."""
    partitions = {"orders": 5, "payments": 3}
    subscriptions = {
        "member-a": Subscription(["orders", "payments"]),
        "member-b": Subscription(["orders"]),
        "member-c": Subscription(["orders", "payments"]),
    }
    for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor):
        rust = cls()
        if rust.backend != "rust":
            fail(f"{cls.__name__} defaults to backend {rust.backend!r}")
        result = rust.assign(partitions, subscriptions)
        check_assignment(cls.__name__, partitions, subscriptions, result)
        encoded = rust.assign_encoded(
            partitions, {m: encode_subscription(s) for m, s in subscriptions.items()}
        )
        decoded = {m: sorted(decode_assignment(b).partitions) for m, b in encoded.items()}
        if decoded != {m: sorted(a.partitions) for m, a in result.items()}:
            fail(f"{cls.__name__}: assign_encoded disagrees with assign: {decoded}")
        if cls in (RangeAssignor, RoundRobinAssignor):
            reference = cls(backend="python").assign(partitions, subscriptions)
            if reference != result:
                fail(f"{cls.__name__}: Rust {result} != reference {reference}")
        print(f"wheel smoke: {rust.name}: {sum(len(a.partitions) for a in result.values())} ok")


def check_assignment(
    name: str,
    partitions: dict[str, int],
    subscriptions: dict[str, Subscription],
    result: dict[str, Assignment],
) -> None:
    if set(result) != set(subscriptions):
        fail(f"{name}: members {sorted(result)} != {sorted(subscriptions)}")
    owners: dict[TopicPartition, str] = {}
    for member, assignment in result.items():
        for tp in assignment.partitions:
            if tp.topic not in subscriptions[member].topics:
                fail(f"{name}: {member} got {tp} of a topic it did not subscribe to")
            if tp in owners:
                fail(f"{name}: {tp} assigned to both {owners[tp]} and {member}")
            owners[tp] = member
    expected = {TopicPartition(t, p) for t, n in partitions.items() for p in range(n)}
    if set(owners) != expected:
        fail(f"{name}: unassigned partitions {sorted(expected - set(owners))}")


def read_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if sel.select(timeout=0.1) or proc.poll() is not None:
                return proc.stdout.readline()
    return ""


def api_versions(host: str, port: int) -> dict[int, tuple[int, int]]:
    """ApiVersions v0 over a fresh connection: {api_key: (min_version, max_version)}."""
    correlation_id = 7
    client_id = b"wheel-smoke"
    body = struct.pack(">hhih", API_VERSIONS_KEY, 0, correlation_id, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=SERVE_TIMEOUT_S) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", recv_exactly(sock, 4))
        response = recv_exactly(sock, size)
    got_id, error_code, count = struct.unpack_from(">ihi", response)
    if got_id != correlation_id:
        fail(f"ApiVersions answered correlation id {got_id}, sent {correlation_id}")
    if error_code != 0:
        fail(f"ApiVersions answered error code {error_code}")
    apis = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", response, 10 + 6 * i)
        apis[key] = (lo, hi)
    return apis


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            fail(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def check_serve() -> None:
    """The console script the wheel installs serves ApiVersions and stops on SIGTERM."""
    script = Path(sys.prefix) / "bin" / "groupcoord"
    if not script.exists():
        fail(f"the wheel installed no console script at {script}")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [str(script), "serve", "--port", "0", "--memory", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = read_line(proc, SERVE_TIMEOUT_S)
        prefix = "groupcoord listening on "
        if not line.startswith(prefix):
            fail(f"groupcoord serve did not start: first line {line!r}")
        host, _, port = line[len(prefix) :].strip().rpartition(":")
        apis = api_versions(host, int(port))
        missing = REQUIRED_API_KEYS - set(apis)
        if missing:
            fail(f"ApiVersions lacks API keys {sorted(missing)}: {sorted(apis)}")
        print(f"wheel smoke: serve on {host}:{port} answered ApiVersions with {len(apis)} APIs")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=SERVE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            fail("groupcoord serve did not stop on SIGTERM")
        if proc.stdout is not None:
            proc.stdout.close()
    if code != 0:
        fail(f"groupcoord serve exited with {code} on SIGTERM")


def main() -> None:
    check_installed()
    check_assignors()
    check_serve()
    print("wheel smoke: passed")


if __name__ == "__main__":
    main()
