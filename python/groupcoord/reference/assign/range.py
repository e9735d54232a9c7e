"""RangeAssignor: per topic, contiguous ranges over the members subscribed to it.

With racks (KIP-881) it is Java's ``RangeAssignor.assignPartitions`` step for step, as
``rust/src/assign/range.rs``: rack-local partitions first within each member's per-topic
quota (co-partitioned topics together), then the usual ranges fill what is left.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.rack import NO_RACK, Racks


def kafka_member_order(model: GroupModel) -> list[int]:
    """Member indexes in Java's ``MemberInfo`` order.

    Members with a group.instance.id come first, ordered by it; the others follow
    by member id. Member id breaks ties between equal instance ids (which a real
    coordinator never lets happen) so the order stays total.
    """
    return sorted(
        range(model.num_members),
        key=lambda m: (
            (0, model.instance_ids[m], model.member_ids[m])
            if model.instance_ids[m] is not None
            else (1, "", model.member_ids[m])
        ),
    )


def assign_range(model: GroupModel) -> list[list[int]]:
    if model.racks is not None:
        plan = _rack_aware(model, model.racks)
        if plan is not None:
            return plan
    result: list[list[int]] = [[] for _ in range(model.num_members)]
    subscribers = model.subscribers()
    order = kafka_member_order(model)
    rank = {m: r for r, m in enumerate(order)}
    for t, members in enumerate(subscribers):
        if not members:
            continue
        members = sorted(members, key=rank.__getitem__)
        first, count = model.offsets[t], model.offsets[t + 1] - model.offsets[t]
        quota, extra = divmod(count, len(members))
        for i, m in enumerate(members):
            start = first + i * quota + min(i, extra)
            length = quota + (1 if i < extra else 0)
            result[m].extend(range(start, start + length))
    for partitions in result:
        partitions.sort()
    return result


class _TopicState:
    """Java's ``TopicAssignmentState``: one topic's subscribers (in Java's member order)
    and how much of their quota each has used."""

    __slots__ = (
        "assigned",
        "consumers",
        "extra_left",
        "first",
        "left",
        "min_quota",
        "topic",
        "unassigned",
        "worth_racks",
    )

    def __init__(self, topic: int, consumers: list[int], first: int, count: int, worth: bool):
        self.topic = topic
        self.consumers = consumers
        self.first = first
        self.unassigned = [True] * count
        self.left = count
        self.assigned = [0] * len(consumers)
        self.min_quota, self.extra_left = divmod(count, len(consumers))
        self.worth_racks = worth

    def max_assignable(self, i: int) -> int:
        return max(0, self.min_quota + (1 if self.extra_left > 0 else 0) - self.assigned[i])

    def give(self, plan: list[list[int]], i: int, partitions: list[int]) -> None:
        for p in partitions:
            self.unassigned[p - self.first] = False
        self.left -= len(partitions)
        self.assigned[i] += len(partitions)
        if self.assigned[i] > self.min_quota:
            self.extra_left -= 1
        plan[self.consumers[i]].extend(partitions)

    def assign_ranges(self, plan: list[list[int]], may_take: Callable[[int, int], bool]) -> None:
        """Java's ``assignRanges``: each member in turn takes the first unassigned
        partitions ``may_take`` allows, up to what its quota still admits."""
        for i, m in enumerate(self.consumers):
            if self.left == 0:
                break
            limit = self.max_assignable(i)
            take: list[int] = []
            for k, free in enumerate(self.unassigned):
                if len(take) == limit:
                    break
                p = self.first + k
                if free and may_take(m, p):
                    take.append(p)
            if take:
                self.give(plan, i, take)


def _rack_aware(model: GroupModel, racks: Racks) -> list[list[int]] | None:
    order = kafka_member_order(model)
    rank = {m: r for r, m in enumerate(order)}
    states: list[_TopicState] = []
    for t, consumers in enumerate(model.subscribers()):
        partitions = model.partitions_of(t)
        if not consumers or not partitions:
            continue
        consumers = sorted(consumers, key=rank.__getitem__)
        worth = racks.worth_using(consumers, partitions)
        states.append(_TopicState(t, consumers, partitions.start, len(partitions), worth))
    if not any(s.worth_racks for s in states):
        return None
    plan: list[list[int]] = [[] for _ in range(model.num_members)]

    def local(m: int, p: int) -> bool:
        return not racks.mismatch(m, p)

    # Java's assignWithRackMatching groups topics by subscribers, then by the size of their
    # partition-rack table (the partition count when a subscriber has a rack, else 0).
    keys: list[tuple[list[int], int, int, int]] = []
    for i, s in enumerate(states):
        racked = any(racks.member_rack[m] != NO_RACK for m in s.consumers)
        keys.append((s.consumers, len(s.unassigned) if racked else 0, s.topic, i))
    keys.sort()
    start = 0
    while start < len(keys):
        end = start
        while end < len(keys) and keys[end][:2] == keys[start][:2]:
            end += 1
        group = [k[3] for k in keys[start:end]]
        if len(group) > 1:
            _co_partitioned(states, group, keys[start][1], plan, local)
        elif states[group[0]].worth_racks:
            states[group[0]].assign_ranges(plan, local)
        start = end
    for state in states:
        state.assign_ranges(plan, lambda m, p: True)
    for assigned in plan:
        assigned.sort()
    return plan


def _co_partitioned(
    states: list[_TopicState],
    group: list[int],
    num_partitions: int,
    plan: list[list[int]],
    local: Callable[[int, int], bool],
) -> None:
    """Java's ``assignCoPartitionedWithRackMatching``: partition ``p`` of every topic of the
    group goes to the first member (in order) local to all of them with quota left."""
    consumers = states[group[0]].consumers
    remaining = list(range(len(consumers)))
    for p in range(num_partitions):
        at = next(
            (
                at
                for at, i in enumerate(remaining)
                if all(
                    local(consumers[i], states[s].first + p) and states[s].max_assignable(i) > 0
                    for s in group
                )
            ),
            None,
        )
        if at is None:
            continue
        i = remaining[at]
        for s in group:
            states[s].give(plan, i, [states[s].first + p])
        if all(states[s].max_assignable(i) == 0 for s in group):
            del remaining[at]
            if not remaining:
                break
