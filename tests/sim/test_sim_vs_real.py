"""The simulator against the real thing: one small scenario run by :func:`groupcoord.sim.run`
in virtual time and for real, in real time, by ``groupcoord serve`` and one
:class:`~groupcoord.member.GroupMember` process per member (``real_member_agent.py``).

The scenario: one topic of 6 partitions; member-0 starts, member-1 and member-2 follow one
second apart (staggered, so that every start is a rebalance of its own and the generations
do not depend on which process the OS schedules first), member-3 joins at 3 s, member-1
crashes at 4 s (SIGKILL: no LeaveGroup; the coordinator expires its session), member-2
leaves cleanly at 6 s (``close()``: LeaveGroup). Session 1500 ms, heartbeats every 200 ms,
no initial rebalance delay, no records (the real GroupMember does not fetch; the comparison
is about coordination only).

What must be the same in both runs, generation by generation: the generation number, its
members (by name: client ids are the member names, and member ids start with them in both
runs), its leader, its protocol and why it started (the coordinator's reason with member
ids replaced by names). And the final assignment, member by member.

What must be close: each generation's join phase (the coordinator's started -> completed,
what it logs as ``duration_ms``) and the time from the timeline action that caused it
(a start, the SIGKILL, the close()) to the last member being told its partitions. Both run
the same coordinator and member state machines, so the only differences are where each
member's heartbeat timer happens to be when something changes (the simulation's
heartbeats tick in lockstep at round times; real ones have a random phase) and the real
run's scheduling noise. A member hears of a rebalance at its next heartbeat, and a crashed
member is expired one session timeout after its last heartbeat: each of these waits lies
anywhere in [0, heartbeat.interval.ms] in one run and maybe at the other end in the other.
Hence the tolerance: one heartbeat interval plus NOISE_MS for the real run's delays on a
loaded 2-core CI machine (process start-up of the GroupMember's threads and connections,
the GIL shared by a member's threads, the server's event loop, the test's own polling).

Two assignors: range (eager: every rebalance revokes everything; the final assignment
depends on the final members only) and cooperative-sticky (incremental: a rebalance that
moves partitions takes two generations, the second started by the members that revoked;
the final assignment depends on the history, so it checks that both runs went through the
same assignments).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from groupcoord.sim import Scenario, run
from groupcoord.sim.engine import Engine
from waiting import wait_until

HERE = Path(__file__).resolve().parent
AGENT = HERE / "real_member_agent.py"

SEED = 1
GROUP_ID = "sim-vs-real"
TOPIC = "t"
PARTITIONS = 6
SESSION_TIMEOUT_MS = 1500
HEARTBEAT_INTERVAL_MS = 200
#: also the rebalance timeout; no rebalance here comes near it
MAX_POLL_INTERVAL_MS = 10_000
RETRY_BACKOFF_MS = 100
#: the real run's own delays on top of the heartbeat phase (see the module docstring);
#: the deltas measured on a loaded 2-core machine are in the commit message
NOISE_MS = 250
TOLERANCE_MS = HEARTBEAT_INTERVAL_MS + NOISE_MS
#: how long after its scheduled time an action may wait for the previous rebalance to end
#: in the real run (a late action moves the times measured from it; it changes nothing else)
LATE_S = 3.0
#: after the last expected generation: no further one may come
QUIET_S = 0.6

TIMELINE: list[dict[str, Any]] = [
    {"at_s": 1.0, "action": "join"},  # member-1
    {"at_s": 2.0, "action": "join"},  # member-2
    {"at_s": 3.0, "action": "join"},  # member-3: the join
    {"at_s": 4.0, "action": "crash", "members": [1]},
    {"at_s": 6.0, "action": "leave", "members": [2]},
]
DURATION_S = 7.0


def scenario_doc(assignor: str) -> dict[str, Any]:
    return {
        "duration_s": DURATION_S,
        "seed": SEED,
        "group": {
            "members": 1,
            "topics": {TOPIC: PARTITIONS},
            "assignors": [assignor],
            "group_id": GROUP_ID,
        },
        "consumer": {
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
            "max_poll_interval_ms": MAX_POLL_INTERVAL_MS,
            "retry_backoff_ms": RETRY_BACKOFF_MS,
            # the real members commit nothing
            "enable_auto_commit": False,
            "commit_on_revoke": False,
        },
        "coordinator": {
            "group_initial_rebalance_delay_ms": 0,
            "group_min_session_timeout_ms": 500,
        },
        "workload": {"records_per_second_per_partition": 0},
        # loopback: a request and its answer take about a millisecond each way
        "network": {"latency_ms": {"dist": "constant", "value": 1}},
        "timeline": TIMELINE,
    }


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the timeline does to one member (the initial members' start included)."""

    at_s: float
    kind: str  # start, crash, leave
    member: str


