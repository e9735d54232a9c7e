"""The simulator against the real thing: one small scenario run by :func:`groupcoord.sim.run`
in virtual time and for real, in real time, by ``groupcoord serve`` and one
:class:`~groupcoord.member.GroupMember` process per member (``real_member_agent.py``).

The scenario: one topic of 6 partitions; member-0 starts, member-1 and member-2 follow one
second apart (staggered, so that every start is a rebalance of its own and the generations
do not depend on which process the OS schedules first), member-3 joins at 3 s, member-1
crashes at 4 s (SIGKILL: no LeaveGroup; the coordinator expires its session), member-2
leaves cleanly at 6 s (``close()``: LeaveGroup). Session 1500 ms, heartbeats every 200 ms,
no initial rebalance delay, no records (the real GroupMember does not fetch; the comparison
is about coordination only). Two assignors: range (eager: every rebalance is one
generation and revokes everything) and cooperative-sticky (a rebalance that moves
partitions takes two generations, the second started by the members that revoked; the
assignment depends on the history, so matching it checks the whole way there).

What is compared, action by action (a start, the crash, the leave):

- the generations it causes: their numbers, members (by name: the client ids are the
  member names, and member ids start with them in both runs), leader, protocol and cause
  (the coordinator's reason, member ids replaced by names), and which members were told
  of each (``on_partitions_assigned``);
- what every running member owns once they are over (the final assignment included);
- how long they took: each generation's join phase (the coordinator's started ->
  completed, ``duration_ms`` in its log) and the time from the moment the group work
  began (the crash, the close(), a started member's first JoinGroup) to the last member
  being told of the last generation.

Both runs drive the same coordinator and member state machines. Where they may differ,
and what the test allows (the simulator is not wrong in any of these; it models no
client CPU time and no start-up, and its events at one instant happen in a fixed order):

- **Heartbeat phase.** A member hears of a rebalance at its next heartbeat, and a crashed
  member is expired one session after its last heartbeat: each such wait lies anywhere in
  [0, heartbeat.interval.ms]. The simulated heartbeats tick in lockstep at times set by
  the scenario's round numbers; real ones have a random phase. So a join phase may differ
  by up to one heartbeat interval, and the action -> told time by one per generation; plus
  NOISE_MS for the real run's own delays on a loaded 2-core machine (the GIL shared by a
  member's threads, the server's event loop, the OS scheduling six processes).
- **Start-up.** A real GroupMember connects, asks ApiVersions and Metadata, finds the
  coordinator and loads each message codec on first use before its first JoinGroup: 30-300
  ms here, up to ~1 s with both cores kept busy; the simulated one sends its JoinGroup
  after one FindCoordinator round trip (2 ms). Times are measured from the first JoinGroup
  for that reason; the start-up is printed, not compared.
- **SyncGroup races (cooperative).** The leader revokes and rejoins the moment its
  SyncGroup is answered. A follower whose SyncGroup arrives after that rejoin gets
  REBALANCE_IN_PROGRESS instead of its assignment. In the simulation (no CPU time, equal
  latencies) the follower's SyncGroup always arrives first. For real, a new member's first
  SyncGroup loses often (it costs a few ms more: see ``may_miss``), which changes no
  generation; and now and then (1 run in 8 to 2 in 5 here, the busier the machine the
  more often) a member that must revoke loses too: it never hears it must revoke, rejoins
  with what it owns, and the leader's next assignment asks again, so the rebalance takes
  one generation more (see ``lost_syncs``). The test allows exactly these and checks that
  each such generation is a revoke-and-rejoin round. For the same reason the member named
  in a revoke-and-rejoin round's cause is whichever of the revoking members was quicker
  (``cause_of``).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
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
#: the real run's own delays on top of the heartbeat phase (see the module docstring):
#: up to ~200 ms measured on a 2-core machine at load average 10
NOISE_MS = 300
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
    #: the members that revoked partitions when told of it (cooperative)
    revoked: tuple[str, ...] = ()
    #: when the last of them was told, in ms from the run's start
    last_assigned_ms: float | None = None

    def shape(self) -> tuple[tuple[str, ...], str, str, str]:
        return (self.members, self.leader, self.protocol, cause_of(self.reason))


@dataclass(slots=True)
class Outcome:
    generations: list[Generation]
    #: when each action happened, in ms from the run's start
    action_ms: list[float]
    #: member -> partitions of the members running just before each action but the first,
    #: and at the end: what each action's rebalances settled on
    settled: list[dict[str, list[int]]]
    #: when each action's group work began: a started member's first JoinGroup (after its
    #: start-up: connections, metadata, finding the coordinator), else the action itself
    begun_ms: list[float]

    def epochs(self) -> list[list[Generation]]:
        """The generations each action caused: those whose last member was told after it
        and before the next one (every action here is followed by its rebalances before
        the next one)."""
        out: list[list[Generation]] = [[] for _ in self.action_ms]
        for g in self.generations:
            assert g.last_assigned_ms is not None, f"nobody was told of generation {g}"
            k = max(i for i, t in enumerate(self.action_ms) if t <= g.last_assigned_ms)
            out[k].append(g)
        return out


#: cooperative's second round: the coordinator names the member whose JoinGroup came first
SECOND_ROUND = re.compile(
    r"^member (?P<member>member-\d+): (?:leader rejoins|metadata changed); "
    r"(?P<why>need to revoke partitions and re-join)$"
)


def cause_of(reason: str) -> str:
    """Why a rebalance started, without what is left to chance.

    When several members revoke partitions in one generation, they all rejoin at once and
    the coordinator's reason names the first JoinGroup it read: in the simulation always
    the same one (equal latencies, events in a fixed order), for real whichever process
    was quicker. Which it was is checked apart (it must be one that revoked)."""
    m = SECOND_ROUND.match(reason)
    return f"a member that revoked: {m['why']}" if m else reason


def member_name(member_id: str) -> str:
    """``member-3-<uuid4>`` (the server), ``member-3-4`` (the simulator's member ids) or
    ``member-3`` (the simulator's event log, which names processes) -> ``member-3``."""
    m = re.match(r"(member-\d+)(-|$)", member_id)
    assert m is not None, f"member id {member_id!r} does not start with a member name"
    return m.group(1)


def with_names(text: str) -> str:
    return re.sub(r"(member-\d+)-(?:[0-9a-f]{8}-[0-9a-f-]{27}|\d+)", r"\1", text)


def simulate(scenario: Scenario) -> Outcome:
    result = run(scenario, SEED)
    events = result.events.to_pylist()
    told: dict[int, set[str]] = {}
    revoked: dict[int, set[str]] = {}
    for e in events:
        if e["kind"] == "assigned":
            told.setdefault(e["generation"], set()).add(e["member"])
        elif e["kind"] == "revoked":
            revoked.setdefault(e["generation"], set()).add(e["member"])
    members = {f"member-{n}" for n in range(scenario.group.members)}
    generations = []
    for r in result.rebalances.to_pylist():
        # the outputs give a generation's size, not its members: those of the previous
        # one, plus whoever is told of this one, minus whoever the coordinator removed
        # before it completed
        removed = {
            member_name(e["member"])
            for e in events
            if e["kind"] == "member_removed" and e["time_ms"] <= r["completed_ms"]
        }
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
                revoked=tuple(sorted(revoked.get(r["generation"], ()))),
                last_assigned_ms=r["last_assigned_ms"],
            )
        )
    timeline = actions(scenario)
    # The outputs count partitions, not which ones: what the members own just before each
    # action comes from the machines of runs cut short there (the engine is deterministic:
    # a shorter run is the same run, stopped earlier).
    settled = []
    for nxt in [a.at_s for a in timeline[1:]] + [scenario.duration_s]:
        cut = scenario.replace(
            duration_s=nxt - 0.001,
            timeline=[e.to_table() for e in scenario.timeline if e.at_s < nxt],
        )
        engine = Engine(cut, SEED)
        engine.run()
        settled.append(
            {
                name: sorted(tp.partition for tp in p.machine.assignment)
                for name, p in engine.processes.items()
                if p.alive and not p.closing
            }
        )
    begun = []
    for a in timeline:
        at = a.at_s * 1000
        if a.kind == "start":
            at = min(
                e["time_ms"]
                for e in events
                if e["kind"] == "join_sent" and e["member"] == a.member and e["time_ms"] >= at
            )
        begun.append(at)
    return Outcome(generations, [a.at_s * 1000 for a in timeline], settled, begun)


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

    def settled(members: tuple[str, ...]) -> bool:
        """The coordinator's last generation has ``members`` and all were told of it."""
        lines = server.rebalances()
        if not lines:
            return False
        last = lines[-1]
        gen = int(last["gen"])
        names = tuple(sorted(member_name(i.strip()) for i in last["members"].split(",")))
        return names == members and all(
            any(e["gen"] == gen for e in agents[m].reported("assigned")) for m in members
        )

    sim_epochs = sim.epochs()
    t0 = time.monotonic()
    action_ms: list[float] = []
    for k, a in enumerate(timeline):
        if k > 0:
            # the previous action's rebalances are over, as in the simulation (a late
            # action moves the times measured from it, nothing else)
            expected = sim_epochs[k - 1][-1].members
            wait_until(
                lambda m=expected: settled(m),  # type: ignore[misc]
                max(t0 + a.at_s + LATE_S - time.monotonic(), 0.1),
                f"the group to settle on {expected} before {a}",
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
    expected = sim_epochs[-1][-1].members
    wait_until(lambda: settled(expected), LATE_S + 3, f"the group to settle on {expected}")
    # no generation the simulation did not have may follow
    time.sleep(max(QUIET_S, t0 + scenario.duration_s - time.monotonic()))
    end_ms = (time.monotonic() - t0) * 1000
    write_timeline(log_dir / "timeline.txt", t0, timeline, action_ms, agents, server)
    for a in timeline:
        if a.kind == "leave":
            agent = agents[a.member]
            wait_until(lambda ag=agent: ag.reported("closed"), 10, f"{a.member} to close")  # type: ignore[misc]
    for agent in agents.values():
        assert not agent.reported("error"), diagnostics()

    generations = []
    for m in server.rebalances():
        gen = int(m["gen"])
        ids = [i.strip() for i in m["members"].split(",")]
        assert len(ids) == int(m["n"])
        told = {
            agent.name: e["t"]
            for agent in agents.values()
            for e in agent.reported("assigned")
            if e["gen"] == gen
        }
        revoked = {
            agent.name
            for agent in agents.values()
            for e in agent.reported("revoked")
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
                told=tuple(sorted(told)),
                revoked=tuple(sorted(revoked)),
                last_assigned_ms=(max(told.values()) - t0) * 1000 if told else None,
            )
        )
    settled_states = []
    for cutoff in [*action_ms[1:], end_ms]:
        state: dict[str, list[int]] = {}
        for k, a in enumerate(timeline):
            if a.kind == "start" and action_ms[k] < cutoff:
                state[a.member] = []
            elif a.kind != "start" and action_ms[k] < cutoff:
                del state[a.member]
        for name in state:
            moves = [
                e
                for e in agents[name].reported("assigned", "revoked", "lost")
                if (e["t"] - t0) * 1000 < cutoff
            ]
            state[name] = moves[-1]["owned"] if moves else []
        settled_states.append(state)
    begun = [
        (agents[a.member].reported("joining")[0]["t"] - t0) * 1000 if a.kind == "start" else t
        for a, t in zip(timeline, action_ms, strict=True)
    ]
    return Outcome(generations, action_ms, settled_states, begun)


