"""The example scenarios of examples/scenarios/: each reproduces a claim of the seed documents.

Every example file is loaded as it is shipped, run with a fixed seed (its variants through
:meth:`Scenario.replace`, the same overrides its header documents as ``--set``), and the
claim's *direction* is asserted with clear bounds: how many rebalances, who expired, what
was revoked. Exact numbers would pin the engine's details; examples/scenarios/README.md
has the measured table.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from groupcoord.sim import Scenario, SimResult, run
from groupcoord.sim.scenario import parse_override

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
SEED = 1

#: example file -> variant name -> overrides (the header's ``--set`` lines, in order)
VARIANTS: Mapping[str, Mapping[str, Mapping[str, Any]]] = {
    "kip62-heartbeat-thread.toml": {
        "heartbeat thread": {},
        "no heartbeat thread": {"consumer.heartbeat_thread": False},
    },
    "max-poll-records.toml": {
        "max.poll.records=500": {},
        "max.poll.records=50": {"consumer.max_poll_records": 50},
    },
    "rolling-restart.toml": {
        "eager (range)": {},
        "cooperative-sticky": {"group.assignors": ["cooperative-sticky"]},
        "static (range)": {"group.static": True},
    },
    "scale-out.toml": {
        "eager (range)": {},
        "cooperative-sticky": {"group.assignors": ["cooperative-sticky"]},
    },
    "kip415-static-bounce.toml": {
        "delay 60 s": {},
        "no delay": {"consumer.scheduled_rebalance_max_delay_ms": 0},
    },
}

_results: dict[tuple[str, str], SimResult] = {}


def scenario(name: str, variant: str) -> Scenario:
    base = Scenario.from_toml(EXAMPLES / name)
    overrides = VARIANTS[name][variant]
    return base.replace(**overrides) if overrides else base


def result(name: str, variant: str) -> SimResult:
    """The run of one variant (with the invariant checks), once per test session."""
    key = (name, variant)
    if key not in _results:
        _results[key] = run(scenario(name, variant), SEED, check_invariants=True)
    return _results[key]


def after_first(res: SimResult) -> list[dict[str, Any]]:
    """The rebalance rows after the group's first."""
    rows: list[dict[str, Any]] = res.rebalances.to_pylist()
    return rows[1:]


