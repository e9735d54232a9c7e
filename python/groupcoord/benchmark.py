"""Assignor benchmarks: the scenarios and measurements behind ``groupcoord bench`` and benches/.

A scenario is a group of ``members`` all subscribed to ``topics`` topics (or, for the
``-random`` ones, each to a random non-empty subset of them). Each is measured in two phases:

``fresh``
    nobody owns anything yet;
``leave``
    one member left: every remaining member owns what the same assignor gave it in the
    fresh assignment, at generation 1 (sticky members say so in StickyAssignor user data
    on the wire, as Java's do; the others in ``owned_partitions``).

and for each assignor with these implementations, all in the same process and run:

``rust assign()`` / ``reference assign()``
    the object API (``Subscription`` in, ``Assignment`` out) on the Rust core and on the
    pure-Python reference; the timing includes iterating over every returned partition;
``rust assign_encoded()`` / ``reference assign_encoded()``
    the leader's bytes path: JoinGroup subscription bytes in, SyncGroup assignment bytes out;
``kafka-python``
    kafka-python's own assignor (``assign(cluster, members)``), with its ClusterMetadata
    and decoded JoinGroup members prepared outside the timing, iterating over every
    returned partition;
``floor``
    the least any ``assign()`` returning Python objects can cost: building one
    ``TopicPartition`` per partition, ``list(map(TopicPartition._make, pairs))``.

The reference and kafka-python are "peers": a peer run whose time, extrapolated from the
smaller scenarios of the same run, would exceed a limit is skipped rather than waited for,
and a run that overshoots anyway is interrupted (main thread, POSIX).
"""

from __future__ import annotations

import gc
import math
import os
import platform
import random
import signal
import statistics
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from itertools import chain
from typing import Any, Final