# ---------------------------------------------------------------------------- the test


def told_after(generations: list[Generation], begun: float) -> float:
    """How long after ``begun`` the last member of the last of ``generations`` was told."""
    told = generations[-1].last_assigned_ms
    assert told is not None
    return told - begun


def may_miss(generations: list[Generation], i: int) -> set[str]:
    """The members of ``generations[i]`` that may, for real, never be told of it.

    In a cooperative rebalance the members that revoke partitions rejoin the moment their
    SyncGroup is answered, starting the next generation. A member's SyncGroup that arrives
    after such a rejoin is answered REBALANCE_IN_PROGRESS: it is not told of the generation
    and rejoins at once, where in the simulation (no CPU time, equal latencies: every
    SyncGroup of a generation arrives before anyone's rejoin) it is told and waits for its
    next heartbeat. A member with nothing to revoke in that generation loses nothing by it:
    the same generations follow, only the next join phase is shorter. A new member's first
    SyncGroup loses often (the real GroupMember loads each message codec on first use, a
    few ms). A member that had something to revoke is another story: see ``lost_syncs``.
    """
    if i + 1 >= len(generations) or not SECOND_ROUND.match(generations[i + 1].reason):
        return set()
    return set(generations[i].members) - set(generations[i].revoked)


def lost_syncs(generations: list[Generation]) -> int:
    """Generations with a member that had been in the group before and was not told of
    it (its SyncGroup came after another member's rejoin: REBALANCE_IN_PROGRESS). If that
    member had partitions to revoke, it did not hear so and rejoined still owning them;
    the leader asks again in the next generation, which is one more than simulated. This
    counts the occasions: each may add one generation."""
    lost = 0
    for previous, g in itertools.pairwise(generations):
        if set(g.members) - set(g.told) - (set(g.members) - set(previous.members)):
            lost += 1
    return lost


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


