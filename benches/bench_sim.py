"""pytest-benchmark: the rebalance simulator (``groupcoord.sim``), heartbeats per wall second.

Every row simulates one group of N members on one topic of N partitions (one partition per
member), from the first JoinGroup to the end of the virtual time, with every heartbeat
reaching the real ``GroupCoordinator`` at its own time (a quiet member's through the
heartbeat lane: see ``groupcoord.sim.engine``). It reports
the wall time of ``groupcoord.sim.run`` and the simulated member-heartbeats per wall
second (``summary["simulated_heartbeats"] / wall``). Settings are the scenario defaults
(heartbeat.interval.ms 3000, session.timeout.ms 45000, cooperative-sticky, heartbeat
thread on, auto-commit every 5 s) except as the row says:

- ``default``: the default workload too: 10 records/s per partition, 1 ms per record
  (every poll and every batch is still simulated, two steps per record, though most of
  them run lazily rather than as queued events: this row measures the application loop as
  much as the protocol);
- ``coordination``: ``records_per_second_per_partition = 0`` (no records: the group
  protocol alone).

Sizes: ``GROUPCOORD_BENCH_SCALE=full`` (or ``all``, or ``--benchmark-only``) runs the
rows of ``benches/results/sim.md``: 1,000 members over one virtual hour (both workloads),
and the scaling rows, 100 / 1,000 / 10,000 members (10,000 over a shorter virtual time,
in the row's name). Otherwise a smoke size (20 members, 60 virtual seconds) so that
``--benchmark-disable`` runs take a second or two.

Also a script: ``python benches/bench_sim.py ROW...`` runs the named rows (``ROW`` as
``coordination-1000-3600s``: workload, members, virtual seconds) once each and prints one
line per row, for the three-run tables of ``benches/results/sim.md``.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, NamedTuple

import pytest

from groupcoord.sim import Scenario, run


class Row(NamedTuple):
    workload: str  # "default" or "coordination"
    members: int
    duration_s: int

    @property
    def name(self) -> str:
        return f"{self.workload}-{self.members}-{self.duration_s}s"

    def scenario(self) -> Scenario:
        doc: dict[str, Any] = {
            "duration_s": self.duration_s,
            "group": {"members": self.members, "topics": {"t": self.members}},
        }
        if self.workload == "coordination":
            doc["workload"] = {"records_per_second_per_partition": 0}
        elif self.workload != "default":
            raise ValueError(f"unknown workload {self.workload!r}")
        return Scenario.from_dict(doc)

    @classmethod
    def parse(cls, name: str) -> Row:
        workload, members, duration = name.split("-")
        return cls(workload, int(members), int(duration.removesuffix("s")))


FULL_ROWS = [
    Row("default", 1000, 3600),
    Row("coordination", 1000, 3600),
    Row("coordination", 100, 3600),
    Row("coordination", 10_000, 300),
    Row("default", 100, 3600),
    Row("default", 10_000, 60),
]
SMOKE_ROWS = [Row("default", 20, 60), Row("coordination", 20, 60)]


def _full() -> bool:
    scale = os.environ.get("GROUPCOORD_BENCH_SCALE", "").lower()
    if scale:
        return scale in ("full", "all")
    return "--benchmark-only" in sys.argv


class Measured(NamedTuple):
    row: Row
    wall_s: float
    cpu_s: float
    heartbeats: int
    records: int
    rebalances: int

    @property
    def per_s(self) -> float:
        return self.heartbeats / self.wall_s

    def line(self) -> str:
        return (
            f"{self.row.name}: {self.heartbeats:,} heartbeats in {self.wall_s:.2f} s wall "
            f"({self.cpu_s:.2f} s CPU): {self.per_s:,.0f} simulated heartbeats/s; "
            f"{self.records:,} records processed, {self.rebalances} rebalances"
        )


def measure(row: Row) -> Measured:
    scenario = row.scenario()
    wall, cpu = time.perf_counter(), time.process_time()
    result = run(scenario, seed=1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = result.summary
    heartbeats = summary["simulated_heartbeats"]
    assert isinstance(heartbeats, int) and heartbeats > 0
    assert summary["members_running"] == row.members
    return Measured(
        row,
        wall,
        cpu,
        heartbeats,
        int(summary["records_processed"]),
        int(summary["rebalances"]),
    )


@pytest.mark.parametrize("row", FULL_ROWS if _full() else SMOKE_ROWS, ids=lambda r: r.name)
def test_bench_sim(benchmark: Any, row: Row) -> None:
    measured: list[Measured] = []
    benchmark.pedantic(lambda: measured.append(measure(row)), rounds=1, iterations=1)
    m = measured[-1]
    # one rebalance (the first join); then every member heartbeats every 3 s
    assert m.rebalances >= 1
    assert m.heartbeats >= row.members * (row.duration_s - 10) // 3
    if row.workload == "coordination":
        assert m.records == 0
    else:
        assert m.records > 0
    benchmark.extra_info.update(
        members=row.members,
        virtual_s=row.duration_s,
        workload=row.workload,
        heartbeats=m.heartbeats,
        heartbeats_per_wall_s=round(m.per_s),
        wall_s=round(m.wall_s, 3),
    )
    print(f"\n{m.line()}")


if __name__ == "__main__":
    for arg in sys.argv[1:] or [r.name for r in SMOKE_ROWS]:
        print(measure(Row.parse(arg)).line(), flush=True)