def actions(scenario: Scenario) -> list[Action]:
    """The timeline member by member, named as the simulator names them."""
    out = [Action(0.0, "start", f"member-{n}") for n in range(scenario.group.members)]
    next_number = scenario.group.members
    for event in scenario.timeline:
        if event.action == "join":
            for _ in range(event.count):
                out.append(Action(event.at_s, "start", f"member-{next_number}"))
                next_number += 1
        else:
            assert event.action in ("crash", "leave") and event.members is not None
            out.extend(Action(event.at_s, event.action, f"member-{n}") for n in event.members)
    return out


# ---------------------------------------------------------------------------- the outcome


@dataclass(slots=True)
class Generation:
    """One generation as the coordinator announced it, and when its members heard of it."""

    generation: int
    members: tuple[str, ...]  # names, sorted
    leader: str
    protocol: str
    reason: str
    join_ms: int  # the join phase: started -> completed
    #: the members told their partitions in this generation (on_partitions_assigned)
    told: tuple[str, ...] = ()
    #: when the last of them was told, in ms from the run's start
    last_assigned_ms: float | None = None


@dataclass(slots=True)
class Outcome:
    generations: list[Generation]
    final_assignment: dict[str, list[int]]
    #: when each action happened, in ms from the run's start
    action_ms: list[float] = field(default_factory=list)

    def shape(self) -> list[tuple[int, tuple[str, ...], str, str, str]]:
        return [(g.generation, g.members, g.leader, g.protocol, g.reason) for g in self.generations]


def member_name(member_id: str) -> str:
    """``member-3-<uuid4>`` (the server) or ``member-3-4`` (the simulator) -> ``member-3``."""
    m = re.match(r"(member-\d+)-", member_id)
    assert m is not None, f"member id {member_id!r} does not start with a member name"
    return m.group(1)


def with_names(text: str) -> str:
    return re.sub(r"(member-\d+)-(?:[0-9a-f]{8}-[0-9a-f-]{27}|\d+)", r"\1", text)


def simulate(scenario: Scenario) -> Outcome:
    result = run(scenario, SEED)
    told: dict[int, set[str]] = {}
    for e in result.events.to_pylist():
        if e["kind"] == "assigned":
            told.setdefault(e["generation"], set()).add(e["member"])
    removed: set[str] = set()
    members = {f"member-{n}" for n in range(scenario.group.members)}
    generations = []
    for r in result.rebalances.to_pylist():
        # the outputs name a generation's size, not its members: those of the previous
        # one, plus whoever is told of this one, minus whoever the coordinator removed
        # before it completed (a crashed or departed member is not told of anything)
        for e in result.events.to_pylist():
            if e["kind"] == "member_removed" and e["time_ms"] <= r["completed_ms"]:
                removed.add(member_name(e["member"]))
        members = (members | told.get(r["generation"], set())) - removed
        assert len(members) == r["members_after"], (r, members)
        generations.append(
            Generation(
                generation=r["generation"],
                members=tuple(sorted(members)),
                leader=member_name(r["leader"]),
                protocol=r["protocol"],
                reason=with_names(r["reason"]),
                join_ms=r["duration_ms"],
                told=tuple(sorted(told.get(r["generation"], ()))),
                last_assigned_ms=r["last_assigned_ms"],
            )
        )
    # The outputs count partitions, not which ones: the final assignment comes from the
    # machines of a second (identical: the engine is deterministic) run.
    engine = Engine(scenario, SEED)
    engine.run()
    assert len(engine.recorder.rebalances) == len(generations)
    final = {
        name: sorted(tp.partition for tp in p.machine.assignment)
        for name, p in engine.processes.items()
        if p.alive
    }
    at = [a.at_s * 1000 for a in actions(scenario)]
    return Outcome(generations, final, at)


