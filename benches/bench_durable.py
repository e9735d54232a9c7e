"""pytest-benchmark (and a script): durable OffsetCommit over the wire, ``groupcoord serve
--data-dir`` (SQLite, WAL, ``synchronous=FULL``).

- ``test_bench_durable_commits``: M members in groups of 50 over C connections, all Stable,
  each committing its own partition (OffsetCommit v8 with its generation) the moment its
  previous commit is answered: one in flight per member, as fast as the protocol allows.
  Reports commits acknowledged per second (an answer means the commit is on disk), the
  server's CPU time and the commit latency.
- ``test_bench_durable_heartbeat_p99``: M members, one connection each, heartbeat every
  ``interval`` ms (paced, one in flight per member, as a consumer's heartbeat thread does)
  while K of them also commit every 100 ms on their connections; the heartbeat latency
  percentiles (all members, and the members that do not commit) are compared with the same
  run without commits.

The load generator is this file run as a script in its own process (pre-encoded frames,
non-blocking sockets; helpers from ``bench_wire.py``), pinned apart from the server as
there. For the paced load it forms the groups and encodes the frames, then hands the
sockets to ``benches/loadgen`` (Rust, built on demand with cargo) to send and time them:
a Python loop sending 15,000 requests a second was measuring itself (its own queueing
added 15-20 ms to a commit answered in 2 ms, and ~5 ms to heartbeats answered in 0.2 ms;
``benches/results/durable.md``, 2026-12-07). ``--generator=python`` keeps it in Python,
for comparison. The native generator also stamps each answer with its arrival on the
member's socket (the kernel's ``SO_TIMESTAMPNS``): ``heartbeat_arrival_*`` figures leave
out the time an answer waited for the generator's one thread to read it (busy sending or
reading the other members' sockets), which a member with its own heartbeat thread (KIP-62)
does not wait; ``heartbeat_*`` figures (to the read) count it.
``GROUPCOORD_BENCH_SERVER_PYTHONPATH`` runs the server from another checkout (the "before"
figures: main's server fsyncs every commit on its event loop).

Script: ``python benches/bench_durable.py commits [members] [connections] [seconds]`` or
``python benches/bench_durable.py heartbeats [members] [committers] [seconds]`` prints
the results as JSON lines; ``--no-native-io`` after either serves with the asyncio shell
instead of the native one (the heartbeat test runs both shells, with both generators);
``--rounds=N`` alternates N runs without and with commits and ends with their medians
(:func:`rounds_summary`).
Sizes under pytest: full (5,000 members; 1,000 committers) with ``--benchmark-only`` or
``GROUPCOORD_BENCH_SCALE=full``, else a smoke size.
"""

from __future__ import annotations

import heapq
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bench_wire import (
    TOPICS,
    Conn,
    Seat,
    _connect,
    _decode,
    _encode,
    _frames,
    _full,
    _rounds,
    bench_server,
    form_groups,
    load_generator,
)

GROUP_SIZE = 50
#: the topic every member commits to (member k of a group commits partition k)
COMMIT_TOPIC = "c"
#: the heartbeat answer's error code sits at bytes 9-10 of a Heartbeat v4 response body
_HB_ERROR = slice(9, 11)


# ======================================================================================
# load generator (runs in its own process: ``python bench_durable.py <mode> <json>``)
# ======================================================================================


def _commit_frame(seat: Seat, partition: int, offset: int, correlation: int) -> bytes:
    from groupcoord.coordinator import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from groupcoord.protocol.group_messages import to_kio_request

    request = OffsetCommitRequest(
        version=8,
        group_id=seat.group,
        generation_id_or_member_epoch=seat.generation,
        member_id=seat.member_id,
        topics=(
            OffsetCommitRequestTopic(
                name=COMMIT_TOPIC,
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=offset
                    ),
                ),
            ),
        ),
    )
    return _encode(to_kio_request(request), correlation)


def _commit_error_at() -> slice:
    """Where OffsetCommit v8's one partition error code sits in its response body:
    correlation (4), header tags (1), throttle (4), topics (1), name (1 + len), partitions
    (1), partition index (4)."""
    start = 4 + 1 + 4 + 1 + 1 + len(COMMIT_TOPIC) + 1 + 4
    return slice(start, start + 2)


