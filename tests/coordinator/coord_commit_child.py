"""Child process of the SIGKILL durability test (not a test module).

Usage: ``python coord_commit_child.py DB_PATH SEED FIRST_OFFSET``

Commits offsets through GroupCoordinator + SqliteOffsetStore (a SyncShell) forever: a static member
joins group "members" (so group metadata is stored too) and commits with its generation,
and simple consumers commit with generation -1 to groups "s0".."s2". As soon as
the shell returns a successful OffsetCommit response, the commit is printed
(``group topic partition offset``) and stdout is flushed. The parent kills the process at a
random moment and checks that every printed commit survived.
"""

from __future__ import annotations

import random
import sys

from groupcoord.coordinator import (
    JoinGroupRequest,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    SequentialMemberIds,
    SqliteOffsetStore,
    SyncGroupRequest,
    SyncShell,
)


def main() -> None:
    path, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    store = SqliteOffsetStore(path)
    coord = SyncShell(
        store,
        {"group.initial.rebalance.delay.ms": 0},
        member_id_factory=SequentialMemberIds(start=seed * 1_000_000 + 1),
        now_ms=0,
    )
    now = 0
    # A static member in a Stable group (its metadata is stored on SyncGroup).
    join = JoinGroupRequest(
        version=9,
        correlation="join",
        group_id="members",
        group_instance_id="static-1",
        session_timeout_ms=1_800_000,
        rebalance_timeout_ms=60_000,
        protocol_type="consumer",
        protocols=(("range", b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"),),
        client_id="child",
    )
    out = coord.handle(join, now)
    if not out:
        now = coord.next_deadline() or now
        out = coord.tick(now)
    resp = out[0]
    member_id, generation = resp.member_id, resp.generation_id  # type: ignore[union-attr]
    if resp.error is None and resp.leader == member_id:  # type: ignore[union-attr]
        coord.handle(
            SyncGroupRequest(
                version=5,
                correlation="sync",
                group_id="members",
                generation_id=generation,
                member_id=member_id,
                group_instance_id="static-1",
                protocol_type="consumer",
                protocol_name="range",
                assignments=((member_id, b"assignment"),),
            ),
            now,
        )
    print(f"member {member_id} {generation}", flush=True)
    offset = int(sys.argv[3])  # offsets grow across restarts
    while True:
        offset += 1
        now += 1
        static = rng.random() < 0.3
        group = "members" if static else f"s{rng.randrange(3)}"
        topic = f"t{rng.randrange(2)}"
        partition = rng.randrange(4)
        req = OffsetCommitRequest(
            version=8,
            correlation=offset,
            group_id=group,
            generation_id_or_member_epoch=generation if static else -1,
            member_id=member_id if static else "",
            group_instance_id="static-1" if static else None,
            topics=(
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=partition, committed_offset=offset
                        ),
                    ),
                ),
            ),
        )
        for r in coord.handle(req, now):
            parts = r.topics  # type: ignore[union-attr]
            if parts and parts[0].partitions[0].error is None:
                sys.stdout.write(f"{group} {topic} {partition} {offset}\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
