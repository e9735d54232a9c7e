"""Benchmarks: Rust TimerWheel / MemberExpiry against the pure-Python reference.

What is measured (all in virtual time; nothing sleeps):

- Heartbeat storm: N members, session 45 s, every member heartbeats every 3 s (each at its
  own random phase, in random order within a 100 ms tick, as requests would arrive) for
  60 s; the wheel advances every 100 ms and nothing expires. Reported per heartbeat, for
  Rust single calls, the Rust batch form and the reference, on the wheel (int member
  handles), on the member expiry table with str group and member ids, and on the member
  expiry table by handle (``MemberExpiry.handle`` once per member before the storm, then
  ``heartbeat_handle(s)``; the reference runs its own ``heartbeat_handles``, the faster of
  its two forms, and is also compared with its str-id heartbeat).
- Expiry scan: N members whose deadlines are spread so that each 1 s advance expires 1%.
  Reported per advance.
- Empty advance: an advance that expires nothing, with 1,000 and with N members scheduled.
- Memory: RSS growth of a fresh process scheduling N keys.

Sizes: ``GROUPCOORD_BENCH_SCALE`` (``smoke``, ``full``/``all`` or a member count N) if set;
otherwise N = 1,000,000 when benchmarks run and
2,000 under ``--benchmark-disable`` (the CI smoke run, a few seconds). The full measurement:

    pytest benches/bench_timer.py --benchmark-only -s

prints a summary table with heartbeats/s, ns per heartbeat and the ratios to the reference.
"""

from __future__ import annotations

import gc
import heapq
import itertools
import os
import random
import subprocess
import sys
import textwrap
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

import groupcoord
from groupcoord.reference import expiry as ref_expiry
from groupcoord.reference import timer as ref_timer

SESSION_MS = 45_000
HEARTBEAT_MS = 3_000
DURATION_MS = 60_000
TICK_MS = 100
PHASES = HEARTBEAT_MS // TICK_MS
TICKS = DURATION_MS // TICK_MS
MEMBERS_PER_GROUP = 100
SMOKE_SCALE = 2_000
FULL_SCALE = 1_000_000

WHEELS: dict[str, Callable[..., Any]] = {
    "rust": groupcoord.TimerWheel,
    "reference": ref_timer.TimerWheel,
}
TABLES: dict[str, Callable[..., Any]] = {
    "rust": groupcoord.MemberExpiry,
    "reference": ref_expiry.MemberExpiry,
}

# Collected by the benchmarks, printed by `summary` at the end of the module.
RESULTS: dict[str, tuple[float, int]] = {}


@pytest.fixture(scope="module")
def scale(request: pytest.FixtureRequest) -> int:
    # Shared with the other bench files: "smoke", "full"/"all", or (here) a member count.
    env = (os.environ.get("GROUPCOORD_BENCH_SCALE") or "").lower()
    if env in ("full", "all"):
        return FULL_SCALE
    if env == "smoke":
        return SMOKE_SCALE
    if env:
        return int(env)
    disabled = request.config.getoption("benchmark_disable", default=False)
    return SMOKE_SCALE if disabled else FULL_SCALE


def record(benchmark: Any, name: str, ops: int) -> None:
    """Remembers seconds per round and operations per round for the summary."""
    benchmark.extra_info["ops_per_round"] = ops
    if benchmark.stats is not None:
        seconds = benchmark.stats.stats.min
        benchmark.extra_info["ns_per_op"] = round(seconds / ops * 1e9, 2)
        RESULTS[name] = (seconds, ops)