# ---------------------------------------------------------------------------- the real run

REBALANCE_LINE = re.compile(
    r"rebalance completed: group=(?P<group>\S+) generation=(?P<gen>\d+) members=(?P<n>\d+) "
    r"\[(?P<members>.*)\] leader=(?P<leader>\S+) protocol=(?P<ptype>[^/\s]+)/(?P<proto>\S+) "
    r"duration_ms=(?P<ms>\d+) reason=(?P<reason>.*)$"
)
READY_PREFIX = "groupcoord listening on "


class Server:
    """``groupcoord serve`` with its log (stderr) in a file: the rebalance lines."""

    def __init__(self, log_path: Path, *args: str) -> None:
        self.log_path = log_path
        with log_path.open("w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "groupcoord", "serve", "--port", "0", "--memory", *args],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=dict(os.environ, PYTHONUNBUFFERED="1"),
            )
        assert self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=30)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith(READY_PREFIX):
            self.kill()
            raise AssertionError(f"groupcoord serve did not start: {line!r}\n{self.log()}")
        self.bootstrap = line[len(READY_PREFIX) :].strip()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def rebalances(self) -> list[re.Match[str]]:
        return [m for m in map(REBALANCE_LINE.search, self.log().splitlines()) if m]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class Agent:
    """One member process and what it reported (``real_member_agent``'s JSON lines)."""

    def __init__(self, name: str, settings: dict[str, Any], log_dir: Path) -> None:
        self.name = name
        self.stderr_path = log_dir / f"{name}.stderr"
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        with self.stderr_path.open("w") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, str(AGENT), json.dumps(settings)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._reader = threading.Thread(target=self._read, daemon=True, name=f"read-{name}")
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.events.append(json.loads(line))

    def reported(self, *kinds: str) -> list[dict[str, Any]]:
        with self._lock:
            return [e for e in self.events if e["ev"] in kinds]

    def command(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def cleanup(self) -> None:
        self.kill()
        self._reader.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


@pytest.fixture
def processes() -> Iterator[list[Server | Agent]]:
    """Every process a test starts; all are killed when it ends, whatever happened."""
    started: list[Server | Agent] = []
    yield started
    for p in reversed(started):
        if isinstance(p, Agent):
            p.cleanup()
        else:
            p.kill()


def run_for_real(
    scenario: Scenario, sim: Outcome, log_dir: Path, started: list[Server | Agent]
) -> Outcome:
    server = Server(
        log_dir / "server.log",
        "--group-min-session-timeout-ms",
        str(scenario.coordinator.group_min_session_timeout_ms),
        "--group-initial-rebalance-delay-ms",
        str(scenario.coordinator.group_initial_rebalance_delay_ms),
        "--topic",
        f"{TOPIC}:{PARTITIONS}",
    )
    started.append(server)
    timeline = actions(scenario)
    agents: dict[str, Agent] = {}
    for a in timeline:
        if a.kind == "start":
            settings = {
                "bootstrap": server.bootstrap,
                "group_id": GROUP_ID,
                "topic": TOPIC,
                "assignor": scenario.group.assignors[0],
                "client_id": a.member,
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
                "max_poll_interval_ms": MAX_POLL_INTERVAL_MS,
                "retry_backoff_ms": RETRY_BACKOFF_MS,
            }
            agents[a.member] = Agent(a.member, settings, log_dir)
            started.append(agents[a.member])

    def diagnostics() -> str:
        lines = [f"--- server log\n{server.log()[-6000:]}"]
        for agent in agents.values():
            events = [{k: v for k, v in e.items() if k != "t"} for e in agent.events]
            lines.append(f"--- {agent.name}: {events}\n{agent.stderr_path.read_text()[-2000:]}")
        return "\n".join(lines)

    wait_until(
        lambda: all(a.reported("ready") for a in agents.values()),
        60,
        "the member processes to start",
        diagnostics,
    )

    def told(generation: Generation) -> bool:
        """Every member of ``generation`` (as simulated) was told its partitions in it."""
        return all(
            any(e["gen"] >= generation.generation for e in agents[m].reported("assigned"))
            for m in generation.members
        )

    t0 = time.monotonic()
    action_ms: list[float] = []
    for a in timeline:
        # the generations the simulation completed before this action: wait for them here
        before = [g for g in sim.generations if g.last_assigned_ms is not None]
        before = [g for g in before if g.last_assigned_ms < a.at_s * 1000]  # type: ignore[operator]
        if before:
            deadline = t0 + a.at_s + LATE_S - time.monotonic()
            wait_until(
                lambda g=before[-1]: told(g),  # type: ignore[misc]
                max(deadline, 0.1),
                f"generation {before[-1].generation} before {a}",
                diagnostics,
            )
        delay = t0 + a.at_s - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        agent = agents[a.member]
        action_ms.append((time.monotonic() - t0) * 1000)
        if a.kind == "start":
            agent.command("start")
        elif a.kind == "crash":
            agent.kill()
        else:
            agent.command("close")
    last = sim.generations[-1]
    wait_until(lambda: told(last), LATE_S + 3, f"generation {last.generation}", diagnostics)
    # no generation the simulation did not have may follow
    time.sleep(max(QUIET_S, t0 + scenario.duration_s - time.monotonic()))
    write_timeline(log_dir / "timeline.txt", t0, timeline, action_ms, agents, server)
    for name, agent in agents.items():
        if any(a.kind == "leave" and a.member == name for a in timeline):
            wait_until(lambda ag=agent: ag.reported("closed"), 10, f"{name} to close")  # type: ignore[misc]
        assert not agent.reported("error"), diagnostics()

    generations = []
    for m in server.rebalances():
        gen = int(m["gen"])
        ids = [s.strip() for s in m["members"].split(",") if s.strip()]
        assert len(ids) == int(m["n"])
        assigned = {
            agent.name: e["t"]
            for agent in agents.values()
            for e in agent.reported("assigned")
            if e["gen"] == gen
        }
        generations.append(
            Generation(
                generation=gen,
                members=tuple(sorted(member_name(i) for i in ids)),
                leader=member_name(m["leader"]),
                protocol=m["proto"],
                reason=with_names(m["reason"]),
                join_ms=int(m["ms"]),
                told=tuple(sorted(assigned)),
                last_assigned_ms=(max(assigned.values()) - t0) * 1000 if assigned else None,
            )
        )
    final: dict[str, list[int]] = {}
    for name, agent in agents.items():
        if agent.proc.poll() is None:
            moves = agent.reported("assigned", "revoked", "lost")
            final[name] = moves[-1]["owned"] if moves else []
    return Outcome(generations, final, action_ms)


# ---------------------------------------------------------------------------- the test


def told_after(generation: Generation, action_ms: list[float]) -> float | None:
    """How long after the action that caused it the last member of ``generation`` was told
    its partitions. The cause is the last action before that (every action here is
    followed by its rebalances before the next one; cooperative's second round is timed
    from the action that started the first)."""
    told = generation.last_assigned_ms
    if told is None:
        return None
    return told - max(t for t in action_ms if t <= told)


def missed_first_sync(sim: Outcome, index: int) -> set[str]:
    """The members of generation ``index`` that may, for real, never be told of it.

    In a cooperative rebalance the leader revokes what a new member is to get and rejoins
    at once, starting a second generation. The new member's first SyncGroup races that
    rejoin: the simulation gives a client's work no time, so the follower's SyncGroup, sent
    the moment its JoinGroup is answered, always arrives before the leader's rejoin; the
    real GroupMember's first SyncGroup costs a few ms more (kio loads and resolves each
    message class on first use), so the leader often wins. The new member then gets
    REBALANCE_IN_PROGRESS instead of its (empty) assignment and rejoins at once, where the
    simulated one waits for its next heartbeat: same generations, same assignments, but
    that member is told of the second generation only, and the second join phase lasts
    a few ms instead of a heartbeat interval (within the tolerance).
    """
    gens = sim.generations
    if index + 1 >= len(gens) or not gens[index + 1].reason.endswith(
        "need to revoke partitions and re-join"
    ):
        return set()
    earlier = {m for g in gens[:index] for m in g.members}
    return set(gens[index].members) - earlier


def write_timeline(
    path: Path,
    t0: float,
    timeline: list[Action],
    action_ms: list[float],
    agents: dict[str, Agent],
    server: Server,
) -> None:
    """Everything the real run reported, in time order (ms from the start), for a
    failure's post-mortem (``AGENT_TRACE=1`` adds every request and response)."""
    rows = [(t, f"test: {a.kind} {a.member}") for a, t in zip(timeline, action_ms, strict=True)]
    for agent in agents.values():
        for e in list(agent.events):
            fields = {k: v for k, v in e.items() if k not in ("ev", "t")}
            rows.append(((e["t"] - t0) * 1000, f"{agent.name}: {e['ev']} {fields}"))
    lines = [f"{t:9.1f} {what}" for t, what in sorted(rows)]
    path.write_text("\n".join(lines) + "\n--- server log\n" + server.log())


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_sim_matches_real_run(
    assignor: str, processes: list[Server | Agent], tmp_path: Path
) -> None:
    scenario = Scenario.from_dict(scenario_doc(assignor))
    sim = simulate(scenario)
    real = run_for_real(scenario, sim, tmp_path, processes)

    report = [
        f"{assignor} (real run: {tmp_path / 'timeline.txt'})",
        "gen  join phase ms sim/real  action->told ms sim/real  reason",
    ]
    deltas: list[tuple[int, str, float]] = []
    for s, r in zip(sim.generations, real.generations, strict=False):
        s_told = told_after(s, sim.action_ms)
        r_told = told_after(r, real.action_ms)
        report.append(
            f"{s.generation:3}  {s.join_ms:6}/{r.join_ms:<6}          "
            f"{s_told if s_told is None else round(s_told):6}/"
            f"{r_told if r_told is None else round(r_told):<6}            {s.reason}"
        )
        deltas.append((s.generation, "join phase", r.join_ms - s.join_ms))
        if s_told is not None and r_told is not None:
            deltas.append((s.generation, "action -> told", round(r_told - s_told)))
    print("\n".join(report))
    print("deltas (real - sim):", deltas)
    summary = "\n".join(report)

    # the same generations: members, leader, protocol, cause
    assert real.shape() == sim.shape(), summary
    # the same final assignment, member by member
    assert real.final_assignment == sim.final_assignment, summary
    # every member of every generation was told of it (see missed_first_sync)
    for i, (s, r) in enumerate(zip(sim.generations, real.generations, strict=True)):
        missing = set(s.told) - set(r.told)
        assert set(r.told) <= set(s.told), (s.generation, r.told, s.told)
        assert missing <= missed_first_sync(sim, i), (s.generation, r.told, s.told, summary)
        assert r.last_assigned_ms is not None, summary
    # and the times, within one heartbeat interval plus the real run's noise
    off = [(gen, what, d) for gen, what, d in deltas if abs(d) > TOLERANCE_MS]
    assert not off, f"beyond +-{TOLERANCE_MS} ms: {off}\n{summary}"
