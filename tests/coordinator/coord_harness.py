"""Test helper: fake members wired back to back to a GroupCoordinator on a virtual clock.

``Harness`` owns the coordinator (behind a :class:`SyncShell`, which persists every batch
of records at once) and the clock and records every response by correlation (asserting
that no request is answered twice). ``FakeMember`` speaks the classic protocol
the way a Java consumer does: join (adopting the id from MEMBER_ID_REQUIRED), sync (the
leader runs a real assignor on the members' subscriptions), heartbeat, commit, leave.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

from groupcoord import RangeAssignor, Subscription
from groupcoord.assignors import Assignor
from groupcoord.coordinator import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    SequentialMemberIds,
    SyncGroupRequest,
    SyncGroupResponse,
    SyncShell,
    TopicView,
)
from groupcoord.coordinator.messages import AnyRequest, AnyResponse
from groupcoord.errors import MemberIdRequiredError
from groupcoord.protocol import decode_assignment, encode_subscription

FAST = {"group.initial.rebalance.delay.ms": 100, "group.min.session.timeout.ms": 1000}


class Harness:
    def __init__(
        self,
        config: Mapping[str, object] | None = None,
        *,
        store: Any = None,
        now: int = 0,
        ids: Any = None,
        topics: TopicView | None = None,
    ) -> None:
        self.now = now
        self.shell = SyncShell(
            store,
            dict(FAST if config is None else config),
            member_id_factory=ids or SequentialMemberIds(),
            now_ms=now,
            topics=topics,
        )
        self.coord = self.shell.coordinator
        self.store = self.shell.store
        self._corr = itertools.count(1)
        self.responses: dict[object, AnyResponse] = {}
        self.requests: dict[object, AnyRequest] = {}
        self.released: list[AnyResponse] = []

    # ------------------------------------------------------------------ driving

    def correlation(self) -> int:
        return next(self._corr)

    def _record(self, out: list[AnyResponse]) -> list[AnyResponse]:
        for r in out:
            assert r.correlation not in self.responses, f"answered twice: {r}"
            assert r.correlation in self.requests, f"answer to no request: {r}"
            req = self.requests[r.correlation]
            assert r.version == req.version
            self.responses[r.correlation] = r
        self.released.extend(out)
        return out

    def send(self, request: AnyRequest) -> Any:
        """Hand ``request`` to the coordinator now; return its response if released now."""
        assert request.correlation not in self.requests
        self.requests[request.correlation] = request
        self._record(self.shell.handle(request, self.now))
        return self.responses.get(request.correlation)

    def advance(self, ms: int) -> list[AnyResponse]:
        """Move the clock by ``ms``, ticking at every deadline on the way."""
        return self.advance_to(self.now + ms)

    def advance_to(self, t: int) -> list[AnyResponse]:
        out: list[AnyResponse] = []
        while True:
            d = self.coord.next_deadline()
            if d is None or d > t:
                break
            self.now = max(self.now, d)
            out += self._record(self.shell.tick(self.now))
        self.now = max(self.now, t)
        out += self._record(self.shell.tick(self.now))
        return out

    def response(self, correlation: object) -> Any:
        return self.responses.get(correlation)

    def pending(self) -> list[object]:
        """Correlations of requests not answered yet."""
        return [c for c in self.requests if c not in self.responses]

    def snapshot(self, group_id: str = "g") -> Any:
        return self.coord.snapshot(group_id)

    def member(self, client_id: str, **kwargs: Any) -> FakeMember:
        return FakeMember(self, client_id, **kwargs)


class FakeMember:
    def __init__(
        self,
        harness: Harness,
        client_id: str,
        *,
        group_id: str = "g",
        instance_id: str | None = None,
        topics: Iterable[str] = ("t",),
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 30_000,
        join_version: int = 7,
        sync_version: int = 5,
        protocols: tuple[tuple[str, bytes], ...] | None = None,
        protocol_type: str = "consumer",
        assignor: Assignor | None = None,
    ) -> None:
        self.h = harness
        self.client_id = client_id
        self.group_id = group_id
        self.instance_id = instance_id
        self.topics = tuple(topics)
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.join_version = join_version
        self.sync_version = sync_version
        self.assignor = assignor or RangeAssignor()
        self.protocol_type = protocol_type
        self.protocols = protocols or (
            (self.assignor.name, encode_subscription(Subscription(self.topics))),
        )
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.protocol_name: str | None = None
        self.join_members: tuple[Any, ...] = ()
        self.assignment: bytes | None = None
        self.skip_assignment = False
        self.partitions_per_topic: dict[str, int] = {t: 4 for t in self.topics}

    @property
    def is_leader(self) -> bool:
        return self.member_id != "" and self.member_id == self.leader

    # ------------------------------------------------------------------ requests

    def join_request(self, **overrides: Any) -> JoinGroupRequest:
        fields: dict[str, Any] = {
            "version": self.join_version,
            "correlation": self.h.correlation(),
            "group_id": self.group_id,
            "member_id": self.member_id,
            "session_timeout_ms": self.session_timeout_ms,
            "protocol_type": self.protocol_type,
            "protocols": self.protocols,
            "client_id": self.client_id,
            "client_host": "/127.0.0.1",
        }
        if self.join_version >= 1:
            fields["rebalance_timeout_ms"] = self.rebalance_timeout_ms
        if self.join_version >= 5:
            fields["group_instance_id"] = self.instance_id
        fields.update(overrides)
        return JoinGroupRequest(**fields)

    def join(self, **overrides: Any) -> int:
        """Send JoinGroup; a MEMBER_ID_REQUIRED answer is followed by the rejoin with the
        new id. Returns the correlation of the join that counts; absorb() its response."""
        req = self.join_request(**overrides)
        resp = self.h.send(req)
        if isinstance(resp, JoinGroupResponse) and resp.error is MemberIdRequiredError:
            self.member_id = resp.member_id
            req = self.join_request(**overrides)
            resp = self.h.send(req)
        if resp is not None:
            self.absorb(resp)
        return req.correlation  # type: ignore[return-value]

    def absorb(self, resp: Any) -> None:
        """Update what this member knows from a response addressed to it."""
        if isinstance(resp, JoinGroupResponse):
            if resp.error is None:
                self.member_id = resp.member_id
                self.generation = resp.generation_id
                self.leader = resp.leader
                self.protocol_name = resp.protocol_name
                self.join_members = resp.members
                self.skip_assignment = resp.skip_assignment
        elif isinstance(resp, SyncGroupResponse) and resp.error is None:
            self.assignment = resp.assignment

    def joined(self, correlation: int) -> JoinGroupResponse | None:
        resp = self.h.response(correlation)
        if resp is not None:
            self.absorb(resp)
        return resp  # type: ignore[no-any-return]

    def compute_assignment(self) -> tuple[tuple[str, bytes], ...]:
        if self.protocol_type != "consumer":
            return tuple((m.member_id, m.member_id.encode()) for m in self.join_members)
        subs = {m.member_id: m.metadata for m in self.join_members}
        out = self.assignor.assign_encoded(self.partitions_per_topic, subs)
        return tuple(out.items())

    def sync_request(self, **overrides: Any) -> SyncGroupRequest:
        fields: dict[str, Any] = {
            "version": self.sync_version,
            "correlation": self.h.correlation(),
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
        }
        if self.sync_version >= 3:
            fields["group_instance_id"] = self.instance_id
        if self.sync_version >= 5:
            fields["protocol_type"] = self.protocol_type
            fields["protocol_name"] = self.protocol_name
        if self.is_leader and not self.skip_assignment:
            fields["assignments"] = self.compute_assignment()
        fields.update(overrides)
        return SyncGroupRequest(**fields)

    def sync(self, **overrides: Any) -> int:
        req = self.sync_request(**overrides)
        resp = self.h.send(req)
        if resp is not None:
            self.absorb(resp)
        return req.correlation  # type: ignore[return-value]

    def synced(self, correlation: int) -> SyncGroupResponse | None:
        resp = self.h.response(correlation)
        if resp is not None:
            self.absorb(resp)
        return resp  # type: ignore[no-any-return]

    def heartbeat(self, version: int = 4, **overrides: Any) -> Any:
        fields: dict[str, Any] = {
            "version": version,
            "correlation": self.h.correlation(),
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
        }
        if version >= 3:
            fields["group_instance_id"] = self.instance_id
        fields.update(overrides)
        return self.h.send(HeartbeatRequest(**fields))

    def leave(self, version: int = 5, reason: str | None = None) -> Any:
        if version >= 3:
            req = LeaveGroupRequest(
                version=version,
                correlation=self.h.correlation(),
                group_id=self.group_id,
                members=(
                    MemberIdentity(
                        member_id=self.member_id,
                        group_instance_id=self.instance_id,
                        reason=reason if version >= 5 else None,
                    ),
                ),
            )
        else:
            req = LeaveGroupRequest(
                version=version,
                correlation=self.h.correlation(),
                group_id=self.group_id,
                member_id=self.member_id,
            )
        return self.h.send(req)

    def commit(self, offsets: Mapping[tuple[str, int], int], version: int = 8, **kw: Any) -> Any:
        metadata = kw.pop("metadata", None)
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_metadata=metadata,
                )
            )
        fields: dict[str, Any] = {
            "version": version,
            "correlation": self.h.correlation(),
            "group_id": self.group_id,
            "topics": tuple(
                OffsetCommitRequestTopic(name=t, partitions=tuple(p)) for t, p in by_topic.items()
            ),
        }
        if version >= 1:
            fields["generation_id_or_member_epoch"] = self.generation
            fields["member_id"] = self.member_id
        if version >= 7:
            fields["group_instance_id"] = self.instance_id
        fields.update(kw)
        return self.h.send(OffsetCommitRequest(**fields))

    def fetch(self, partitions: Mapping[str, Iterable[int]] | None, version: int = 7) -> Any:
        topics = (
            None
            if partitions is None
            else tuple(
                OffsetFetchRequestTopic(name=t, partition_indexes=tuple(p))
                for t, p in partitions.items()
            )
        )
        return self.h.send(
            OffsetFetchRequest(
                version=version,
                correlation=self.h.correlation(),
                group_id=self.group_id,
                topics=topics,
            )
        )

    def partitions(self) -> list[tuple[str, int]]:
        if not self.assignment:
            return []
        return [tuple(tp) for tp in decode_assignment(self.assignment).partitions]  # type: ignore[misc]


def rebalance(h: Harness, members: list[FakeMember], max_wait: int = 120_000) -> None:
    """Every member (re)joins, the join phase completes, everyone syncs; asserts success."""
    corrs = {m.client_id: m.join() for m in members}
    waited = 0
    while any(h.response(c) is None for c in corrs.values()) and waited < max_wait:
        h.advance(1000)
        waited += 1000
    for m in members:
        resp = m.joined(corrs[m.client_id])
        assert resp is not None and resp.error is None, resp
    followers = [m for m in members if not m.is_leader]
    leaders = [m for m in members if m.is_leader]
    assert len(leaders) == 1, [m.leader for m in members]
    sync_corrs = [m.sync() for m in followers] + [leaders[0].sync()]
    for m, c in zip(followers + leaders, sync_corrs, strict=True):
        resp = m.synced(c)
        assert resp is not None and resp.error is None, resp