def _check_commit_layout(body: bytes) -> None:
    from kio.schema.offset_commit.v8.request import OffsetCommitRequest

    response = _decode(OffsetCommitRequest, body)
    expected = int(response.topics[0].partitions[0].error_code)
    assert int.from_bytes(body[_commit_error_at()], "big") == expected


def _setup(args: dict[str, Any]) -> tuple[list[Conn], list[list[Seat]]]:
    from groupcoord import Subscription
    from groupcoord.protocol import encode_subscription

    members, n_conns = args["members"], args["connections"]
    conns = _connect(args["host"], args["port"], n_conns)
    if n_conns == members:  # one connection per member, as real consumers have
        seats = [Seat(group=f"d-{i // GROUP_SIZE}", conn=i) for i in range(members)]
    else:  # member k of every group on connection k
        seats = [
            Seat(group=f"d-{i // GROUP_SIZE}", conn=i % GROUP_SIZE % n_conns)
            for i in range(members)
        ]
    seats.sort(key=lambda s: (s.conn, s.group))
    form_groups(conns, seats, encode_subscription(Subscription(list(TOPICS)), 1))
    return conns, _rounds(seats, n_conns)


def _partition(seat: Seat, per_group: dict[str, int]) -> int:
    k = per_group.get(seat.group, 0)
    per_group[seat.group] = k + 1
    return k


def commit_load(args: dict[str, Any]) -> dict[str, Any]:
    """Every member commits as fast as its previous commit is answered."""
    conns, per_conn = _setup(args)
    numbering: dict[str, int] = {}
    frames = [
        [_commit_frame(s, _partition(s, numbering), 1, k) for k, s in enumerate(c)]
        for c in per_conn
    ]
    print("ready", flush=True)
    sys.stdin.readline()
    err_at = _commit_error_at()
    sel = selectors.DefaultSelector()
    cursor = [0] * len(conns)
    now = time.perf_counter()
    for i, conn in enumerate(conns):
        conn.wbuf += b"".join(frames[i])
        conn.sent.extend([now] * len(frames[i]))
        sel.register(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, i)
    latencies: list[float] = []
    answered = errors = 0
    checked = False
    end = now + args["seconds"]
    drained = end + 60
    while now < end or (now < drained and any(c.sent for c in conns)):
        for key, events in sel.select(timeout=1):
            i = key.data
            conn = conns[i]
            if events & selectors.EVENT_READ:
                data = conn.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("the server closed a connection")
                conn.rbuf += data
                bodies = _frames(conn.rbuf)
                now = time.perf_counter()
                for body in bodies:
                    if not checked:
                        _check_commit_layout(body)
                        checked = True
                    errors += body[err_at] != b"\x00\x00"
                    latencies.append(now - conn.sent.popleft())
                if now < end:
                    answered += len(bodies)
                    own = frames[i]
                    k = cursor[i]
                    conn.wbuf += b"".join(own[(k + j) % len(own)] for j in range(len(bodies)))
                    cursor[i] = (k + len(bodies)) % len(own)
                    conn.sent.extend([now] * len(bodies))
            if conn.wbuf:
                sent = conn.sock.send(conn.wbuf)
                del conn.wbuf[:sent]
            sel.modify(
                conn.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.wbuf else 0), i
            )
        now = time.perf_counter()
    sel.close()
    return {"answered": answered, "errors": errors, "elapsed_s": args["seconds"]} | _percentiles(
        latencies, "commit"
    )