from groupcoord.assignors import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from groupcoord.assignors.base import Backend
from groupcoord.protocol import (
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from groupcoord.types import Assignment, Subscription, TopicPartition

__all__ = [
    "ASSIGNORS",
    "FLOOR",
    "IMPLEMENTATIONS",
    "KAFKA_PYTHON",
    "PEERS",
    "PHASES",
    "PRESETS",
    "REFERENCE_ASSIGN",
    "REFERENCE_ENCODED",
    "RUST_ASSIGN",
    "RUST_ENCODED",
    "SCENARIOS",
    "Case",
    "Cell",
    "Estimator",
    "Row",
    "RunTimeout",
    "Scenario",
    "Timing",
    "deadline",
    "floor_runner",
    "frozen_heap",
    "kafka_python_cluster",
    "measure",
    "prepare_case",
    "render_markdown",
    "resolve_sizes",
    "run_benchmarks",
]

RUST_ASSIGN: Final = "rust assign()"
RUST_ENCODED: Final = "rust assign_encoded()"
REFERENCE_ASSIGN: Final = "reference assign()"
REFERENCE_ENCODED: Final = "reference assign_encoded()"
KAFKA_PYTHON: Final = "kafka-python"
FLOOR: Final = "floor"

#: measured per (scenario, phase, assignor), in table order
IMPLEMENTATIONS: Final = (
    RUST_ASSIGN,
    RUST_ENCODED,
    REFERENCE_ASSIGN,
    REFERENCE_ENCODED,
    KAFKA_PYTHON,
)
#: the implementations we compare against (skipped by --no-peers, subject to the time limit)
PEERS: Final = frozenset({REFERENCE_ASSIGN, REFERENCE_ENCODED, KAFKA_PYTHON})

ASSIGNORS: Final[Mapping[str, type[Assignor]]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}
PHASES: Final = ("fresh", "leave")

#: the generation every member's previous assignment is from, in the "leave" phase
PREVIOUS_GENERATION: Final = 1


@dataclass(frozen=True)
class Scenario:
    """``members`` consumers and ``topics`` x ``partitions_per_topic`` partitions."""

    name: str
    members: int
    topics: int
    partitions_per_topic: int
    #: each member subscribes to a random non-empty subset of the topics (seeded by name)
    random_subscriptions: bool = False

    @property
    def partitions(self) -> int:
        return self.topics * self.partitions_per_topic

    @property
    def size(self) -> float:
        """The scale run times are extrapolated along (members x partitions)."""
        return float(self.members * self.partitions)

    def topic_names(self) -> list[str]:
        return [f"topic-{t:03d}" for t in range(self.topics)]

    def member_ids(self) -> list[str]:
        return [f"member-{m:04d}" for m in range(self.members)]

    def partitions_per_topic_map(self) -> dict[str, int]:
        return {t: self.partitions_per_topic for t in self.topic_names()}

    def subscribed_topics(self) -> dict[str, list[str]]:
        topics = self.topic_names()
        if not self.random_subscriptions:
            return {m: topics for m in self.member_ids()}
        rng = random.Random(self.name)  # the same subscriptions in every run
        return {
            m: sorted(rng.sample(topics, rng.randint(1, len(topics)))) for m in self.member_ids()
        }


SCENARIOS: Final[Mapping[str, Scenario]] = {
    s.name: s
    for s in (
        Scenario("100x1k", 100, 10, 100),
        Scenario("100x1k-random", 100, 10, 100, random_subscriptions=True),
        Scenario("500x10k", 500, 10, 1_000),
        Scenario("500x10k-random", 500, 10, 1_000, random_subscriptions=True),
        Scenario("1000x100k", 1_000, 10, 10_000),
        # Java's own large case (AbstractStickyAssignorTest): 500 topics x 2000 partitions
        Scenario("2000x1M", 2_000, 500, 2_000),
    )
}

#: named size sets: (scenario names, default per-run time limit for peers in seconds)
PRESETS: Final[Mapping[str, tuple[tuple[str, ...], float]]] = {
    # CI smoke test: every code path, seconds in all
    "smoke": (("100x1k", "100x1k-random"), 60.0),
    # `groupcoord bench` default (~2 minutes on 2 cores): slow peers only on small sizes
    "quick": (("100x1k", "500x10k", "500x10k-random", "1000x100k"), 5.0),
    "all": (("100x1k", "500x10k", "500x10k-random", "1000x100k", "2000x1M"), 60.0),
}
#: the per-run limit for peers when sizes are listed by name
DEFAULT_PEER_LIMIT: Final = 60.0


def resolve_sizes(spec: str) -> tuple[list[Scenario], float]:
    """Scenarios and default peer limit for a preset name or comma-separated scenario names."""
    spec = spec.strip()
    if spec in PRESETS:
        names, limit = PRESETS[spec]
        return [SCENARIOS[n] for n in names], limit
    names = tuple(n.strip() for n in spec.split(",") if n.strip())
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        known = ", ".join([*PRESETS, *SCENARIOS])
        raise ValueError(f"unknown size {', '.join(unknown) or repr(spec)}; choose from {known}")
    # run small to large whatever the order given: extrapolation needs the small ones first
    ordered = sorted(dict.fromkeys(names), key=list(SCENARIOS).index)
    return [SCENARIOS[n] for n in ordered], DEFAULT_PEER_LIMIT


# --------------------------------------------------------------------------- inputs


@dataclass
class Case:
    """The inputs of one (scenario, phase, assignor), prepared outside any timing."""

    scenario: Scenario
    phase: str
    assignor: str
    partitions_per_topic: dict[str, int]
    #: the object API's input
    subscriptions: dict[str, Subscription]
    #: the bytes path's input: ConsumerProtocolSubscription v3, as Java members write it
    encoded: dict[str, bytes]
    #: in the "leave" phase, what each remaining member owns (empty when fresh)
    previous: dict[str, Sequence[TopicPartition]]

    @property
    def id(self) -> str:
        return f"{self.scenario.name}-{self.phase}-{self.assignor}"

    def runner(self, implementation: str, cluster: Any = None) -> Callable[[], object]:
        """The timed callable of ``implementation``; ``cluster`` is for kafka-python."""
        if implementation in (RUST_ASSIGN, REFERENCE_ASSIGN):
            return self._assign_runner("rust" if implementation == RUST_ASSIGN else "python")
        if implementation in (RUST_ENCODED, REFERENCE_ENCODED):
            return self._encoded_runner("rust" if implementation == RUST_ENCODED else "python")
        if implementation == KAFKA_PYTHON:
            if cluster is None:
                cluster = kafka_python_cluster(self.scenario)
            return _kafka_python_runner(self, cluster)
        raise ValueError(f"unknown implementation {implementation!r}")

    def _assign_runner(self, backend: Backend) -> Callable[[], object]:
        assignor = ASSIGNORS[self.assignor](backend=backend)
        ppt, subscriptions = self.partitions_per_topic, self.subscriptions

        def run() -> object:
            result = assignor.assign(ppt, subscriptions)
            _consume_assignments(result)
            return result

        return run

    def _encoded_runner(self, backend: Backend) -> Callable[[], object]:
        assignor = ASSIGNORS[self.assignor](backend=backend)
        ppt, encoded = self.partitions_per_topic, self.encoded
        return lambda: assignor.assign_encoded(ppt, encoded)


def _consume_assignments(result: Mapping[str, Assignment]) -> None:
    # a caller of assign() looks at every partition; a deque of size 0 does that at C speed
    deque(chain.from_iterable(a.partitions for a in result.values()), maxlen=0)


def prepare_case(scenario: Scenario, phase: str, assignor: str) -> Case:
    """Build the inputs of one case (the "leave" phase runs the fresh assignment first)."""
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    ppt = scenario.partitions_per_topic_map()
    topics = scenario.subscribed_topics()
    previous: dict[str, Sequence[TopicPartition]] = {}
    if phase == "leave":
        fresh = ASSIGNORS[assignor]().assign(ppt, {m: Subscription(t) for m, t in topics.items()})
        leaver = scenario.member_ids()[scenario.members // 2]
        previous = {m: a.partitions for m, a in fresh.items() if m != leaver}
        topics = {m: t for m, t in topics.items() if m != leaver}
    generation = PREVIOUS_GENERATION if previous else -1
    subscriptions = {
        m: Subscription(t, owned_partitions=previous.get(m, ()), generation_id=generation)
        for m, t in topics.items()
    }
    sticky = ASSIGNORS[assignor] is StickyAssignor
    cooperative = ASSIGNORS[assignor] is CooperativeStickyAssignor
    encoded: dict[str, bytes] = {}
    for member, sub in subscriptions.items():
        if sticky and previous:
            # Java's StickyAssignor is eager: the member revoked everything and says what it
            # had in user data (V1, with the generation), not in owned_partitions
            user_data = encode_sticky_user_data(sub.owned_partitions, generation)
            wire = Subscription(sub.topics, generation_id=generation, user_data=user_data)
        elif cooperative:
            # Java's CooperativeStickyAssignor repeats the generation in its user data
            user_data = encode_cooperative_user_data(generation)
            wire = Subscription(
                sub.topics,
                owned_partitions=sub.owned_partitions,
                generation_id=generation,
                user_data=user_data,
            )
        else:
            wire = sub
        encoded[member] = encode_subscription(wire, 3)
    return Case(scenario, phase, assignor, ppt, subscriptions, encoded, previous)


def floor_runner(scenario: Scenario) -> Callable[[], object]:
    """Building the scenario's partitions as ``TopicPartition`` objects from prepared pairs."""
    pairs = [(t, p) for t in scenario.topic_names() for p in range(scenario.partitions_per_topic)]
    make = TopicPartition._make
    return lambda: list(map(make, pairs))


# --------------------------------------------------------------------------- kafka-python


def kafka_python_version() -> str | None:
    try:
        return importlib_metadata.version("kafka-python")
    except importlib_metadata.PackageNotFoundError:
        return None


def kafka_python_cluster(scenario: Scenario) -> Any:
    """kafka-python's ClusterMetadata, updated from a MetadataResponse of the scenario's topics."""
    from kafka.cluster import ClusterMetadata  # type: ignore[import-untyped]
    from kafka.protocol.metadata import MetadataResponse  # type: ignore[import-untyped]

    v = 1
    topic_cls = MetadataResponse.MetadataResponseTopic
    partition_cls = topic_cls.MetadataResponsePartition
    response = MetadataResponse(
        version=v,
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                version=v, node_id=0, host="127.0.0.1", port=9092, rack=None
            )
        ],
        controller_id=0,
        topics=[
            topic_cls(
                version=v,
                error_code=0,
                name=topic,
                is_internal=False,
                partitions=[
                    partition_cls(
                        version=v,
                        error_code=0,
                        partition_index=p,
                        leader_id=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                    )
                    for p in range(scenario.partitions_per_topic)
                ],
            )
            for topic in scenario.topic_names()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def _grouped(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return list(by_topic.items())


def _kafka_python_members(case: Case) -> list[Any]:
    """JoinGroup members as kafka-python's leader hands them to its assignors.

    Each member's metadata is what kafka-python's own assignor of that name sends, encoded
    and decoded by kafka-python: range/roundrobin v0; sticky v0 with its own StickyAssignor
    user data; cooperative-sticky owned partitions plus (v2) the generation.
    """
    from kafka.coordinator.assignors.sticky.user_data import (  # type: ignore[import-untyped]
        StickyAssignorUserData,
    )
    from kafka.protocol.consumer.group import JoinGroupResponse  # type: ignore[import-untyped]
    from kafka.protocol.consumer.metadata import (  # type: ignore[import-untyped]
        ConsumerProtocolSubscription,
    )

    generation = PREVIOUS_GENERATION if case.previous else -1
    members = []
    for member_id, sub in case.subscriptions.items():
        owned = _grouped(case.previous.get(member_id, ()))
        if case.assignor == "cooperative-sticky":
            item = ConsumerProtocolSubscription.TopicPartition
            metadata = ConsumerProtocolSubscription(
                version=2,
                topics=list(sub.topics),
                user_data=b"",
                owned_partitions=[item(topic=t, partitions=p) for t, p in owned],
                generation_id=generation,
            )
        elif case.assignor == "sticky" and owned:
            user_data = StickyAssignorUserData(owned, generation).encode()
            metadata = ConsumerProtocolSubscription(0, list(sub.topics), user_data)
        else:
            metadata = ConsumerProtocolSubscription(0, list(sub.topics), b"")
        members.append(
            JoinGroupResponse.JoinGroupResponseMember(
                version=5,
                member_id=member_id,
                group_instance_id=None,
                metadata=ConsumerProtocolSubscription.decode(metadata.encode()),
            )
        )
    return members


def _kafka_python_runner(case: Case, cluster: Any) -> Callable[[], object]:
    from kafka.coordinator.assignors.cooperative_sticky import (  # type: ignore[import-untyped]
        CooperativeStickyAssignor as KafkaCooperativeSticky,
    )
    from kafka.coordinator.assignors.range import (  # type: ignore[import-untyped]
        RangePartitionAssignor,
    )
    from kafka.coordinator.assignors.roundrobin import (  # type: ignore[import-untyped]
        RoundRobinPartitionAssignor,
    )
    from kafka.coordinator.assignors.sticky.sticky_assignor import (  # type: ignore[import-untyped]
        StickyPartitionAssignor,
    )

    classes: dict[str, Any] = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "sticky": StickyPartitionAssignor,
        "cooperative-sticky": KafkaCooperativeSticky,
    }
    assignor = classes[case.assignor]()
    members = _kafka_python_members(case)

    def run() -> object:
        result = assignor.assign(cluster, members)
        # kafka-python's assignors return [(topic, [partition, ...])] per member
        deque(
            chain.from_iterable(
                parts for a in result.values() for _topic, parts in a.assigned_partitions
            ),
            maxlen=0,
        )
        return result

    return run


# --------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of each run."""

    runs: tuple[float, ...]

    @property
    def min(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


class RunTimeout(BaseException):
    """A run overshot its limit (a BaseException so that ``except Exception`` in the code
    under test cannot swallow it)."""


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Interrupt the block with RunTimeout after ``seconds`` (main thread on POSIX only;
    elsewhere, and for None, no limit)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    assert seconds is not None

    def expire(signum: int, frame: object) -> None:
        raise RunTimeout(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep everything alive now (inputs, earlier results, the kafka-python cluster) out of
    the garbage collector's scans until the block ends.

    Without this, a collection triggered inside a timed run also scans the harness's own
    objects (millions at 2000x1M), so a run's time would depend on what else the benchmark
    happens to hold. Runs still pay for collecting what they allocate themselves.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def measure(
    fn: Callable[[], object],
    *,
    repeat: int = 5,
    budget: float = 1.0,
    limit: float | None = None,
) -> Timing:
    """Time ``fn`` up to ``repeat`` times, stopping early once the runs took ``budget`` seconds.

    Runs start from a frozen heap (see :func:`frozen_heap`) and after a collection of what
    the previous run left; each result is released after the clock stops. A run over
    ``limit`` seconds raises RunTimeout.
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    runs: list[float] = []
    with frozen_heap():
        while len(runs) < repeat and (not runs or sum(runs) < budget):
            gc.collect()
            with deadline(limit):
                start = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - start
            del result
            runs.append(elapsed)
    return Timing(tuple(runs))


class Estimator:
    """Extrapolates a run time from the same run's smaller scenarios.

    Along ``Scenario.size``, with the exponent fitted to the two largest sizes measured
    (clamped to [0.5, 3]); linear from a single size; None with nothing measured yet.
    Uniform and random-subscription scenarios are fitted apart (an assignor can be much
    slower on one than on the other); a random scenario with nothing of its kind measured
    yet is estimated from the uniform ones.
    """

    def __init__(self) -> None:
        self._points: dict[tuple[tuple[str, ...], bool], dict[float, float]] = {}

    def record(self, key: tuple[str, ...], scenario: Scenario, seconds: float) -> None:
        sizes = self._points.setdefault((key, scenario.random_subscriptions), {})
        sizes[scenario.size] = max(seconds, sizes.get(scenario.size, 0.0))

    def estimate(self, key: tuple[str, ...], scenario: Scenario) -> float | None:
        guess = self._fit((key, scenario.random_subscriptions), scenario.size)
        if guess is None and scenario.random_subscriptions:
            guess = self._fit((key, False), scenario.size)
        return guess

    def _fit(self, series: tuple[tuple[str, ...], bool], size: float) -> float | None:
        points = sorted(self._points.get(series, {}).items())
        if not points:
            return None
        x2, t2 = points[-1]
        exponent = 1.0
        if len(points) > 1:
            x1, t1 = points[-2]
            if t1 > 0 and t2 > 0:
                exponent = min(3.0, max(0.5, math.log(t2 / t1) / math.log(x2 / x1)))
        return float(t2 * (size / x2) ** exponent)


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Cell:
    """One implementation's result in one row: a timing, or why there is none."""

    timing: Timing | None = None
    #: "skipped", "crash", "timeout" or "unavailable" when there is no timing
    status: str = ""
    note: str = ""


@dataclass
class Row:
    scenario: str
    phase: str
    assignor: str
    cells: dict[str, Cell] = field(default_factory=dict)

    def median(self, implementation: str) -> float | None:
        cell = self.cells.get(implementation)
        return cell.timing.median if cell is not None and cell.timing is not None else None


def run_benchmarks(
    scenarios: Sequence[Scenario],
    *,
    peers: bool = True,
    repeat: int = 5,
    budget: float = 1.0,
    peer_limit: float = DEFAULT_PEER_LIMIT,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """Measure every (scenario, phase, assignor) with every implementation; see the module docs."""
    say = progress or (lambda line: None)
    have_kafka_python = kafka_python_version() is not None
    estimator = Estimator()
    rows: list[Row] = []
    for scenario in scenarios:
        say(f"{scenario.name}: preparing")
        floor = Cell(measure(floor_runner(scenario), repeat=repeat, budget=budget))
        cluster: Any = None
        for phase in PHASES:
            for assignor in ASSIGNORS:
                case = prepare_case(scenario, phase, assignor)
                row = Row(scenario.name, phase, assignor, {FLOOR: floor})
                for implementation in IMPLEMENTATIONS:
                    peer = implementation in PEERS
                    if peer and not peers:
                        continue
                    if implementation == KAFKA_PYTHON and not have_kafka_python:
                        row.cells[implementation] = Cell(status="unavailable")
                        continue
                    key = (implementation, assignor, phase)
                    guess = estimator.estimate(key, scenario) if peer else None
                    if guess is not None and guess > peer_limit:
                        row.cells[implementation] = Cell(status="skipped", note=f"~{guess:.0f} s")
                        say(f"{case.id}: {implementation} skipped (estimated {guess:.0f} s)")
                        continue
                    if implementation == KAFKA_PYTHON and cluster is None:
                        cluster = kafka_python_cluster(scenario)
                    cell = _measure_cell(
                        case.runner(implementation, cluster),
                        repeat=repeat,
                        budget=budget,
                        limit=peer_limit if peer else None,
                        crash_ok=implementation == KAFKA_PYTHON,
                    )
                    row.cells[implementation] = cell
                    if cell.timing is not None:
                        estimator.record(key, scenario, cell.timing.min)
                    say(f"{case.id}: {implementation} {_describe(cell)}")
                rows.append(row)
                del case
    return rows


def _measure_cell(
    fn: Callable[[], object], *, repeat: int, budget: float, limit: float | None, crash_ok: bool
) -> Cell:
    try:
        return Cell(measure(fn, repeat=repeat, budget=budget, limit=limit))
    except RunTimeout:
        return Cell(status="timeout", note=f"> {limit:g} s")
    except Exception as exc:
        if not crash_ok:
            raise
        # kafka-python's RoundRobin raises KeyError on non-uniform subscriptions
        return Cell(status="crash", note=type(exc).__name__)


def _describe(cell: Cell) -> str:
    if cell.timing is not None:
        return f"{_ms(cell.timing.min)} / {_ms(cell.timing.median)} ms"
    return f"{cell.status} ({cell.note})" if cell.note else cell.status


# --------------------------------------------------------------------------- reporting


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def _ratio(numerator: float | None, denominator: float | None) -> str:
    if numerator is None or denominator is None or denominator <= 0:
        return "—"
    r = numerator / denominator
    if r >= 100:
        return f"{r:,.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def _cell_text(cell: Cell | None) -> str:
    if cell is None:
        return "—"
    if cell.timing is not None:
        return f"{_ms(cell.timing.min)} / {_ms(cell.timing.median)}"
    return f"{cell.status} ({cell.note})" if cell.note else cell.status


def render_markdown(rows: Sequence[Row], *, peers: bool = True) -> str:
    """The comparison table (Markdown) and notes on how it was measured."""
    columns = [c for c in IMPLEMENTATIONS if peers or c not in PEERS] + [FLOOR]
    headers = ["scenario", "phase", "assignor", *columns]
    if peers:
        headers += ["reference ÷ rust", "kafka-python ÷ rust"]
    headers.append("rust ÷ floor")
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join(":--" if i < 3 else "--:" for i in range(len(headers))) + "|",
    ]
    for row in rows:
        cells = [row.scenario, row.phase, row.assignor]
        cells += [_cell_text(row.cells.get(c)) for c in columns]
        rust, rust_encoded = row.median(RUST_ASSIGN), row.median(RUST_ENCODED)
        if peers:
            cells.append(
                _ratio(row.median(REFERENCE_ASSIGN), rust)
                + " / "
                + _ratio(row.median(REFERENCE_ENCODED), rust_encoded)
            )
            kafka = row.median(KAFKA_PYTHON)
            cells.append(_ratio(kafka, rust) + " / " + _ratio(kafka, rust_encoded))
        cells.append(_ratio(rust, row.median(FLOOR)))
        lines.append("| " + " | ".join(cells) + " |")
    notes = [
        "",
        "Times in ms, min / median of up to the requested number of runs (fewer when a"
        " measurement takes over a second), garbage collector on, the benchmark's own"
        " objects frozen out of its scans (gc.freeze). Ratios are of medians;"
        " `a / b` in a ratio column compares assign() / assign_encoded().",
        "Scenarios are members x partitions (10 topics; 2000x1M: 500 topics x 2000);"
        " *-random: each member subscribes to a random subset of the topics."
        " fresh: nobody owns anything; leave: one member left, the others own their"
        " previous assignment (generation 1).",
        "floor: building every partition as a TopicPartition,"
        " `list(map(TopicPartition._make, pairs))`.",
        "skipped (~N s): a peer run estimated (from smaller sizes) over the time limit;"
        " timeout: a peer run interrupted at the limit;"
        " crash: the peer raised (kafka-python's RoundRobin, non-uniform subscriptions).",
        "",
        _environment(),
    ]
    return "\n".join(lines + notes) + "\n"


def _environment() -> str:
    kafka = kafka_python_version()
    parts = [
        f"Python {platform.python_version()}",
        f"{platform.system()} {platform.machine()}",
        f"{os.cpu_count()} CPUs",
        f"kafka-python {kafka}" if kafka else "kafka-python not installed",
    ]
    processor = platform.processor()
    if processor:
        parts.insert(2, processor)
    return "Measured with " + ", ".join(parts) + f" ({sys.implementation.name})."