# --- workloads --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Storm:
    """Who heartbeats in which tick: members of phase p heartbeat at p*100 ms + k*3 s."""

    n: int
    keys: list[list[int]]  # per phase, member handles in arrival order
    key_arrays: list[array[int]]
    groups: list[list[str]]  # per phase, parallel to `members`
    members: list[list[str]]

    @property
    def heartbeats(self) -> int:
        return self.n * (DURATION_MS // HEARTBEAT_MS)


def member_id(i: int) -> str:
    # Shaped like a Java client's member id: client id, a dash, a UUID.
    return f"consumer-{i % 64}-{i:08x}-5d3b-4c1e-9a7e-{(i * 2654435761) % 2**48:012x}"


@cache
def storm_plan(n: int) -> Storm:
    rng = random.Random(20240511)
    order = list(range(n))
    rng.shuffle(order)  # arrival order within a tick is random
    keys: list[list[int]] = [[] for _ in range(PHASES)]
    for m in order:
        keys[hash((m, 17)) % PHASES].append(m)
    n_groups = (n + MEMBERS_PER_GROUP - 1) // MEMBERS_PER_GROUP
    group_names = [f"group-{g:06d}" for g in range(n_groups)]
    ids = [member_id(i) for i in range(n)]
    return Storm(
        n=n,
        keys=keys,
        key_arrays=[array("Q", ks) for ks in keys],
        groups=[[group_names[m // MEMBERS_PER_GROUP] for m in ks] for ks in keys],
        members=[[ids[m] for m in ks] for ks in keys],
    )


def last_heartbeat_deadline(phase: int) -> int:
    """Deadline left by the heartbeat each member sent just before t=0."""
    return phase * TICK_MS - HEARTBEAT_MS + SESSION_MS


# Memory layout of the state the storm starts from. "arrival": members were first seen in
# the order they heartbeat (they heartbeat at the phase they joined at, so join order and
# arrival order agree), so each tick's batch walks the structures in allocation order.
# "scattered": members were first seen in handle order, unrelated to arrival order, so
# every heartbeat lands somewhere random in memory: the cache-hostile worst case.
LAYOUTS = ("arrival", "scattered")


def first_seen_order(plan: Storm, layout: str) -> list[tuple[int, int]]:
    """(phase, index in that phase's batch) in the order members were first seen."""
    pairs = [(p, i) for p in range(PHASES) for i in range(len(plan.keys[p]))]
    if layout == "scattered":
        pairs.sort(key=lambda pi: plan.keys[pi[0]][pi[1]])
    return pairs


def wheel_before_storm(cls: Callable[..., Any], plan: Storm, layout: str = "arrival") -> Any:
    wheel = cls(0)
    if layout == "arrival":
        for phase, ks in enumerate(plan.key_arrays):
            wheel.schedule_many(ks, last_heartbeat_deadline(phase))
    else:
        pairs = first_seen_order(plan, layout)
        wheel.schedule_many(
            array("Q", [plan.keys[p][i] for p, i in pairs]),
            array("q", [last_heartbeat_deadline(p) for p, _ in pairs]),
        )
    return wheel


def table_before_storm(cls: Callable[..., Any], plan: Storm, layout: str = "arrival") -> Any:
    table = cls(0)
    pairs = first_seen_order(plan, layout)
    table.heartbeat_many(
        [plan.groups[p][i] for p, i in pairs],
        [plan.members[p][i] for p, i in pairs],
        0,
        array("q", [last_heartbeat_deadline(p) for p, _ in pairs]),
    )
    return table


def wheel_storm_single(wheel: Any, plan: Storm) -> None:
    schedule, advance = wheel.schedule, wheel.advance
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if advance(now):
            raise AssertionError("a live member expired")
        deadline = now + SESSION_MS
        for key in plan.keys[tick % PHASES]:
            schedule(key, deadline)


def wheel_storm_batch(wheel: Any, plan: Storm) -> None:
    schedule_many, advance = wheel.schedule_many, wheel.advance
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if advance(now):
            raise AssertionError("a live member expired")
        schedule_many(plan.key_arrays[tick % PHASES], now + SESSION_MS)


def bare_heap_before_storm(plan: Storm) -> tuple[dict[int, int], list[tuple[int, int]]]:
    deadlines = {k: last_heartbeat_deadline(p) for p, ks in enumerate(plan.keys) for k in ks}
    heap = [(d, k) for k, d in deadlines.items()]
    heapq.heapify(heap)
    return deadlines, heap


def bare_heap_storm(state: tuple[dict[int, int], list[tuple[int, int]]], plan: Storm) -> None:
    """The floor for any Python timer queue: the reference's algorithm inlined into the
    loop, with no method calls and no input validation (not a usable API)."""
    deadlines, heap = state
    push, pop = heapq.heappush, heapq.heappop
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        while heap and heap[0][0] <= now:
            d, k = pop(heap)
            if deadlines.get(k) == d:
                raise AssertionError("a live member expired")
        deadline = now + SESSION_MS
        for k in plan.keys[tick % PHASES]:
            deadlines[k] = deadline
            push(heap, (deadline, k))
        if len(heap) > 2 * len(deadlines) + 64:
            heap[:] = [(d, k) for k, d in deadlines.items()]
            heapq.heapify(heap)


def table_storm_single(table: Any, plan: Storm) -> None:
    heartbeat, expire = table.heartbeat, table.expire
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if expire(now):
            raise AssertionError("a live member expired")
        phase = tick % PHASES
        for group, member in zip(plan.groups[phase], plan.members[phase], strict=True):
            heartbeat(group, member, now, SESSION_MS)


def storm_handles(table: Any, plan: Storm) -> list[array[int]]:
    """Per phase, the handles of the members heartbeating in that phase, in arrival order
    (as a coordinator would keep them on its member records)."""
    return [
        array("q", [table.handle(g, m) for g, m in zip(gs, ms, strict=True)])
        for gs, ms in zip(plan.groups, plan.members, strict=True)
    ]


def handle_storm_single(table: Any, handles: list[array[int]]) -> None:
    heartbeat_handle, expire = table.heartbeat_handle, table.expire
    lists = [list(hs) for hs in handles]  # Python ints, as a member record would hold
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if expire(now):
            raise AssertionError("a live member expired")
        for h in lists[tick % PHASES]:
            heartbeat_handle(h, now, SESSION_MS)


def handle_storm_batch(table: Any, handles: list[array[int]]) -> None:
    heartbeat_handles, expire = table.heartbeat_handles, table.expire
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if expire(now):
            raise AssertionError("a live member expired")
        heartbeat_handles(handles[tick % PHASES], now, SESSION_MS)


def table_storm_batch(table: Any, plan: Storm) -> None:
    heartbeat_many, expire = table.heartbeat_many, table.expire
    for tick in range(1, TICKS + 1):
        now = tick * TICK_MS
        if expire(now):
            raise AssertionError("a live member expired")
        phase = tick % PHASES
        heartbeat_many(plan.groups[phase], plan.members[phase], now, SESSION_MS)


# --- heartbeat storm --------------------------------------------------------------------------

STORM_CASES = [
    pytest.param("rust", "single", "arrival", id="rust-single"),
    pytest.param("rust", "batch", "arrival", id="rust-batch"),
    pytest.param("reference", "single", "arrival", id="reference"),
    pytest.param("rust", "batch", "scattered", id="rust-batch-scattered"),
    pytest.param("reference", "single", "scattered", id="reference-scattered"),
]


@pytest.mark.parametrize(("impl", "form", "layout"), STORM_CASES)
def test_heartbeat_storm_wheel(
    benchmark: Any, scale: int, impl: str, form: str, layout: str
) -> None:
    plan = storm_plan(scale)
    run = wheel_storm_batch if form == "batch" else wheel_storm_single
    rounds = 1 if impl == "reference" else 3

    def setup() -> tuple[tuple[Any, Storm], dict[str, Any]]:
        gc.collect()
        return (wheel_before_storm(WHEELS[impl], plan, layout), plan), {}

    benchmark.pedantic(run, setup=setup, rounds=rounds)
    record(benchmark, f"wheel storm {layout} {impl}-{form}", plan.heartbeats)


def test_heartbeat_storm_wheel_bare_heapq(benchmark: Any, scale: int) -> None:
    plan = storm_plan(scale)

    def setup() -> tuple[tuple[Any, Storm], dict[str, Any]]:
        gc.collect()
        return (bare_heap_before_storm(plan), plan), {}

    benchmark.pedantic(bare_heap_storm, setup=setup, rounds=1)
    record(benchmark, "wheel storm arrival bare-heapq-inline", plan.heartbeats)


@pytest.mark.parametrize(("impl", "form", "layout"), STORM_CASES)
def test_heartbeat_storm_member_expiry(
    benchmark: Any, scale: int, impl: str, form: str, layout: str
) -> None:
    plan = storm_plan(scale)
    run = table_storm_batch if form == "batch" else table_storm_single
    rounds = 1 if impl == "reference" else 3

    def setup() -> tuple[tuple[Any, Storm], dict[str, Any]]:
        gc.collect()
        return (table_before_storm(TABLES[impl], plan, layout), plan), {}

    benchmark.pedantic(run, setup=setup, rounds=rounds)
    record(benchmark, f"expiry storm {layout} {impl}-{form}", plan.heartbeats)


HANDLE_STORM_CASES = [
    pytest.param("rust", "single", "arrival", id="rust-single"),
    pytest.param("rust", "batch", "arrival", id="rust-batch"),
    pytest.param("reference", "batch", "arrival", id="reference-batch"),
    pytest.param("rust", "batch", "scattered", id="rust-batch-scattered"),
    pytest.param("reference", "batch", "scattered", id="reference-batch-scattered"),
]


@pytest.mark.parametrize(("impl", "form", "layout"), HANDLE_STORM_CASES)
def test_heartbeat_storm_member_expiry_by_handle(
    benchmark: Any, scale: int, impl: str, form: str, layout: str
) -> None:
    plan = storm_plan(scale)
    run = handle_storm_batch if form == "batch" else handle_storm_single
    rounds = 1 if impl == "reference" else 3

    def setup() -> tuple[tuple[Any, list[array[int]]], dict[str, Any]]:
        table = table_before_storm(TABLES[impl], plan, layout)
        handles = storm_handles(table, plan)
        gc.collect()
        return (table, handles), {}

    benchmark.pedantic(run, setup=setup, rounds=rounds)
    record(benchmark, f"handle storm {layout} {impl}-{form}", plan.heartbeats)


def test_next_deadline_during_storm(benchmark: Any, scale: int) -> None:
    """The coordinator asks for its next wake-up after every batch: this must stay cheap
    while heartbeats keep moving the earliest deadline (the earliest slot's histogram)."""
    plan = storm_plan(scale)
    wheel = wheel_before_storm(groupcoord.TimerWheel, plan, "arrival")
    ticks = itertools.count(1)

    def one_tick() -> int | None:
        tick = next(ticks)
        now = tick * TICK_MS
        wheel.advance(now)
        wheel.schedule_many(plan.key_arrays[tick % PHASES], now + SESSION_MS)
        started = time.perf_counter()
        deadline = wheel.next_deadline()
        next_deadline_seconds.append(time.perf_counter() - started)
        return deadline

    next_deadline_seconds: list[float] = []
    benchmark.pedantic(one_tick, rounds=min(TICKS, 300))
    benchmark.extra_info["next_deadline_ns_median"] = round(
        sorted(next_deadline_seconds)[len(next_deadline_seconds) // 2] * 1e9
    )
    if benchmark.stats is not None:
        RESULTS["next_deadline in storm (rust)"] = (
            sorted(next_deadline_seconds)[len(next_deadline_seconds) // 2],
            1,
        )


# --- expiry scan ------------------------------------------------------------------------------

SCAN_ADVANCES = 100  # each expires 1%


def scan_deadlines(n: int) -> array[int]:
    rng = random.Random(99)
    # Member i expires in second (i % 100) + 1, at a random millisecond of it.
    return array("q", [1_000 * (i % SCAN_ADVANCES) + rng.randrange(1, 1_001) for i in range(n)])


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_expiry_scan_wheel(benchmark: Any, scale: int, impl: str) -> None:
    deadlines = scan_deadlines(scale)
    keys = array("Q", range(scale))

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        wheel = WHEELS[impl](0)
        wheel.schedule_many(keys, deadlines)
        gc.collect()
        return (wheel,), {}

    def scan(wheel: Any) -> None:
        expired = 0
        for step in range(1, SCAN_ADVANCES + 1):
            expired += len(wheel.advance(step * 1_000))
        assert expired == scale

    benchmark.pedantic(scan, setup=setup, rounds=3 if impl == "rust" else 1)
    record(benchmark, f"wheel scan {impl}", SCAN_ADVANCES)


@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_expiry_scan_member_expiry(benchmark: Any, scale: int, impl: str) -> None:
    plan = storm_plan(scale)
    deadlines = scan_deadlines(scale)
    groups = [g for gs in plan.groups for g in gs]
    members = [m for ms in plan.members for m in ms]

    def setup() -> tuple[tuple[Any], dict[str, Any]]:
        table = TABLES[impl](0)
        table.heartbeat_many(groups, members, 0, deadlines)
        gc.collect()
        return (table,), {}

    def scan(table: Any) -> None:
        expired = 0
        for step in range(1, SCAN_ADVANCES + 1):
            expired += len(table.expire(step * 1_000))
        assert expired == scale

    benchmark.pedantic(scan, setup=setup, rounds=3 if impl == "rust" else 1)
    record(benchmark, f"expiry scan {impl}", SCAN_ADVANCES)


# --- empty advance ----------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["rust", "reference"])
@pytest.mark.parametrize("size", ["1k", "scale"])
def test_empty_advance(benchmark: Any, scale: int, impl: str, size: str) -> None:
    n = 1_000 if size == "1k" else scale
    wheel = WHEELS[impl](0)
    # Ten days out: a million 1 ms advances never reach them.
    wheel.schedule_many(array("Q", range(n)), 10 * 86_400_000)
    ticks = itertools.count(1)
    advance = wheel.advance

    def empty_advance() -> list[int]:
        return advance(next(ticks))

    benchmark(empty_advance)
    assert len(wheel) == n
    record(benchmark, f"empty advance {impl} n={n}", 1)


# --- memory -----------------------------------------------------------------------------------

MEMORY_SCRIPT = textwrap.dedent(
    """
    import gc, sys
    from array import array
    n, which = int(sys.argv[1]), sys.argv[2]
    if which == "rust":
        from groupcoord import TimerWheel
    else:
        from groupcoord.reference.timer import TimerWheel

    def rss():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    keys = array("Q", range(n))
    deadlines = array("q", (45_000 + i % 3_000 for i in range(n)))
    wheel = TimerWheel(0)
    gc.collect()
    before = rss()
    wheel.schedule_many(keys, deadlines)
    wheel.next_deadline()  # includes the earliest slot's histogram
    gc.collect()
    print(rss() - before)
    """
)


def rss_delta(n: int, impl: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(n), impl],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(out.stdout.strip())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
@pytest.mark.parametrize("impl", ["rust", "reference"])
def test_memory_per_key(benchmark: Any, scale: int, impl: str) -> None:
    delta = benchmark.pedantic(rss_delta, args=(scale, impl), rounds=1)
    benchmark.extra_info["rss_delta_mib"] = round(delta / 2**20, 1)
    benchmark.extra_info["bytes_per_key"] = round(delta / scale, 1)
    if impl == "rust" and scale >= FULL_SCALE:
        assert delta < 64 * 2**20, f"{delta / 2**20:.1f} MiB for {scale} keys"
    if benchmark.stats is not None:
        RESULTS[f"memory {impl}"] = (float(delta), scale)


def calibration() -> str:
    """Machine-speed calibration: an empty Python call (CPU) and a dependent random load
    from a 32 MiB array (shared cache and memory, what a million-member workload is bound
    by). On shared hosts both drift several-fold over minutes; printing them lets figures
    from different runs be compared."""

    def noop(a: int, b: int) -> None:
        return None

    call = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for i in range(100_000):
            noop(i, 5)
        call = min(call, time.perf_counter() - started)
    n = 1 << 22
    order = list(range(n))
    random.Random(5).shuffle(order)
    chain = array("q", bytes(8 * n))
    for a, b in itertools.pairwise(order):
        chain[a] = b
    chain[order[-1]] = order[0]
    steps, i = 200_000, order[0]
    started = time.perf_counter()
    for _ in range(steps):
        i = chain[i]
    load = time.perf_counter() - started
    return (
        f"empty Python call {call / 100_000 * 1e9:.0f} ns, random load {load / steps * 1e9:.0f} ns"
    )


# --- summary ----------------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def summary(request: pytest.FixtureRequest) -> Iterator[None]:
    enabled = not request.config.getoption("benchmark_disable", default=False)
    calibration_start = calibration() if enabled else ""
    yield
    if not RESULTS:
        return
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    write = reporter.write_line if reporter is not None else print
    write("")
    write("groupcoord timer benchmarks (min of rounds)")
    write(f"  machine at start: {calibration_start}")
    write(f"  machine at end:   {calibration()}")
    forms = (
        "rust-single",
        "rust-batch",
        "reference-single",
        "reference-batch",
        "bare-heapq-inline",
    )
    for kind in ("wheel storm", "expiry storm", "handle storm"):
        for layout in LAYOUTS:
            # The baseline is the reference's own fastest form of the same API; the handle
            # storm is also put against the str-id reference heartbeat (what a coordinator
            # without handles runs).
            ref = RESULTS.get(f"{kind} {layout} reference-single") or RESULTS.get(
                f"{kind} {layout} reference-batch"
            )
            str_ref = RESULTS.get(f"expiry storm {layout} reference-single")
            for form in forms:
                got = RESULTS.get(f"{kind} {layout} {form}")
                if got is None:
                    continue
                seconds, ops = got
                ratio = f"  {ref[0] / seconds:6.1f}x reference" if ref else ""
                if kind == "handle storm" and str_ref:
                    ratio += f"  {str_ref[0] / seconds:6.1f}x str-id reference"
                write(
                    f"  {kind:13} {layout:9} {form:17} {ops / seconds:14,.0f} heartbeats/s"
                    f"  {seconds / ops * 1e9:8.1f} ns/heartbeat{ratio}"
                )
    bare = RESULTS.get("wheel storm arrival bare-heapq-inline")
    batch = RESULTS.get("wheel storm arrival rust-batch")
    if bare and batch:
        write(f"  wheel storm: rust-batch is {bare[0] / batch[0]:.1f}x the bare inline heapq loop")
    for name, (seconds, ops) in RESULTS.items():
        if "scan" in name or "advance" in name or "next_deadline" in name:
            write(f"  {name:40} {seconds / ops * 1e6:12.3f} us per call")
    for name, (delta, n) in RESULTS.items():
        if name.startswith("memory"):
            write(f"  {name:40} {delta / 2**20:8.1f} MiB for {n:,} keys ({delta / n:.1f} B/key)")
