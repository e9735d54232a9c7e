"""Grid files (no Spark): parsing, expansion, stable run ids, and errors that name the key
before any run starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.pipeline.grid import Grid, GridError, axis_kind, column_value, run_id
from groupcoord.pipeline.session import PipelineError

BASE = """\
duration_s = 60
seed = 1
[group]
members = 3
topics = { events = 6 }
[consumer]
session_timeout_ms = 10_000
heartbeat_interval_ms = 3_000
"""


def grid_file(tmp_path: Path, body: str, base: str = BASE) -> Path:
    (tmp_path / "scenarios").mkdir(exist_ok=True)
    (tmp_path / "scenarios" / "base.toml").write_text(base)
    path = tmp_path / "grid.toml"
    path.write_text('scenario = "scenarios/base.toml"\n' + body)
    return path


def test_expands_the_product_times_the_seeds(tmp_path: Path) -> None:
    grid = Grid.from_toml(
        grid_file(
            tmp_path,
            'seeds = [1, 2, 3]\n[axes]\n"consumer.max_poll_records" = [50, 500]\n'
            '"consumer.heartbeat_thread" = [true, false]\n',
        )
    )
    runs = grid.runs()
    assert grid.size == len(runs) == 12
    assert len({r.run_id for r in runs}) == 12
    assert runs[0].overrides == {"consumer.max_poll_records": 50, "consumer.heartbeat_thread": True}
    assert [r.seed for r in runs[:3]] == [1, 2, 3]
    assert grid.scenario_path == (tmp_path / "scenarios" / "base.toml").resolve()


def test_run_ids_are_stable_and_independent_of_key_order(tmp_path: Path) -> None:
    a = run_id({"consumer.max_poll_records": 50, "group.static": True}, 1)
    b = run_id({"group.static": True, "consumer.max_poll_records": 50}, 1)
    assert a == b == run_id({"consumer.max_poll_records": 50, "group.static": True}, 1)
    assert a != run_id({"consumer.max_poll_records": 50, "group.static": True}, 2)
    assert a.startswith("r") and len(a) == 17
    # the same run in a bigger grid has the same id (what resume relies on)
    small = Grid.from_toml(grid_file(tmp_path, '[axes]\n"consumer.max_poll_records" = [50]\n'))
    big = Grid.from_toml(grid_file(tmp_path, '[axes]\n"consumer.max_poll_records" = [50, 9]\n'))
    assert small.runs()[0].run_id in {r.run_id for r in big.runs()}


def test_defaults_no_axes_and_seed_count(tmp_path: Path) -> None:
    grid = Grid.from_toml(grid_file(tmp_path, ""))
    assert grid.seeds == (1,)  # the scenario's own seed
    assert [r.overrides for r in grid.runs()] == [{}]
    assert Grid.from_toml(grid_file(tmp_path, "seeds = 4\n")).seeds == (1, 2, 3, 4)


def test_axis_kinds_and_column_values() -> None:
    assert axis_kind((1, 2)) == "int"
    assert axis_kind((1, 2.5)) == "float"
    assert axis_kind((True, False)) == "bool"
    assert axis_kind(("a", "b")) == "string"
    assert axis_kind((["range"], ["cooperative-sticky"])) == "json"
    assert axis_kind((1, "a")) == "json"
    assert axis_kind((True, 1)) == "json"
    assert column_value("float", 1) == 1.0
    assert column_value("json", {"dist": "constant", "value": 5}) == (
        '{"dist":"constant","value":5}'
    )
    assert column_value("json", ["range"]) == '["range"]'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[axes]\n"consumer.max_pol_records" = [1]\n', "consumer.max_pol_records"),
        ('[axes]\n"consumer.max_poll_records" = [0]\n', "consumer.max_poll_records must be"),
        ('[axes]\n"consumer.max_poll_records" = []\n', "non-empty list"),
        ('[axes]\n"consumer.max_poll_records" = 5\n', "non-empty list"),
        ('[axes]\n"consumer.max_poll_records" = [5, 5]\n', "twice"),
        ('[axes]\n"nosection.key" = [5]\n', "nosection.key"),
        ('[axes]\n"seed" = [1, 2]\n', '"seeds"'),
        ('[axes]\n"error" = [1]\n', "taken"),
        ("seeds = []\n", "seeds"),
        ('seeds = [1, "2"]\n', "seeds[1]"),
        ("seeds = [1, 1]\n", "twice"),
        ("seeds = 0\n", "seeds"),
        ("colour = 1\n", "unknown key 'colour'"),
        ("axes = 3\n", "[axes] must be a table"),
        # each value is fine alone, the combination is not: named with both keys
        (
            '[axes]\n"consumer.session_timeout_ms" = [10000, 6000]\n'
            '"consumer.heartbeat_interval_ms" = [3000, 8000]\n',
            "combination consumer.session_timeout_ms = 6000, consumer.heartbeat_interval_ms",
        ),
    ],
)
def test_errors_name_the_key(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(GridError) as info:
        Grid.from_toml(grid_file(tmp_path, body))
    assert message in str(info.value)
    assert str(tmp_path / "grid.toml") in str(info.value)
    assert isinstance(info.value, PipelineError)  # the CLI shows it as is


def test_missing_or_bad_files(tmp_path: Path) -> None:
    with pytest.raises(GridError, match="cannot read grid file"):
        Grid.from_toml(tmp_path / "nope.toml")
    (tmp_path / "g.toml").write_text("scenario = [")
    with pytest.raises(GridError, match="not valid TOML"):
        Grid.from_toml(tmp_path / "g.toml")
    (tmp_path / "g.toml").write_text("seeds = [1]\n")
    with pytest.raises(GridError, match='"scenario" is required'):
        Grid.from_toml(tmp_path / "g.toml")
    (tmp_path / "g.toml").write_text('scenario = "missing.toml"\n')
    with pytest.raises(GridError, match=r"scenario 'missing\.toml': cannot read scenario file"):
        Grid.from_toml(tmp_path / "g.toml")
    with pytest.raises(GridError, match="duration_s is required"):
        Grid.from_toml(grid_file(tmp_path, "", base="[group]\nmembers = 1\n"))


def test_shipped_grids_parse() -> None:
    sweeps = Path(__file__).resolve().parents[2] / "examples" / "sweeps"
    files = sorted(sweeps.glob("*.toml"))
    grids = [f for f in files if "axes" in f.read_text()]
    assert len(grids) >= 2
    for path in grids:
        grid = Grid.from_toml(path)
        assert grid.size >= 2, path
