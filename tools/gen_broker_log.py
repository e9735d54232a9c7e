# ruff: noqa: E501  (log line templates are as long as the lines Kafka writes)
"""Write a realistic Apache Kafka broker ``server.log`` of any size (for benches/bench_analyze.py).

    python tools/gen_broker_log.py OUT.log --mb 1024 [--groups 2000] [--seed 1] [--style 4]

The lines are those a broker writes with the packaged layout ``[%d] %p %m (%c)%n``: about
one in eight is a group-coordinator line (the 4.x texts by default, ``--style 3`` for the
3.x Scala coordinator's), in coherent rebalance cycles per group (a member joins, crashes
or leaves, "Preparing to rebalance", "Stabilized group", "Assignment received"), and the
rest is the usual traffic of a busy broker (log segment rolls, fetch sessions, ISR changes,
the config dump, an occasional stack trace). Times advance ~5 ms per line from
2026-01-01. Deterministic for a seed. Prints the number of lines and of "Stabilized" lines.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import uuid
from pathlib import Path

FILLER = (
    "INFO [LocalLog partition=orders-{p}, dir=/var/lib/kafka/data] Rolled new log segment at "
    "offset {n} in {k} ms. (org.apache.kafka.storage.internals.log.LocalLog)",
    "INFO [ProducerStateManager partition=orders-{p}] Wrote producer snapshot at offset {n} "
    "with 0 producer ids in {k} ms. (org.apache.kafka.storage.internals.log.ProducerStateManager)",
    "INFO [UnifiedLog partition=events-{p}, dir=/var/lib/kafka/data] Deleting segment "
    "LogSegment(baseOffset={n}, size=1073741{k}, lastModifiedTime=1767225600000, "
    "largestRecordTimestamp=1767225599000) due to log retention time 604800000ms breach based "
    "on the largest record timestamp in the segment (org.apache.kafka.storage.internals.log.UnifiedLog)",
    "INFO [Partition events-{p} broker=1] Shrinking ISR from 1,2,3 to 1,3. Leader: (highWatermark: "
    "{n}, endOffset: {n}). Out of sync replicas: (brokerId: 2, endOffset: {n}, lastCaughtUpTimeMs: "
    "1767225600{k}). (kafka.cluster.Partition)",
    "INFO [SnapshotGenerator id=1] Creating new KRaft snapshot file snapshot {n}-{k} because we "
    "have replayed at least 20000 bytes. (org.apache.kafka.image.publisher.SnapshotGenerator)",
    "WARN [ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error in response for fetch "
    "request (type=FetchRequest, replicaId=1, maxWait=500, minBytes=1, maxBytes=10485760, "
    "fetchData={{events-{p}=(fetchOffset={n}, logStartOffset=0, maxBytes=1048576)}}) "
    "(kafka.server.ReplicaFetcherThread)",
    "INFO [GroupCoordinator id=1] Loading group metadata for partition __consumer_offsets-{p} "
    "took {k} ms. (org.apache.kafka.coordinator.common.runtime.CoordinatorRuntime)",
    "INFO Sent auto-creation request for Set(orders-{p}) to the active controller. "
    "(kafka.server.DefaultAutoTopicCreationManager)",
)
STACK = (
    "ERROR [ReplicaFetcher replicaId=1, leaderId=3, fetcherId=1] Error for partition events-{p} "
    "at offset {n} (kafka.server.ReplicaFetcherThread)\n"
    "org.apache.kafka.common.errors.NotLeaderOrFollowerException: For requests intended only "
    "for the leader, this error indicates that the broker is not the current leader.\n"
    "\tat org.apache.kafka.common.requests.FetchResponse.error(FetchResponse.java:100)\n"
    "\tat kafka.server.AbstractFetcherThread.processFetchRequest(AbstractFetcherThread.scala:300)\n"
    "\t... 3 more"
)


class GroupSim:
    """One group's coordinator lines, one rebalance cycle at a time."""

    def __init__(self, rng: random.Random, name: str, partition: int, style: int) -> None:
        self.rng = rng
        self.name = name
        self.partition = partition
        self.style = style
        self.generation = 0
        self.members: list[str] = []

    def _prefix(self) -> str:
        if self.style == 3:
            return "[GroupCoordinator 1]: "
        return f"[GroupCoordinator id=1 topic=__consumer_offsets partition={self.partition}] "

    def _logger(self) -> str:
        if self.style == 3:
            return "(kafka.coordinator.group.GroupCoordinator)"
        return "(org.apache.kafka.coordinator.group.GroupMetadataManager)"

    def _member(self) -> str:
        return f"consumer-{self.name}-{self.rng.randint(1, 99)}-{uuid.UUID(int=self.rng.getrandbits(128))}"

    def cycle(self) -> list[str]:
        """The lines of one rebalance: its trigger, Preparing, Stabilized, Assignment."""
        p, lg = self._prefix(), self._logger()
        g, old = self.name, self.generation
        lines: list[str] = []
        roll = self.rng.random()
        st = f" (__consumer_offsets-{self.partition})" if self.style == 3 else ""
        dot = "" if self.style == 3 else "."
        if not self.members or roll < 0.5:
            member = self._member()
            state = "Stable" if self.members else "Empty"
            lines.append(
                f"INFO {p}Dynamic member with unknown member id joins group {g} in {state} state. "
                f"Created a new member id {member} and request the member to rejoin with this id. {lg}"
            )
            self.members.append(member)
            reason = f"Adding new member {member} with group instance id None; client reason: not provided"
        elif roll < 0.8:
            member = self.members.pop(self.rng.randrange(len(self.members)))
            lines.append(
                f"INFO {p}Member {member} in group {g} has failed, removing it from the group{dot} {lg}"
            )
            reason = f"removing member {member} on heartbeat expiration{dot}"
        else:
            member = self.members.pop(self.rng.randrange(len(self.members)))
            why = (
                "consumer poll timeout has expired."
                if roll > 0.95
                else "the consumer is being closed"
            )
            if self.style == 3:
                lines.append(
                    f"INFO {p}Member MemberMetadata(memberId={member}, groupInstanceId=None, "
                    f"clientId=c, clientHost=/10.1.2.3, sessionTimeoutMs=45000, "
                    f"rebalanceTimeoutMs=300000, supportedProtocols=List(range)) has left group {g} "
                    f"through explicit `LeaveGroup`; client reason: {why} {lg}"
                )
            else:
                lines.append(
                    f"INFO {p}[Group {g}] Member {member} has left group through explicit "
                    f"`LeaveGroup` request; client reason: {why} {lg}"
                )
            reason = f"Removing member {member} on LeaveGroup; client reason: {why}"
        lines.append(
            f"INFO {p}Preparing to rebalance group {g} in state PreparingRebalance with old "
            f"generation {old}{st} (reason: {reason}){dot} {lg}"
        )
        self.generation += 1
        if self.members:
            lines.append(
                f"INFO {p}Stabilized group {g} generation {self.generation}{st} with "
                f"{len(self.members)} members{dot} {lg}"
            )
            lines.append(
                f"INFO {p}Assignment received from leader {self.members[0]} for group {g} for "
                f"generation {self.generation}. The group has {len(self.members)} members, 0 of "
                f"which are static. {lg}"
            )
        else:
            lines.append(
                f"INFO {p}Group {g} with generation {self.generation} is now empty{st}{dot} {lg}"
            )
        return lines


