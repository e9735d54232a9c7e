"""The command line: ``groupcoord assign`` and ``groupcoord bench`` (and the pieces of bench)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groupcoord import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from groupcoord import benchmark as gb
from groupcoord.cli import app

runner = CliRunner()

GROUP: dict[str, Any] = {
    "topics": {"orders": 7, "payments": 3},
    "members": {
        "m-b": {"topics": ["orders", "payments"]},
        "m-a": {
            "topics": ["orders"],
            "owned_partitions": [["orders", 0], ["orders", 5]],
            "generation_id": 3,
            "group_instance_id": "static-1",
        },
        "m-c": {"topics": ["payments", "unknown-topic"], "generation_id": 2},
    },
}
GROUP_SUBSCRIPTIONS = {
    "m-b": Subscription(["orders", "payments"]),
    "m-a": Subscription(
        ["orders"],
        owned_partitions=[TopicPartition("orders", 0), TopicPartition("orders", 5)],
        generation_id=3,
        group_instance_id="static-1",
    ),
    "m-c": Subscription(["payments", "unknown-topic"], generation_id=2),
}
ASSIGNORS = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}


def test_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    assert "assign" in result.output and "bench" in result.output


@pytest.mark.parametrize("argv", [["groupcoord"], [sys.executable, "-m", "groupcoord"]])
def test_help_from_the_installed_entry_points(argv: list[str]) -> None:
    if argv[0] == "groupcoord":
        argv = [str(Path(sys.executable).with_name("groupcoord"))]
    done = subprocess.run([*argv, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Usage: groupcoord" in done.stdout
    assert "assign" in done.stdout and "bench" in done.stdout


@pytest.mark.parametrize("backend", ["rust", "python"])
@pytest.mark.parametrize("name", list(ASSIGNORS))
def test_assign_prints_what_the_assignor_decides(tmp_path: Path, name: str, backend: str) -> None:
    path = tmp_path / "group.json"
    path.write_text(json.dumps(GROUP))
    result = runner.invoke(app, ["assign", str(path), "--assignor", name, "--backend", backend])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    expected = ASSIGNORS[name](backend=backend).assign(  # type: ignore[arg-type]
        GROUP["topics"], GROUP_SUBSCRIPTIONS
    )
    assert out["assignor"] == name
    assert list(out["assignment"]) == list(GROUP["members"])  # input order
    assert out["assignment"] == {
        m: [[tp.topic, tp.partition] for tp in a.partitions] for m, a in expected.items()
    }


def test_assign_reads_stdin_and_defaults_to_range() -> None:
    group = {"topics": {"t": 3}, "members": {"a": {"topics": ["t"]}, "b": {"topics": ["t"]}}}
    result = runner.invoke(app, ["assign", "-"], input=json.dumps(group))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "assignor": "range",
        "assignment": {"a": [["t", 0], ["t", 1]], "b": [["t", 2]]},
    }


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"topics": {"t": 1}, "members": {', "not valid JSON"),
        ("[]", "must be an object"),
        ('{"members": {}}', 'missing "topics"'),
        ('{"topics": {}, "members": {}, "extra": 1}', "unknown key 'extra'"),
        ('{"topics": [], "members": {}}', '"topics" must be an object'),
        ('{"topics": {"t": -1}, "members": {}}', "topics.t: partition count"),
        ('{"topics": {"t": true}, "members": {}}', "topics.t: partition count"),
        ('{"topics": {"t": 2.5}, "members": {}}', "topics.t: partition count"),
        (
            '{"topics": {"t": 2147483648}, "members": {}}',
            "topics.t: partition count must be an int32 >= 0 (0 to 2147483647",
        ),
        (
            {
                "topics": {"t": 1},
                "members": {"m": {"topics": ["t"], "owned_partitions": [["t", 2**31]]}},
            },
            "members.m.owned_partitions[0]: expected [topic, partition] with partition an int32",
        ),
        ('{"topics": {"t": 1}, "members": []}', '"members" must be an object'),
        ('{"topics": {"t": 1}, "members": {"m": 1}}', "members.m: must be an object"),
        ('{"topics": {"t": 1}, "members": {"m": {}}}', 'members.m: missing "topics"'),
        ('{"topics": {"t": 1}, "members": {"m": {"topics": "t"}}}', "members.m.topics"),
        ('{"topics": {"t": 1}, "members": {"m": {"topics": [1]}}}', "members.m.topics"),
        (
            {"topics": {"t": 1}, "members": {"m": {"topics": ["t"], "owned_partitions": [["t"]]}}},
            "members.m.owned_partitions[0]",
        ),
        (
            '{"topics": {"t": 1}, "members": {"m": {"topics": ["t"], "owned_partitions": {}}}}',
            "members.m.owned_partitions",
        ),
        (
            {"topics": {"t": 1}, "members": {"m": {"topics": ["t"], "generation_id": 2**32}}},
            "members.m.generation_id",
        ),
        (
            '{"topics": {"t": 1}, "members": {"m": {"topics": ["t"], "group_instance_id": 7}}}',
            "members.m.group_instance_id",
        ),
        ('{"topics": {"t": 1}, "members": {"": {"topics": ["t"]}}}', "member ids"),
    ],
)
def test_assign_rejects_bad_input_with_exit_2(document: str | dict[str, Any], message: str) -> None:
    text = document if isinstance(document, str) else json.dumps(document)
    result = runner.invoke(app, ["assign", "-"], input=text)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_assign_reports_unreadable_files(tmp_path: Path) -> None:
    result = runner.invoke(app, ["assign", str(tmp_path / "missing.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe")
    result = runner.invoke(app, ["assign", str(tmp_path / "binary.json")])
    assert result.exit_code == 2
    assert "cannot read" in result.stderr


def test_assign_rejects_unknown_assignors() -> None:
    result = runner.invoke(app, ["assign", "-", "--assignor", "fair"], input="{}")
    assert result.exit_code == 2


# ----------------------------------------------------------------------------- bench


def test_bench_prints_a_markdown_table() -> None:
    result = runner.invoke(app, ["bench", "--sizes", "100x1k", "--no-peers", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "| scenario | phase | assignor | rust assign() | rust assign_encoded() | floor"
        " | rust ÷ floor |"
    )
    assert lines[1] == "|:--|:--|:--|--:|--:|--:|--:|"
    rows = [line for line in lines[2:] if line.startswith("| 100x1k |")]
    assert [r.split(" | ")[1:3] for r in rows] == [
        [phase, assignor] for phase in gb.PHASES for assignor in gb.ASSIGNORS
    ]
    assert "bench took" in result.stderr
    assert lines[-1] == (
        "Reproduce with: groupcoord bench --sizes 100x1k --repeat 1 --peer-limit 60 --no-peers"
    )


def test_bench_rejects_unknown_sizes() -> None:
    result = runner.invoke(app, ["bench", "--sizes", "100x1k,huge"])
    assert result.exit_code == 2
    assert "huge" in result.output


def test_resolve_sizes() -> None:
    scenarios, limit = gb.resolve_sizes("all")
    assert [s.name for s in scenarios][-1] == "2000x1M"
    assert limit == 60
    scenarios, limit = gb.resolve_sizes("quick")
    assert "2000x1M" not in [s.name for s in scenarios]
    assert limit < 60
    # listed sizes run small to large, whatever the order given
    scenarios, _ = gb.resolve_sizes("1000x100k, 100x1k")
    assert [s.name for s in scenarios] == ["100x1k", "1000x100k"]
    with pytest.raises(ValueError, match="unknown size"):
        gb.resolve_sizes("")


def test_scenarios_are_what_their_names_say() -> None:
    big = gb.SCENARIOS["2000x1M"]
    assert (big.members, big.topics, big.partitions) == (2000, 500, 1_000_000)
    uniform = gb.SCENARIOS["500x10k"].subscribed_topics()
    assert len(uniform) == 500
    assert all(len(t) == 10 for t in uniform.values())
    random_subs = gb.SCENARIOS["500x10k-random"].subscribed_topics()
    assert random_subs == gb.SCENARIOS["500x10k-random"].subscribed_topics()  # seeded
    assert len({tuple(t) for t in random_subs.values()}) > 1
    assert all(1 <= len(t) <= 10 for t in random_subs.values())


@pytest.mark.parametrize("assignor", list(gb.ASSIGNORS))
def test_leave_case_owns_the_previous_assignment(assignor: str) -> None:
    scenario = gb.Scenario("tiny", 5, 3, 4)
    fresh = gb.prepare_case(scenario, "fresh", assignor)
    leave = gb.prepare_case(scenario, "leave", assignor)
    assert len(fresh.subscriptions) == 5 and not fresh.previous
    assert len(leave.subscriptions) == 4
    before = gb.ASSIGNORS[assignor]().assign(fresh.partitions_per_topic, fresh.subscriptions)
    for member, sub in leave.subscriptions.items():
        assert list(sub.owned_partitions) == list(before[member].partitions)
        assert sub.generation_id == gb.PREVIOUS_GENERATION
    # both inputs describe the same group: the bytes path decides the same
    rust = gb.ASSIGNORS[assignor]()
    objects = rust.assign(leave.partitions_per_topic, leave.subscriptions)
    encoded = rust.assign_encoded(leave.partitions_per_topic, leave.encoded)
    from groupcoord.protocol import decode_assignment

    assert {m: set(decode_assignment(b).partitions) for m, b in encoded.items()} == {
        m: set(a.partitions) for m, a in objects.items()
    }


def test_run_benchmarks_on_a_tiny_group_measures_everything() -> None:
    tiny = [gb.Scenario("tiny", 6, 3, 4), gb.Scenario("tiny-random", 6, 3, 4, True)]
    rows = gb.run_benchmarks(tiny, repeat=1)
    assert len(rows) == 2 * len(gb.PHASES) * len(gb.ASSIGNORS)
    for row in rows:
        for implementation in (*gb.IMPLEMENTATIONS, gb.FLOOR):
            cell = row.cells[implementation]
            crashed = (
                implementation == gb.KAFKA_PYTHON
                and row.assignor == "roundrobin"
                and row.scenario == "tiny-random"
            )
            if crashed:
                # kafka-python's RoundRobin cannot handle non-uniform subscriptions
                assert (cell.status, cell.note) == ("crash", "KeyError")
            else:
                assert cell.timing is not None and len(cell.timing.runs) == 1
    table = gb.render_markdown(rows)
    assert "crash (KeyError)" in table
    assert table.count("\n| tiny") == len(rows)


def test_measure_repeats_until_the_budget_is_spent() -> None:
    calls: list[int] = []
    timing = gb.measure(lambda: calls.append(1), repeat=4, budget=1e9)
    assert len(timing.runs) == len(calls) == 4
    assert timing.min <= timing.median
    calls.clear()
    timing = gb.measure(lambda: calls.append(1), repeat=4, budget=0.0)  # one run spends it
    assert len(timing.runs) == len(calls) == 1
    with pytest.raises(ValueError):
        gb.measure(lambda: None, repeat=0)


def test_estimator_extrapolates_from_the_two_largest_sizes() -> None:
    def of_size(size: int, random_subscriptions: bool = False) -> gb.Scenario:
        return gb.Scenario(f"{size}", 1, 1, size, random_subscriptions)

    estimator = gb.Estimator()
    key = ("kafka-python", "sticky", "fresh")
    assert estimator.estimate(key, of_size(100)) is None
    estimator.record(key, of_size(10), 1.0)
    assert estimator.estimate(key, of_size(100)) == pytest.approx(10.0)  # linear from one
    estimator.record(key, of_size(100), 100.0)  # quadratic between the two
    assert estimator.estimate(key, of_size(1000)) == pytest.approx(10_000.0)
    estimator.record(key, of_size(1000), 100.0)  # flat: the exponent is clamped to 0.5
    assert estimator.estimate(key, of_size(10_000)) == pytest.approx(100.0 * 10**0.5)
    # random subscriptions: from the uniform series until their own has points
    assert estimator.estimate(key, of_size(1000, True)) == pytest.approx(100.0)
    estimator.record(key, of_size(1000, True), 7.0)
    assert estimator.estimate(key, of_size(1000, True)) == pytest.approx(7.0)
    assert estimator.estimate(key, of_size(1000)) == pytest.approx(100.0)  # apart


def test_peers_estimated_over_the_limit_are_skipped_and_shown() -> None:
    row = gb.Row("500x10k", "fresh", "sticky")
    row.cells[gb.KAFKA_PYTHON] = gb.Cell(status="skipped", note="~700 s")
    row.cells[gb.RUST_ASSIGN] = gb.Cell(gb.Timing((0.002, 0.004, 0.003)))
    row.cells[gb.FLOOR] = gb.Cell(gb.Timing((0.001,)))
    table = gb.render_markdown([row])
    cells = table.splitlines()[2].split(" | ")
    assert "skipped (~700 s)" in cells
    assert "2.00 / 3.00" in cells  # min / median in ms
    assert cells[-1] == "3.00x |"  # rust assign() ÷ floor


def test_deadline_interrupts_a_run() -> None:
    with pytest.raises(gb.RunTimeout), gb.deadline(0.05):
        while True:
            pass
    cell = gb._measure_cell(
        lambda: time.sleep(10), repeat=3, budget=1.0, limit=0.05, crash_ok=False
    )
    assert (cell.status, cell.note) == ("timeout", "> 0.05 s")
