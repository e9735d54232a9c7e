"""The rebalance simulator: the real coordinator and member state machines in virtual time.

    from groupcoord.sim import Scenario, run

    scenario = Scenario.from_toml("examples/scenarios/kip62-heartbeat-thread.toml")
    result = run(scenario.replace(**{"consumer.max_poll_records": 100}), seed=1)
    print(result.summary["rebalances"], result.events.num_rows)

:func:`run` is deterministic: the same scenario and seed give the same ``summary`` (and
``summary_json()`` byte for byte). The scenario format is in
:mod:`groupcoord.sim.scenario`, the outputs in :mod:`groupcoord.sim.result`, the model in
:mod:`groupcoord.sim.engine`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator

from groupcoord.sim.engine import Engine
from groupcoord.sim.invariants import InvariantViolation
from groupcoord.sim.result import EVENT_COLUMNS, REBALANCE_COLUMNS, SimResult
from groupcoord.sim.scenario import Scenario, ScenarioError, TimelineEvent

__all__ = [
    "EVENT_COLUMNS",
    "REBALANCE_COLUMNS",
    "InvariantViolation",
    "Scenario",
    "ScenarioError",
    "SimResult",
    "TimelineEvent",
    "run",
]


def run(
    scenario: Scenario,
    seed: int | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    check_invariants: bool = False,
    lazy: bool = True,
    native: bool = True,
) -> SimResult:
    """Simulate ``scenario`` with ``seed`` (default: the scenario's own ``seed``).

    ``progress(now_ms, end_ms)`` is called now and then with the virtual time reached.
    ``check_invariants`` checks the protocol's safety properties after every step
    (:mod:`groupcoord.sim.invariants`; slow, for tests) and raises
    :class:`~groupcoord.sim.invariants.InvariantViolation` at the first that fails.
    ``lazy=False`` runs the reference engine, which queues every application step (tests
    check that both give the same outputs); ``native=False`` runs the lazy application
    steps in Python instead of Rust (the reference of the Rust loop; the same outputs).
    """
    if not isinstance(scenario, Scenario):
        raise TypeError(f"scenario must be a Scenario, not {type(scenario).__name__}")
    if seed is None:
        seed = scenario.seed
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    engine = Engine(
        scenario, seed, progress, check_invariants=check_invariants, lazy=lazy, native=native
    )
    with _quiet_protocol_logs():
        recorder = engine.run()
    arrived = sum(s.arrived(engine.end_ms) for s in engine.streams.values())
    return SimResult.from_recorder(
        recorder,
        duration_s=scenario.duration_s,
        seed=seed,
        extra={
            "records_arrived": arrived,
            "final_generation": recorder.rebalances[-1].generation if recorder.rebalances else 0,
            "members_running": sum(1 for p in engine.processes.values() if p.alive),
        },
    )


@contextlib.contextmanager
def _quiet_protocol_logs() -> Iterator[None]:
    """The simulated members and coordinator log what real ones would (a warning per poll
    timeout, a line per rebalance); in a simulation of thousands of them that is noise, and
    the event log already holds it. Errors still show."""
    loggers = [logging.getLogger(n) for n in ("groupcoord.member", "groupcoord.coordinator")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)
