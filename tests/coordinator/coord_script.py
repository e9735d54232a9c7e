"""A seeded random workload for the determinism test (not a test module).

``python coord_script.py SEED`` prints one line per response; the same seed must print the
same lines in any process, whatever PYTHONHASHSEED is.
"""

from __future__ import annotations

import random
import sys

from coord_harness import FakeMember, Harness


def run(seed: int, steps: int = 400) -> list[str]:
    rng = random.Random(seed)
    h = Harness({"group.initial.rebalance.delay.ms": 300, "group.min.session.timeout.ms": 1000})
    members: list[FakeMember] = []
    for i in range(6):
        static = rng.random() < 0.4
        members.append(
            h.member(
                f"c{i}",
                group_id=rng.choice(["g", "h"]),
                instance_id=f"i{i}" if static else None,
                join_version=rng.choice([5, 7, 9]) if static else rng.choice([3, 4, 7]),
                session_timeout_ms=rng.choice([3000, 10_000]),
                rebalance_timeout_ms=rng.choice([5000, 20_000]),
                topics=rng.choice([("t",), ("t", "u")]),
            )
        )
    for _ in range(steps):
        m = rng.choice(members)
        action = rng.random()
        if action < 0.25:
            corr = m.join()
            m.joined(corr)
        elif action < 0.4 and m.generation >= 0:
            m.synced(m.sync())
        elif action < 0.7 and m.member_id:
            m.heartbeat()
        elif action < 0.8:
            m.commit({("t", rng.randrange(4)): rng.randrange(1000)})
        elif action < 0.85 and m.member_id:
            m.leave()
            m.member_id, m.generation = "", -1
        else:
            h.advance(rng.choice([50, 500, 5000, 40_000]))
    h.advance(10**6)
    return [repr(r) for r in h.released]


if __name__ == "__main__":
    for line in run(int(sys.argv[1])):
        print(line)
