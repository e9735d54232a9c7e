"""The membership grid's crash finding (README, "Sweeps"): after 5 of 10 members crash,
cooperative-sticky keeps more partitions unavailable than eager range when the survivors'
batches are long, because they take the orphaned partitions only at their next poll(),
and the two come out even when a batch is one record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groupcoord.sim import Scenario, run

BASE = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "membership-base.toml"


def _crash(assignor: str, max_poll_records: int) -> dict[str, Any]:
    scenario = Scenario.from_toml(BASE).replace(
        **{
            "group.members": 10,
            "group.assignors": [assignor],
            "consumer.max_poll_records": max_poll_records,
            "timeline": [{"at_s": 30, "action": "crash", "count": 5}],
        }
    )
    result = run(scenario, seed=1)
    moved = sum(r["partitions_moved"] for r in result.rebalances.to_pylist())
    return {**result.summary, "moved": moved}


def test_long_batches_cooperative_moves_less_but_leaves_more_unavailable() -> None:
    eager, cooperative = _crash("range", 10), _crash("cooperative-sticky", 10)
    assert eager["rebalances"] == cooperative["rebalances"] == 2
    assert eager["members_expired_session"] == cooperative["members_expired_session"] == 5
    assert cooperative["moved"] < eager["moved"]
    assert (
        cooperative["unavailable_partition_seconds"] > 1.2 * eager["unavailable_partition_seconds"]
    )


def test_one_record_per_poll_cooperative_and_eager_come_out_even() -> None:
    eager, cooperative = _crash("range", 1), _crash("cooperative-sticky", 1)
    ratio = cooperative["unavailable_partition_seconds"] / eager["unavailable_partition_seconds"]
    assert 0.9 < ratio < 1.1