def generate(
    path: Path, mb: float, groups: int = 2000, seed: int = 1, style: int = 4
) -> tuple[int, int]:
    """Write about ``mb`` MB to ``path``; returns (lines, Stabilized lines)."""
    rng = random.Random(seed)
    sims = [GroupSim(rng, f"app-{i:05d}", i % 50, style) for i in range(groups)]
    target = int(mb * 1024 * 1024)
    written = lines = stabilized = 0
    t = dt.datetime(2026, 1, 1)
    step = dt.timedelta(milliseconds=5)
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        batch: list[str] = []
        while written < target:
            batch.clear()
            for _ in range(1000):
                t += step
                stamp = t.strftime("[%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}] "
                if rng.random() < 0.035:
                    cycle = rng.choice(sims).cycle()
                    stabilized += sum(1 for line in cycle if " Stabilized group " in line)
                    for line in cycle:
                        batch.append(stamp + line)
                elif rng.random() < 0.002:
                    batch.append(stamp + STACK.format(p=rng.randrange(64), n=rng.randrange(10**9)))
                else:
                    template = FILLER[rng.randrange(len(FILLER))]
                    batch.append(
                        stamp
                        + template.format(
                            p=rng.randrange(64), n=rng.randrange(10**9), k=rng.randrange(999)
                        )
                    )
            text = "\n".join(batch) + "\n"
            out.write(text)
            written += len(text.encode())
            lines += text.count("\n")
    return lines, stabilized


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=10)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--style", type=int, choices=(3, 4), default=4)
    args = parser.parse_args()
    lines, stabilized = generate(args.out, args.mb, args.groups, args.seed, args.style)
    print(f"wrote {args.out}: {lines} lines, {stabilized} 'Stabilized group' lines")


if __name__ == "__main__":
    main()