@dataclass(slots=True)
class Comparison:
    report: list[str]
    #: (action, what, real - sim, lowest allowed, highest allowed)
    deltas: list[tuple[str, str, int, int, int]]
    #: (action, simulated start-up ms, real start-up ms)
    startup: list[tuple[str, int, int]]
    problems: list[str]


def compare(timeline: list[Action], sim: Outcome, real: Outcome) -> Comparison:
    """Everything the module docstring lists, action by action."""
    report = ["action         gen sim/real  join phase ms sim/real  begun->told ms sim/real"]
    deltas: list[tuple[str, str, int, int, int]] = []
    problems: list[str] = []
    startup: list[tuple[str, int, int]] = []
    sim_epochs, real_epochs = sim.epochs(), real.epochs()
    for k, (a, s, r) in enumerate(zip(timeline, sim_epochs, real_epochs, strict=True)):
        what = f"{a.kind} {a.member}"
        s_told = told_after(s, sim.begun_ms[k])
        r_told = told_after(r, real.begun_ms[k])
        s_up, r_up = sim.begun_ms[k] - sim.action_ms[k], real.begun_ms[k] - real.action_ms[k]
        startup.append((what, round(s_up), round(r_up)))
        for i in range(max(len(s), len(r))):
            gs = s[i] if i < len(s) else None
            gr = r[i] if i < len(r) else None
            report.append(
                f"{what if i == 0 else '':14} "
                f"{gs.generation if gs else '-':>3}/{gr.generation if gr else '-':<3}      "
                f"{gs.join_ms if gs else '-':>6}/{gr.join_ms if gr else '-':<6}          "
                + (f"{round(s_told):>6}/{round(r_told):<6}" if i == 0 else "")
                + f"  {cause_of(gs.reason if gs else gr.reason if gr else '')}"
            )
        # what each action does is the same: the first generation it causes (members,
        # leader, protocol, cause), the last (members), and what the members own then
        if s[0].shape() != r[0].shape():
            problems.append(f"{what}: first generation {r[0].shape()} != simulated {s[0].shape()}")
        if s[-1].members != r[-1].members:
            problems.append(f"{what}: settled on {r[-1].members}, simulated {s[-1].members}")
        if sim.settled[k] != real.settled[k]:
            problems.append(f"{what}: owned {real.settled[k]} != simulated {sim.settled[k]}")
        # ... and so are the generations in between, but for one race: an extra
        # cooperative round when a member's SyncGroup came after another member's
        # revoke-and-rejoin (see lost_syncs and the module docstring)
        extra = len(r) - len(s)
        if extra == 0:
            for gs, gr in zip(s, r, strict=True):
                if gs.shape() != gr.shape():
                    problems.append(f"{what}: generation {gr} != simulated {gs}")
            for i, (gs, gr) in enumerate(zip(s, r, strict=True)):
                missing = set(gs.told) - set(gr.told)
                if set(gr.told) - set(gs.told) or not missing <= may_miss(s, i):
                    problems.append(f"{what}: told of {gr}: {gr.told}, simulated {gs.told}")
        elif not 0 < extra <= lost_syncs([*(real_epochs[k - 1] if k else []), *r]) or not all(
            SECOND_ROUND.match(g.reason) for g in r[1:]
        ):
            problems.append(f"{what}: generations {r} for real, simulated {s}")
        # a second round is started by a member that revoked in the round before
        for outcome in (s, r):
            for previous, g in itertools.pairwise(outcome):
                m = SECOND_ROUND.match(g.reason)
                if m and m["member"] not in previous.revoked:
                    problems.append(f"{what}: {g} started by one that did not revoke")
        # times: each join phase, and the action -> the last member told of the last
        # generation it caused (an extra round may add its own wait)
        for i, (gs, gr) in enumerate(zip(s, r, strict=False)):
            bound = HEARTBEAT_INTERVAL_MS + NOISE_MS
            deltas.append((what, f"join phase {i + 1}", gr.join_ms - gs.join_ms, -bound, bound))
        # each round may wait up to a heartbeat, in either run; an extra round adds one
        bound = len(s) * HEARTBEAT_INTERVAL_MS + NOISE_MS
        late = bound + extra * (HEARTBEAT_INTERVAL_MS + NOISE_MS)
        deltas.append((what, "told after", round(r_told - s_told), -bound, late))
    return Comparison(report, deltas, startup, problems)


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_sim_matches_real_run(
    assignor: str, processes: list[Server | Agent], tmp_path: Path
) -> None:
    scenario = Scenario.from_dict(scenario_doc(assignor))
    sim = simulate(scenario)
    real = run_for_real(scenario, sim, tmp_path, processes)
    c = compare(actions(scenario), sim, real)
    summary = f"{assignor} (the real run: {tmp_path / 'timeline.txt'})\n" + "\n".join(c.report)
    print(summary)
    print("deltas (real - sim):", [d[:3] for d in c.deltas])
    print("start-up ms (sim, real):", c.startup)
    assert not c.problems, "\n".join(c.problems) + "\n" + summary
    assert real.settled[-1] == sim.settled[-1], summary  # the final assignment
    off = [d for d in c.deltas if not d[3] <= d[2] <= d[4]]
    assert not off, f"beyond the tolerance: {off}\n{summary}"
