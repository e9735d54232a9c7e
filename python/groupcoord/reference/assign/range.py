"""RangeAssignor: per topic, contiguous ranges over the members subscribed to it."""

from __future__ import annotations

from groupcoord.reference.assign.model import GroupModel


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