def events(res: SimResult, kind: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = res.events.to_pylist()
    return [e for e in rows if e["kind"] == kind]


def documented_variants(path: Path) -> list[dict[str, Any]]:
    """The ``groupcoord simulate`` commands in a file's header comments, as overrides
    (``--set KEY=VALUE`` read as the CLI reads it)."""
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    out: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.startswith("groupcoord simulate "):
            continue
        words = shlex.split(line)
        assert words[2] == f"examples/scenarios/{path.name}", line
        assert words[words.index("--seed") + 1] == str(SEED), line
        out.append(dict(parse_override(words[i + 1]) for i, w in enumerate(words) if w == "--set"))
    return out


# ---------------------------------------------------------------------- every example


def test_every_example_file_is_covered() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.toml")) == sorted(VARIANTS)


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_example_parses_and_documents_its_variants(name: str) -> None:
    path = EXAMPLES / name
    text = path.read_text(encoding="utf-8")
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert text.startswith("# "), "an example starts with comments saying what it shows"
    assert any(line.startswith("# What it shows:") for line in header)
    assert any(line.startswith("# The claim (seed") for line in header)
    base = Scenario.from_toml(path)
    assert base.seed == SEED
    # the header's commands are exactly the variants the tests run, and each one is valid
    assert documented_variants(path) == [dict(v) for v in VARIANTS[name].values()]
    for variant in VARIANTS[name]:
        scenario(name, variant)


def test_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for name in VARIANTS:
        assert f"groupcoord simulate examples/scenarios/{name} --seed {SEED}" in readme


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_same_file_same_seed_same_summary(name: str) -> None:
    first = run(Scenario.from_toml(EXAMPLES / name), SEED)
    second = run(Scenario.from_toml(EXAMPLES / name), SEED)
    assert first.summary_json() == second.summary_json()
    assert json.loads(first.summary_json())["seed"] == SEED


_SUMMARIES = """
import json, sys
from pathlib import Path
from groupcoord.sim import Scenario, run
names = sys.argv[2:]
print(json.dumps([run(Scenario.from_toml(Path(sys.argv[1]) / n), 1).summary_json() for n in names]))
"""


def test_same_summary_in_another_process() -> None:
    """Nothing depends on the process (str hashing is salted per process)."""
    names = sorted(VARIANTS)
    here = [run(Scenario.from_toml(EXAMPLES / n), SEED).summary_json() for n in names]
    for hash_seed in ("1", "2"):
        child = subprocess.run(
            [sys.executable, "-c", _SUMMARIES, str(EXAMPLES), *names],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            timeout=120,
        )
        assert json.loads(child.stdout) == here, f"PYTHONHASHSEED={hash_seed}"


# ---------------------------------------------------------------------- KIP-62

KIP62 = "kip62-heartbeat-thread.toml"


def test_kip62_premise_batch_between_session_and_poll_interval() -> None:
    s = scenario(KIP62, "heartbeat thread")
    c, w = s.consumer, s.workload
    rt = w.record_time_ms.to_table()
    assert c.max_poll_records * rt["low"] > c.session_timeout_ms
    assert c.max_poll_records * rt["high"] < c.max_poll_interval_ms
    # the consumers are behind: every poll returns a full batch
    per_member = w.records_per_second_per_partition * s.group.topics["events"] / s.group.members
    assert per_member > 1000 / rt["low"]


def test_kip62_without_heartbeat_thread_the_group_rebalances_over_and_over() -> None:
    res = result(KIP62, "no heartbeat thread")
    s = res.summary
    assert s["rebalances"] > 5
    assert s["members_expired_session"] > 0
    assert s["members_expired_poll"] == 0  # no poll timer before KIP-62
    expirations = [r for r in after_first(res) if r["reason"] == "heartbeat expiration"]
    assert len(expirations) > 5
    assert s["duplicates"] > 0  # expired members lose uncommitted work


def test_kip62_with_heartbeat_thread_no_rebalance_beyond_the_first() -> None:
    s = result(KIP62, "heartbeat thread").summary
    assert s["rebalances"] == 1
    assert s["generations"] == 1
    assert s["members_expired_session"] == 0
    assert s["members_expired_poll"] == 0
    assert s["duplicates"] == 0
    slow = result(KIP62, "no heartbeat thread").summary
    assert s["records_processed"] > slow["records_processed"]
    assert s["unavailable_partition_seconds"] < slow["unavailable_partition_seconds"]


# ---------------------------------------------------------------------- max.poll.records

MPR = "max-poll-records.toml"


def test_max_poll_records_premise() -> None:
    """The seeds' rule: max.poll.records well below rate x max.poll.interval."""
    for variant, too_high in (("max.poll.records=500", True), ("max.poll.records=50", False)):
        s = scenario(MPR, variant)
        c, rt = s.consumer, s.workload.record_time_ms.to_table()
        budget = 1000 / s.workload.record_time_ms.mean * c.max_poll_interval_ms / 1000
        if too_high:
            assert c.max_poll_records * rt["low"] > c.max_poll_interval_ms
            assert c.max_poll_records > budget
        else:
            assert c.max_poll_records * rt["high"] < c.max_poll_interval_ms
            assert c.max_poll_records * 5 <= budget


def test_max_poll_records_too_high_members_time_out_and_leave() -> None:
    res = result(MPR, "max.poll.records=500")
    s = res.summary
    assert s["members_expired_poll"] > 0
    assert s["members_left"] >= s["members_expired_poll"] > 0
    assert s["members_expired_session"] == 0  # the heartbeat thread keeps them alive
    assert s["rebalances"] > 2
    assert any("poll timeout" in r["reason"] for r in after_first(res))
    assert s["duplicates"] > 0


def test_max_poll_records_lowered_removes_the_rebalances() -> None:
    low = result(MPR, "max.poll.records=50").summary
    high = result(MPR, "max.poll.records=500").summary
    assert low["rebalances"] == 1
    assert low["members_expired_poll"] == 0
    assert low["members_left"] == 0
    assert low["duplicates"] == 0
    assert low["records_processed"] > high["records_processed"]
    assert low["unavailable_partition_seconds"] < high["unavailable_partition_seconds"]


# ---------------------------------------------------------------------- rolling restart

RR = "rolling-restart.toml"


def test_rolling_restart_static_membership_no_rebalance() -> None:
    s = scenario(RR, "static (range)")
    restart = s.timeline[0]
    assert restart.action == "restart" and restart.count == s.group.members == 10
    assert s.consumer.session_timeout_ms > restart.downtime_s * 1000
    summary = result(RR, "static (range)").summary
    assert summary["rebalances"] == 1
    assert summary["generations"] == 1
    assert summary["members_left"] == 0
    assert summary["members_expired_session"] == 0
    assert summary["members_running"] == 10


def test_rolling_restart_dynamic_members_rebalance_each_restart() -> None:
    for variant in ("eager (range)", "cooperative-sticky"):
        summary = result(RR, variant).summary
        assert summary["rebalances"] > 5, variant
        assert summary["members_left"] == 10, variant
        assert summary["members_running"] == 10, variant


def test_rolling_restart_eager_stops_the_world_cooperative_does_not() -> None:
    partitions = sum(scenario(RR, "eager (range)").group.topics.values())
    eager, coop = result(RR, "eager (range)"), result(RR, "cooperative-sticky")
    assert eager.summary["stop_the_world_ms"] > 0
    assert coop.summary["stop_the_world_ms"] == 0
    # eager: every rebalance revokes every partition; cooperative: only what changes owner
    for row in after_first(eager):
        assert row["partitions_revoked"] == partitions, row
    for row in after_first(coop):
        assert row["partitions_revoked"] <= partitions // 4, row
    revoked_eager = sum(r["partitions_revoked"] for r in after_first(eager))
    revoked_coop = sum(r["partitions_revoked"] for r in after_first(coop))
    assert revoked_coop * 4 < revoked_eager
    assert (
        coop.summary["unavailable_partition_seconds"]
        < eager.summary["unavailable_partition_seconds"]
    )


def test_rolling_restart_static_partitions_wait_for_their_member() -> None:
    """The price of static membership: a restarted member's partitions wait out its
    downtime (nobody else takes them), yet it beats eager's stop-the-world here."""
    s = scenario(RR, "static (range)")
    restart = s.timeline[0]
    per_member = sum(s.group.topics.values()) / s.group.members
    static = result(RR, "static (range)").summary
    eager = result(RR, "eager (range)").summary
    restart_cost = static["unavailable_partition_seconds"] - first_rebalance_cost(RR)
    assert restart_cost >= restart.count * per_member * restart.downtime_s
    assert static["unavailable_partition_seconds"] < eager["unavailable_partition_seconds"]


def first_rebalance_cost(name: str) -> float:
    """Partition-seconds before the first assignment (common to every variant)."""
    s = scenario(name, next(iter(VARIANTS[name])))
    first = result(name, next(iter(VARIANTS[name]))).rebalances.to_pylist()[0]
    return float(sum(s.group.topics.values()) * first["last_assigned_ms"] / 1000)


# ---------------------------------------------------------------------- scale-out

SCALE = "scale-out.toml"


def newcomer_partitions(res: SimResult, newcomer: str) -> int:
    return sum(e["partitions"] or 0 for e in events(res, "assigned") if e["member"] == newcomer)


def test_scale_out_eager_stops_everyone() -> None:
    s = scenario(SCALE, "eager (range)")
    assert s.group.members == 100
    partitions = sum(s.group.topics.values())
    res = result(SCALE, "eager (range)")
    rows = after_first(res)
    assert len(rows) == 1 and rows[0]["members_after"] == 101
    assert rows[0]["partitions_revoked"] == partitions
    assert res.summary["stop_the_world_ms"] > 0
    assert res.summary["members_running"] == 101


def test_scale_out_cooperative_moves_only_what_the_newcomer_gets() -> None:
    res = result(SCALE, "cooperative-sticky")
    gets = newcomer_partitions(res, "member-100")
    assert 1 <= gets <= 2  # 200 partitions over 101 members
    rows = after_first(res)
    assert rows and rows[-1]["members_after"] == 101
    assert sum(r["partitions_revoked"] for r in rows) <= gets
    assert sum(r["partitions_moved"] for r in rows) <= gets
    assert res.summary["stop_the_world_ms"] == 0
    revokers = {e["member"] for e in events(res, "revoked")}
    assert len(revokers) <= gets
    eager = result(SCALE, "eager (range)").summary
    assert res.summary["unavailable_partition_seconds"] < eager["unavailable_partition_seconds"]


# ---------------------------------------------------------------------- KIP-415

KIP415 = "kip415-static-bounce.toml"


def test_kip415_premise() -> None:
    s = scenario(KIP415, "delay 60 s")
    bounce = s.timeline[0]
    assert s.group.static and bounce.action == "restart" and bounce.members == (3,)
    # the bounce outlasts the session (the member is expired) but not the delay
    assert s.consumer.session_timeout_ms < bounce.downtime_s * 1000
    assert bounce.downtime_s * 1000 < s.consumer.scheduled_rebalance_max_delay_ms


def test_kip415_bounced_member_gets_its_partitions_back_nobody_else_moves() -> None:
    res = result(KIP415, "delay 60 s")
    s = res.summary
    assert s["members_expired_session"] == 1
    rows = after_first(res)
    assert len(rows) >= 2  # it left, it came back
    assert all(r["partitions_moved"] == 0 for r in rows)
    # only the bouncing member revoked anything (its own partitions, when it closed)
    assert {e["member"] for e in events(res, "revoked")} == {"member-3"}
    # after the first rebalance nobody else gains a partition; member-3 gets its own back
    start = rows[0]["started_ms"]
    later = [e for e in events(res, "assigned") if e["time_ms"] >= start]
    assert all(e["partitions"] == 0 for e in later if e["member"] != "member-3")
    first_gen = res.rebalances.to_pylist()[0]["generation"]
    had = sum(
        e["partitions"]
        for e in events(res, "assigned")
        if e["member"] == "member-3" and e["generation"] == first_gen
    )
    assert had > 0
    assert sum(e["partitions"] for e in later if e["member"] == "member-3") == had
    assert s["members_running"] == 6


def test_kip415_without_delay_partitions_move_away_and_back() -> None:
    res = result(KIP415, "no delay")
    rows = after_first(res)
    assert sum(r["partitions_moved"] for r in rows) >= 4  # away and back, 2 partitions
    revokers = {e["member"] for e in events(res, "revoked")}
    assert revokers - {"member-3"}, "the temporary owners give the partitions back"
    # the trade-off: without the delay the partitions wait less
    delayed = result(KIP415, "delay 60 s").summary
    assert res.summary["unavailable_partition_seconds"] < delayed["unavailable_partition_seconds"]
