"""One classic group: its members, state and bookkeeping. No I/O, no clock, no deadlines.

The coordinator owns deadlines (through ``MemberExpiry``) and responses; a :class:`Group`
only keeps the facts Kafka's ``GroupMetadata`` keeps, and answers questions about them.
Iteration order is insertion order everywhere (dicts, never sets), so a coordinator fed the
same inputs produces the same outputs.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from groupcoord.coordinator.messages import JoinGroupResponseMember
from groupcoord.coordinator.offsets import GroupRecord, MemberRecord, OffsetAndMetadata
from groupcoord.coordinator.states import GroupState, check_transition
from groupcoord.types import TopicPartition

__all__ = ["Group", "Member", "Waiter"]


class Waiter(NamedTuple):
    """A request parked until the group can answer it (a JoinGroup or a SyncGroup)."""

    correlation: object
    version: int


class Member:
    """A member of a group (Kafka's ``MemberMetadata``)."""

    __slots__ = (
        "assignment",
        "client_host",
        "client_id",
        "group_instance_id",
        "is_new",
        "join_waiter",
        "member_id",
        "protocol_type",
        "protocols",
        "rebalance_timeout_ms",
        "session_timeout_ms",
        "sync_waiter",
    )

    def __init__(
        self,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: tuple[tuple[str, bytes], ...],
        assignment: bytes = b"",
    ) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = assignment
        #: True until the member's first join phase completes: such a member expires at
        #: its (long) new-member deadline even while it waits in the join phase.
        self.is_new = False
        self.join_waiter: Waiter | None = None
        self.sync_waiter: Waiter | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def protocol_names(self) -> Iterator[str]:
        return (name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(f"member {self.member_id!r} does not support protocol {protocol!r}")

    def matches(self, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Same protocols, same order, same metadata bytes (Kafka's ``matches``)."""
        return protocols == self.protocols

    def vote(self, candidates: Iterator[str] | set[str] | dict[str, None]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id!r} supports none of the candidate protocols")

    def to_record(self) -> MemberRecord:
        return MemberRecord(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=self.session_timeout_ms,
            protocols=self.protocols,
            assignment=self.assignment,
        )

    def __repr__(self) -> str:
        flags = "".join(
            f
            for f, on in (
                (" new", self.is_new),
                (" join", self.awaiting_join),
                (" sync", self.awaiting_sync),
            )
            if on
        )
        return f"Member({self.member_id!r}, instance={self.group_instance_id!r}{flags})"


class Group:
    """A classic group's state (Kafka's ``GroupMetadata``)."""

    __slots__ = (
        "generation_id",
        "group_id",
        "initial_delay",
        "leader_id",
        "members",
        "new_member_added",
        "num_awaiting_join",
        "offsets",
        "pending_members",
        "pending_sync",
        "previous_state",
        "protocol_name",
        "protocol_type",
        "state",
        "state_timestamp_ms",
        "static_members",
        "supported_protocols",
    )

    def __init__(self, group_id: str, now_ms: int) -> None:
        self.group_id = group_id
        self.state = GroupState.EMPTY
        self.previous_state: GroupState | None = None
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        #: group.instance.id -> member id of the static member holding it.
        self.static_members: dict[str, str] = {}
        #: KIP-394 member ids handed out with MEMBER_ID_REQUIRED, not yet joined.
        self.pending_members: dict[str, None] = {}
        #: Members of the current generation that have not sent SyncGroup (KAFKA-12890).
        self.pending_sync: dict[str, None] = {}
        self.num_awaiting_join = 0
        #: protocol name -> number of members supporting it.
        self.supported_protocols: dict[str, int] = {}
        #: Initial rebalance: a member was added since the delay was last (re)armed.
        self.new_member_added = False
        #: ``(delay_ms, remaining_ms)`` while the initial rebalance delay runs, else None.
        self.initial_delay: tuple[int, int] | None = None
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}

    # ---------------------------------------------------------------- state

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.group_id, self.state, target)
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def restore_state(
        self, state: GroupState, previous_state: GroupState | None, timestamp_ms: int
    ) -> None:
        """Undo a transition whose record never reached the disk (a delete that failed):
        outside the transition table on purpose, as Kafka's runtime reverts a failed write
        to the last committed state."""
        self.state = state
        self.previous_state = previous_state
        self.state_timestamp_ms = timestamp_ms

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    # ---------------------------------------------------------------- membership

    def add(self, member: Member) -> None:
        """Add ``member`` (its join waiter, if any, counts as awaiting join)."""
        if member.member_id in self.members:
            raise ValueError(f"member {member.member_id!r} is already in {self.group_id!r}")
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(
                    f"group.instance.id {member.group_instance_id!r} already has a member"
                )
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, 1)
        if member.awaiting_join:
            self.num_awaiting_join += 1
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        """Remove a member (or a pending member id); return the member removed, if any."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.pop(member_id, None)
        return member

    def set_join_waiter(self, member: Member, waiter: Waiter | None) -> Waiter | None:
        """Park (or with ``None``, release) the member's JoinGroup; return the one replaced."""
        old = member.join_waiter
        if old is None and waiter is not None:
            self.num_awaiting_join += 1
        elif old is not None and waiter is None:
            self.num_awaiting_join -= 1
        member.join_waiter = waiter
        return old

    def update_member(
        self,
        member: Member,
        protocols: tuple[tuple[str, bytes], ...],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: Waiter | None,
    ) -> Waiter | None:
        """New protocols and timeouts, and park its JoinGroup; return the waiter replaced."""
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        return self.set_join_waiter(member, waiter)

    def replace_static_member(self, group_instance_id: str, old_id: str, new_id: str) -> Member:
        """Give the static member holding ``group_instance_id`` the id ``new_id``.

        The caller answers the old id's parked requests first. A pending sync of the old id
        moves to the new id (Kafka leaves it under the old id, which makes the sync deadline
        remove a member that no longer exists and rebalance; the new id is the one that
        will sync).
        """
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[group_instance_id] = new_id
        if old_id in self.pending_sync:
            del self.pending_sync[old_id]
            self.pending_sync[new_id] = None
        return member

    def _count_protocols(self, member: Member, delta: int) -> None:
        counts = self.supported_protocols
        for name, _ in member.protocols:
            n = counts.get(name, 0) + delta
            if n:
                counts[name] = n
            else:
                counts.pop(name, None)

    # ---------------------------------------------------------------- queries

    @property
    def size(self) -> int:
        return len(self.members)

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_waiter is None]

    def rebalance_timeout_ms(self) -> int:
        """The group's rebalance timeout: the largest of its members' (0 when empty)."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def candidate_protocols(self) -> dict[str, None]:
        n = len(self.members)
        return {name: None for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """The protocol all members support with the most votes (each member votes for its
        most preferred candidate). Ties go to the first member's preference order."""
        if not self.members:
            raise ValueError(f"cannot select a protocol for empty group {self.group_id!r}")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = next(iter(self.members.values()))
        order = {name: i for i, name in enumerate(first.protocol_names())}
        return min(votes, key=lambda name: (-votes[name], order.get(name, len(order))))

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """Whether a member with this protocol type and protocols may join (Kafka's rule)."""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        n = len(self.members)
        counts = self.supported_protocols
        return protocol_type == self.protocol_type and any(counts.get(p, 0) == n for p in names)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False if none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)
        self.pending_sync.clear()

    def current_member_metadata(self) -> tuple[JoinGroupResponseMember, ...]:
        """Every member's metadata for the selected protocol (the leader's JoinGroup)."""
        protocol = self.protocol_name
        if protocol is None or self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise ValueError(f"group {self.group_id!r} has no member metadata in {self.state}")
        return tuple(
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(protocol),
            )
            for m in self.members.values()
        )

    # ---------------------------------------------------------------- persistence

    def to_record(self, as_state: GroupState | None = None) -> GroupRecord:
        """The group as persisted, in ``as_state`` (default: its state); only Empty and
        Stable groups are stored (the leader's assignment is stored as the Stable group
        it is about to become)."""
        state = self.state if as_state is None else as_state
        if state not in (GroupState.EMPTY, GroupState.STABLE):
            raise ValueError(f"group {self.group_id!r} is not persisted in state {state}")
        return GroupRecord(
            group_id=self.group_id,
            state=state.value,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            members=tuple(m.to_record() for m in self.members.values()),
            state_timestamp_ms=self.state_timestamp_ms,
        )

    @classmethod
    def from_record(cls, record: GroupRecord, now_ms: int) -> Group:
        group = cls(record.group_id, now_ms)
        group.generation_id = record.generation_id
        group.protocol_type = record.protocol_type
        group.protocol_name = record.protocol_name
        for r in record.members:
            group.add(
                Member(
                    r.member_id,
                    r.group_instance_id,
                    r.client_id,
                    r.client_host,
                    r.rebalance_timeout_ms,
                    r.session_timeout_ms,
                    record.protocol_type or "",
                    r.protocols,
                    r.assignment,
                )
            )
        if group.members:
            if record.leader_id in group.members:
                group.leader_id = record.leader_id
            group.state = GroupState.STABLE
        elif record.state_timestamp_ms >= 0:
            # when it became Empty: its offsets' retention counts from then (KIP-211)
            group.state_timestamp_ms = record.state_timestamp_ms
        # An Empty group may remember a protocol type; add() only sets it for members.
        group.protocol_type = record.protocol_type
        return group

    def __repr__(self) -> str:
        return (
            f"Group({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
            f"members={len(self.members)}, pending={len(self.pending_members)})"
        )