def paced_load(args: dict[str, Any]) -> dict[str, Any]:
    """Heartbeats every ``interval_ms`` per member; ``committers`` of them also commit every
    ``commit_interval_ms``; each kind one in flight per member (a late one is sent when
    the previous is answered). ``args["generator"]`` says who sends once the groups are
    formed: this process ("python") or benches/loadgen ("native", given the sockets)."""
    from kio.schema.heartbeat.v4.request import HeartbeatRequest
    from kio.schema.types import GroupId
    from kio.static.primitive import i32

    conns, per_conn = _setup(args)
    seats = [(i, s) for i, c in enumerate(per_conn) for s in c]
    hb_frames = [
        _encode(
            HeartbeatRequest(
                group_id=GroupId(s.group), generation_id=i32(s.generation), member_id=s.member_id
            )
        )
        for _, s in seats
    ]
    numbering: dict[str, int] = {}
    partitions = [_partition(s, numbering) for _, s in seats]
    committers = set(range(0, len(seats), max(1, len(seats) // max(1, args["committers"]))))
    committers = set(sorted(committers)[: args["committers"]])
    commit_frames = {m: _commit_frame(seats[m][1], partitions[m], 1, 0) for m in committers}
    load = PacedLoad(conns, [i for i, _ in seats], hb_frames, commit_frames)
    if args.get("generator", "python") == "native":
        return _native_paced(args, load)
    return _python_paced(args, load)


@dataclass(frozen=True, slots=True)
class PacedLoad:
    """What either generator sends: the connections, each member's connection (index),
    Heartbeat frame, and OffsetCommit frame if it commits."""

    conns: Sequence[Conn]
    member_conn: Sequence[int]
    hb_frames: Sequence[bytes]
    commit_frames: dict[int, bytes]


def _native_paced(args: dict[str, Any], load: PacedLoad) -> dict[str, Any]:
    """The timed part run by benches/loadgen's binary (``args["native_generator"]``) on
    this process's sockets: it says ready once it read the spec, as this process then does."""
    conns, commit_frames = load.conns, load.commit_frames
    err_at = _commit_error_at()
    lines = [
        f"seconds {args['seconds']}",
        f"heartbeat_every_ms {args['interval_ms']}",
        f"commit_every_ms {args['commit_interval_ms']}",
        f"heartbeat_error_at {_HB_ERROR.start}",
        f"commit_error_at {err_at.start}",
    ]
    for m, i in enumerate(load.member_conn):
        commit = commit_frames[m].hex() if m in commit_frames else "-"
        lines.append(f"member {conns[i].sock.fileno()} {load.hb_frames[m].hex()} {commit}")
    with tempfile.NamedTemporaryFile("w", prefix="loadgen-", suffix=".spec") as spec:
        spec.write("\n".join(lines) + "\n")
        spec.flush()
        fds = [c.sock.fileno() for c in conns]
        proc = subprocess.Popen(
            [args["native_generator"], spec.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=fds,
        )
        assert proc.stdin is not None and proc.stdout is not None
        line = proc.stdout.readline()
        if line != "ready\n":
            proc.wait()
            raise RuntimeError(f"the native load generator did not start: {line!r}")
        print("ready", flush=True)
        sys.stdin.readline()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out = proc.stdout.readline()
        if proc.wait() != 0 or not out:
            raise RuntimeError(f"the native load generator failed (exit {proc.returncode})")
    got = json.loads(out)

    def seconds(key: str) -> list[float]:
        return [us / 1e6 for us in got[key]]

    hb_committers, hb_others = seconds("heartbeat_committer_us"), seconds("heartbeat_other_us")
    arrived = seconds("heartbeat_committer_arrival_us") + seconds("heartbeat_other_arrival_us")
    counts = ("heartbeats", "commits", "errors", "elapsed_s", "generator_cpu_s", "unstamped")
    return (
        {k: got[k] for k in counts}
        | {"generator": "native"}
        | _percentiles(hb_committers + hb_others, "heartbeat")
        | _percentiles(hb_others, "heartbeat_non_committer")
        | _percentiles(hb_committers, "heartbeat_committer")
        | _percentiles(seconds("commit_us"), "commit")
        | _percentiles(seconds("send_lag_us"), "send_lag")
        # to the answers' arrival on the socket, without the generator's own wait (loadgen)
        | _percentiles(arrived, "heartbeat_arrival")
        | _percentiles(seconds("commit_arrival_us"), "commit_arrival")
    )


def _python_paced(args: dict[str, Any], load: PacedLoad) -> dict[str, Any]:
    """The timed part in this process (a selector loop over every member's socket)."""
    conns, member_conn = load.conns, load.member_conn
    hb_frames, commit_frames = load.hb_frames, load.commit_frames
    committers = set(commit_frames)
    print("ready", flush=True)
    sys.stdin.readline()
    cpu_start = time.process_time()
    hb_every = args["interval_ms"] / 1000
    commit_every = args["commit_interval_ms"] / 1000
    start = time.perf_counter()
    n = len(member_conn)
    # (due, member, is_commit): staggered over the first interval
    due: list[tuple[float, int, bool]] = [(start + hb_every * m / n, m, False) for m in range(n)]
    due += [
        (start + commit_every * j / len(committers), m, True)
        for j, m in enumerate(sorted(committers))
    ]
    heapq.heapify(due)
    in_flight: set[tuple[int, bool]] = set()
    owed: set[tuple[int, bool]] = set()
    #: per connection: (sent at, member, is_commit), answers come in order
    sent_q: list[deque[tuple[float, int, bool]]] = [deque() for _ in conns]
    sel = selectors.DefaultSelector()
    for i, conn in enumerate(conns):
        sel.register(conn.sock, selectors.EVENT_READ, i)
    hb_lat_committers: list[float] = []
    hb_lat_others: list[float] = []
    commit_lat: list[float] = []
    send_lag: list[float] = []
    errors = commits = beats = 0
    err_at = _commit_error_at()
    end = start + args["seconds"]
    now = start

    #: connections with bytes to send (scanning all 5,000 each turn would be the bottleneck)
    dirty: set[int] = set()

    def send(m: int, is_commit: bool, at: float) -> None:
        i = member_conn[m]
        dirty.add(i)
        conns[i].wbuf += commit_frames[m] if is_commit else hb_frames[m]
        sent_q[i].append((at, m, is_commit))
        in_flight.add((m, is_commit))

    while now < end or (now < end + 60 and in_flight):
        while due and due[0][0] <= now and now < end:
            at_due, m, is_commit = heapq.heappop(due)
            if (m, is_commit) in in_flight:
                owed.add((m, is_commit))
            else:
                send_lag.append(now - at_due)
                send(m, is_commit, now)
            heapq.heappush(due, (at_due + (commit_every if is_commit else hb_every), m, is_commit))
        for i in list(dirty):
            conn = conns[i]
            try:
                sent = conn.sock.send(conn.wbuf)
            except BlockingIOError:
                sent = 0
            del conn.wbuf[:sent]
            if not conn.wbuf:
                dirty.discard(i)
        timeout = max(0.0, min(due[0][0] - now, 0.01)) if due and now < end else 0.01
        for key, _ in sel.select(timeout=timeout):
            i = key.data
            conn = conns[i]
            data = conn.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("the server closed a connection")
            conn.rbuf += data
            now = time.perf_counter()
            for body in _frames(conn.rbuf):
                at, m, is_commit = sent_q[i].popleft()
                in_flight.discard((m, is_commit))
                if is_commit:
                    commits += 1
                    commit_lat.append(now - at)
                    errors += body[err_at] != b"\x00\x00"
                else:
                    beats += 1
                    (hb_lat_committers if m in committers else hb_lat_others).append(now - at)
                    errors += body[_HB_ERROR] != b"\x00\x00"
                if (m, is_commit) in owed and now < end:
                    owed.discard((m, is_commit))
                    send(m, is_commit, now)
        now = time.perf_counter()
    sel.close()
    return (
        {
            "heartbeats": beats,
            "commits": commits,
            "errors": errors,
            "elapsed_s": args["seconds"],
            "generator_cpu_s": time.process_time() - cpu_start,
            "generator": "python",
        }
        | _percentiles(hb_lat_committers + hb_lat_others, "heartbeat")
        | _percentiles(hb_lat_others, "heartbeat_non_committer")
        | _percentiles(hb_lat_committers, "heartbeat_committer")
        | _percentiles(commit_lat, "commit")
        | _percentiles(send_lag, "send_lag")
    )


def _percentiles(latencies: list[float], name: str) -> dict[str, float]:
    if not latencies:
        return {}
    latencies.sort()

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    return {
        f"{name}_p50_ms": pct(0.50),
        f"{name}_p99_ms": pct(0.99),
        f"{name}_max_ms": latencies[-1] * 1000,
    }


# ======================================================================================
# server and driver side
# ======================================================================================


def _load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


#: the native paced load generator's crate (a bench tool, built on demand by cargo)
LOADGEN = Path(__file__).resolve().parent / "loadgen"


def native_generator() -> str:
    """benches/loadgen built (incrementally) into the project's target/ directory; the
    path of its binary."""
    target = LOADGEN.parent.parent / "target" / "loadgen"
    manifest = str(LOADGEN / "Cargo.toml")
    cmd = ["cargo", "build", "--release", "--quiet", "--manifest-path", manifest]
    subprocess.run([*cmd, "--target-dir", str(target)], check=True)
    return str(target / "release" / "groupcoord-loadgen")


def run(mode: str, args: dict[str, Any], flags: Sequence[str] = ()) -> dict[str, Any]:
    """Start a durable server in a fresh directory (with ``flags``, e.g. ``--no-native-io``),
    run one load, return the figures. ``GROUPCOORD_BENCH_SERVER_PYTHONPATH`` runs the
    server from another checkout."""
    if args.get("generator") == "native":
        args = args | {"native_generator": native_generator()}
    env = dict(os.environ)
    other = os.environ.get("GROUPCOORD_BENCH_SERVER_PYTHONPATH")
    if other:
        env["PYTHONPATH"] = other
    with tempfile.TemporaryDirectory(prefix="bench-durable-") as data_dir:
        load_before = _load_average()
        store = ("--data-dir", data_dir)
        extra = ("--topic", f"{COMMIT_TOPIC}:{GROUP_SIZE}", *flags)
        with bench_server(store, extra, env) as server:
            args = args | {"host": server.host, "port": server.port}
            with load_generator(mode, args, __file__) as gen:
                assert gen.stdin is not None and gen.stdout is not None
                cpu_before = server.cpu_seconds()
                gen.stdin.write("go\n")
                gen.stdin.flush()
                result = dict(json.loads(gen.stdout.readline()))
                cpu = server.cpu_seconds() - cpu_before
    return args | result | {"server_cpu_s": cpu, "load_before": load_before, "flags": list(flags)}


def commits_args(members: int, connections: int, seconds: float) -> dict[str, Any]:
    return {"members": members, "connections": connections, "seconds": seconds}


def paced_args(
    members: int, committers: int, seconds: float, generator: str = "native"
) -> dict[str, Any]:
    # one connection per member: replies go out in request order per connection (Kafka's
    # rule), so a member's heartbeat waits behind its own commit, never another member's
    return {
        "generator": generator,
        "members": members,
        "connections": members,
        "committers": committers,
        "interval_ms": 1000,
        "commit_interval_ms": 100,
        "seconds": seconds,
    }


def test_bench_durable_commits(benchmark: Any, request: Any) -> None:
    full = _full(request.config)
    args = commits_args(5000 if full else 200, 50 if full else 10, 10.0 if full else 1.0)
    result = benchmark.pedantic(lambda: run("commits", args), rounds=1, iterations=1)
    assert result["errors"] == 0, result
    assert result["answered"] > 0
    rate = result["answered"] / result["elapsed_s"]
    benchmark.extra_info.update(result | {"commits_per_s": rate})
    print(
        f"\ndurable commits: {args['members']} members / {args['connections']} connections: "
        f"{rate:,.0f} acknowledged/s (server CPU {result['server_cpu_s']:.2f} s); latency "
        f"p50 {result['commit_p50_ms']:.1f} ms, p99 {result['commit_p99_ms']:.1f} ms; "
        f"load {result['load_before']}"
    )


@pytest.mark.parametrize("generator", ["native", "python"])
@pytest.mark.parametrize("shell", ["asyncio", "native-io"])
def test_bench_durable_heartbeat_p99(
    benchmark: Any, request: Any, shell: str, generator: str
) -> None:
    full = _full(request.config)
    members, committers, seconds = (5000, 1000, 10.0) if full else (200, 40, 1.0)
    flags = ("--native-io",) if shell == "native-io" else ("--no-native-io",)
    quiet = run("paced", paced_args(members, 0, seconds, generator), flags)
    busy = benchmark.pedantic(
        lambda: run("paced", paced_args(members, committers, seconds, generator), flags),
        rounds=1,
        iterations=1,
    )
    assert quiet["errors"] == 0 and busy["errors"] == 0, (quiet, busy)
    assert busy["commits"] > 0
    ratio = busy["heartbeat_p99_ms"] / quiet["heartbeat_p99_ms"]
    benchmark.extra_info.update({"quiet": quiet, "busy": busy, "p99_ratio": ratio})
    if generator == "native":  # answers stamped at their arrival too
        arrival = busy["heartbeat_arrival_p99_ms"] / quiet["heartbeat_arrival_p99_ms"]
        benchmark.extra_info["p99_arrival_ratio"] = arrival
        print(
            f"\n{shell}: heartbeat p99 at arrival: {quiet['heartbeat_arrival_p99_ms']:.2f} ms "
            f"alone, {busy['heartbeat_arrival_p99_ms']:.2f} ms with commits: {arrival:.2f}x"
        )
    print(
        f"\n{shell}, {generator} generator: heartbeat p99, {members} members: "
        f"{quiet['heartbeat_p99_ms']:.2f} ms alone, "
        f"{busy['heartbeat_p99_ms']:.2f} ms with {committers} committing every 100 ms "
        f"({busy['commits'] / seconds:,.0f} commits/s, p99 {busy['commit_p99_ms']:.1f} ms): "
        f"{ratio:.2f}x; load {quiet['load_before']} / {busy['load_before']}"
    )


def rounds_summary(quiet: Sequence[float], busy: Sequence[float]) -> dict[str, Any]:
    """Heartbeat p99s of alternated rounds without and with commits, summarised: on this
    shared machine one quiet run's p99 ranges 0.24-2.9 ms, so one pair's ratio says little;
    the medians over several alternated rounds are the figure to compare with the target."""
    median_quiet, median_busy = statistics.median(quiet), statistics.median(busy)
    return {
        "quiet_p99_ms": list(quiet),
        "busy_p99_ms": list(busy),
        "median_quiet_p99_ms": median_quiet,
        "median_busy_p99_ms": median_busy,
        "ratio_of_medians": median_busy / median_quiet,
        "rounds_within_2x": sum(b <= 2 * q for q, b in zip(quiet, busy, strict=True)),
        "rounds": len(quiet),
    }


def test_rounds_summary_compares_medians_and_counts_rounds_within_2x() -> None:
    summary = rounds_summary([0.3, 1.5, 0.4], [0.5, 1.2, 2.0])
    assert summary["median_quiet_p99_ms"] == 0.4 and summary["median_busy_p99_ms"] == 1.2
    assert summary["ratio_of_medians"] == pytest.approx(3.0)
    assert (summary["rounds_within_2x"], summary["rounds"]) == (2, 3)  # not 2.0 vs 0.4


def _option(argv: Sequence[str], name: str, default: str) -> str:
    given = [a.removeprefix(f"--{name}=") for a in argv if a.startswith(f"--{name}=")]
    return given[-1] if given else default


def _main(argv: Sequence[str]) -> None:
    generator = _option(argv, "generator", "native")
    if generator not in ("native", "python"):
        raise SystemExit(f"--generator={generator}: expected native or python")
    rounds_arg = _option(argv, "rounds", "1")
    if not rounds_arg.isdigit() or int(rounds_arg) < 1:
        raise SystemExit(f"--rounds={rounds_arg}: expected a positive whole number")
    rounds = int(rounds_arg)
    ours = ("--generator=", "--rounds=")
    flags = [a for a in argv if a.startswith("--") and not a.startswith(ours)]
    argv = [a for a in argv if not a.startswith("--")]
    mode = argv[0]
    if mode in ("commits", "paced") and len(argv) == 2 and argv[1].startswith("{"):
        # the load generator, started by run()
        args = json.loads(argv[1])
        print(json.dumps(commit_load(args) if mode == "commits" else paced_load(args)), flush=True)
    elif mode == "commits":
        nums = [float(a) for a in argv[1:]]
        members, connections, seconds = (nums + [5000, 50, 10][len(nums) :])[:3]
        print(
            json.dumps(run("commits", commits_args(int(members), int(connections), seconds), flags))
        )
    elif mode == "heartbeats":
        nums = [float(a) for a in argv[1:]]
        members, committers, seconds = (nums + [5000, 1000, 10][len(nums) :])[:3]
        results: dict[int, list[dict[str, Any]]] = {0: [], int(committers): []}
        for _ in range(rounds):  # alternated: the machine's noise falls on both alike
            for k, runs in results.items():
                runs.append(run("paced", paced_args(int(members), k, seconds, generator), flags))
                print(json.dumps(runs[-1]), flush=True)
        # at the read, and at the answers' arrival where the generator stamped them
        for at, key in (("read", "heartbeat_p99_ms"), ("arrival", "heartbeat_arrival_p99_ms")):
            if rounds > 1 and all(key in r for runs in results.values() for r in runs):
                p99s = ([r[key] for r in runs] for runs in results.values())
                print(json.dumps({"at": at} | rounds_summary(*p99s)), flush=True)
    else:
        raise SystemExit(f"usage: {__doc__}")


if __name__ == "__main__":
    _main(sys.argv[1:])
