"""KIP-848 consumer groups persisted: records written for what changes (nothing for a
steady heartbeat), both stores round-trip them, a restarted coordinator goes on with the
same epochs and assignments, and replaying the records of any heartbeat history gives
the live coordinator's group."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import test_consumer_group_stateful as base
from consumer_harness import CONFIG, SESSION_MS, ConsumerHarness, topic_id
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from groupcoord.coordinator import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberTombstone,
    GroupCoordinator,
    GroupRecord,
    GroupTombstone,
    MemoryOffsetStore,
    OffsetAndMetadata,
    OffsetsRecord,
    OffsetStore,
    SqliteOffsetStore,
    StoredState,
)
from groupcoord.coordinator.consumer_group import MemberState
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.errors import CoordinatorNotAvailableError
from groupcoord.types import TopicPartition


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        mem = MemoryOffsetStore()
        return lambda: mem
    return lambda: SqliteOffsetStore(tmp_path / "coord.db")


def _state(coord: GroupCoordinator, group_id: str = "g") -> dict[str, Any] | None:
    """Everything of a consumer group that decides what its members are told next."""
    snap = coord.consumer_group_snapshot(group_id)
    if snap is None:
        return None
    group = coord._rb.consumer_groups[group_id]
    return {
        "state": snap.state,
        "group_epoch": snap.group_epoch,
        "assignment_epoch": snap.assignment_epoch,
        "members": sorted(snap.members, key=lambda m: m.member_id),
        "owners": dict(group.partition_epochs),
        "static": dict(group.static_members),
        "subscription": dict(group.subscription_metadata),
        "regexes": dict(group.resolved_regexes),
        "offsets": dict(group.offsets),
    }


def _reloaded(store: OffsetStore, h: ConsumerHarness) -> GroupCoordinator:
    coord = GroupCoordinator(CONFIG, stored=store.load(), now_ms=h.now)
    coord.update_topics(
        [TopicMetadata(name=n, topic_id=topic_id(n), partitions=p) for n, p in h.topics.items()],
        h.now,
    )
    return coord


def _converge(h: ConsumerHarness, members: dict[str, int], owned: dict[str, dict]) -> None:
    """Heartbeat every member, acknowledging what it is told, until nothing changes."""
    for _ in range(10):
        changed = False
        for mid in sorted(members):
            r = h.heartbeat(member_id=mid, member_epoch=members[mid], owned=owned[mid])
            assert r.error is None, r
            names = h.names(r)
            if r.member_epoch != members[mid] or (names is not None and names != owned[mid]):
                changed = True
            members[mid] = r.member_epoch
            if names is not None:
                owned[mid] = names
        if not changed:
            return
    raise AssertionError("the group did not converge")


def _stable_group(h: ConsumerHarness, ids=("a", "b", "c")):
    members: dict[str, int] = {}
    owned: dict[str, dict] = {}
    for mid in ids:
        r = h.join(mid)
        assert r.error is None
        members[mid] = r.member_epoch
        owned[mid] = h.names(r) or {}
    _converge(h, members, owned)
    return members, owned


def test_members_keep_epochs_and_assignments_across_a_restart(store_factory) -> None:
    h = ConsumerHarness({"orders": 6}, store=store_factory())
    members, owned = _stable_group(h)
    before = _state(h.coord)
    assert before is not None and before["state"].value == "Stable"
    # the coordinator was down a while
    h2 = ConsumerHarness({"orders": 6}, store=store_factory(), now=h.now + 10_000)
    assert _state(h2.coord) == before
    for mid, epoch in members.items():
        r = h2.heartbeat(member_id=mid, member_epoch=epoch, owned=owned[mid])
        assert r.error is None and r.member_epoch == epoch
        assert h2.names(r) in (None, owned[mid])
    assert _state(h2.coord) == before  # no rebalance


def test_sessions_restart_at_load_and_expire_from_there(store_factory) -> None:
    h = ConsumerHarness({"orders": 2}, store=store_factory())
    _stable_group(h, ("a",))
    h2 = ConsumerHarness({"orders": 2}, store=store_factory(), now=h.now + 100_000)
    h2.shell.tick(h2.now)
    assert h2.coord.consumer_group_snapshot("g").member("a") is not None  # type: ignore[union-attr]
    h2.advance(SESSION_MS + 1)
    snap = h2.coord.consumer_group_snapshot("g")
    assert snap is not None and snap.members == ()
    # the fenced member's tombstone and the new epoch are stored
    stored = h2.shell.store.load().consumer_groups["g"]
    assert stored.members == {}
    assert stored.record is not None and stored.record.group_epoch == snap.group_epoch


def test_a_steady_heartbeat_writes_nothing() -> None:
    store = MemoryOffsetStore()
    h = ConsumerHarness({"orders": 4}, store=store)
    members, _ = _stable_group(h)
    writes = store.writes
    for _ in range(3):
        for mid, epoch in members.items():
            assert h.heartbeat(member_id=mid, member_epoch=epoch).error is None
            h.now += 100
    assert store.writes == writes


def test_a_join_is_answered_once_stored_and_a_failed_write_is_rewritten() -> None:
    store = MemoryOffsetStore()
    h = ConsumerHarness({"orders": 4}, store=store)
    store.fail_writes = True
    r = h.join("a")
    assert r.error is CoordinatorNotAvailableError
    assert "g" not in store.load().consumer_groups
    store.fail_writes = False
    # the member retries; memory was ahead, so everything is written now
    r = h.join("a")
    assert r.error is None
    assert _state(_reloaded(store, h)) == _state(h.coord)


def test_deleted_consumer_group_stays_deleted(store_factory) -> None:
    from groupcoord.coordinator import DeleteGroupsRequest

    h = ConsumerHarness({"orders": 2}, store=store_factory())
    r = h.join("a")
    h.heartbeat(member_id="a", member_epoch=-1)
    (resp,) = h.shell.handle(
        DeleteGroupsRequest(version=2, correlation=99, groups_names=("g",)), h.now
    )
    assert resp.results[0].error is None  # type: ignore[union-attr]
    assert r.error is None
    assert "g" not in h.shell.store.load().consumer_groups
    assert _reloaded(h.shell.store, h).consumer_group_ids() == []


def _member(gid: str, mid: str, **kw: Any) -> ConsumerMemberRecord:
    return ConsumerMemberRecord(group_id=gid, member_id=mid, **kw)


def test_every_record_type_round_trips(store_factory) -> None:
    store = store_factory()
    group = ConsumerGroupRecord(
        group_id="cg",
        group_epoch=7,
        assignment_epoch=6,
        subscription_metadata=(("orders", 3), ("pay", 1)),
        resolved_regexes=(("pa.*", ("pay",)),),
    )
    full = _member(
        "cg",
        "m1",
        instance_id="i1",
        rack_id="r1",
        client_id="c",
        client_host="/10.0.0.1",
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("orders",),
        subscribed_topic_regex="pa.*",
        server_assignor="range",
        member_epoch=6,
        previous_member_epoch=5,
        state=MemberState.UNREVOKED_PARTITIONS.value,
        assigned=(("orders", (0, 2)),),
        pending_revocation=(("orders", (1,)),),
        target=(("orders", (0, 2)), ("pay", (0,))),
    )
    gone = _member("cg", "m2", member_epoch=6)
    offsets = {TopicPartition("orders", 0): OffsetAndMetadata(5, 1, "m", 10, -1)}
    classic = GroupRecord("old", "Empty", 3, "consumer", None, None, (), 5)
    store.write(
        [
            classic,
            OffsetsRecord("cg", offsets),
            group,
            full,
            gone,
            _member("cg", "m3", member_epoch=1),
            ConsumerMemberTombstone("cg", "m2"),
            _member("doomed", "x"),
            GroupTombstone("doomed"),
        ]
    )
    loaded = store.load()
    assert loaded.groups == {"old": classic}
    cg = loaded.consumer_groups["cg"]
    assert cg.record == group
    assert list(cg.members) == ["m1", "m3"] and cg.members["m1"] == full
    assert loaded.offsets == {"cg": offsets}
    assert "doomed" not in loaded.consumer_groups
    # a group id has one type: each kind of group record replaces the other
    store.write([ConsumerGroupRecord(group_id="old", group_epoch=1, assignment_epoch=1)])
    loaded = store.load()
    assert "old" not in loaded.groups and loaded.consumer_groups["old"].record is not None
    store.write([classic])
    loaded = store.load()
    assert loaded.groups == {"old": classic} and "old" not in loaded.consumer_groups


_V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE groups (group_id TEXT PRIMARY KEY, state TEXT NOT NULL,
    generation_id INTEGER NOT NULL, protocol_type TEXT, protocol_name TEXT, leader_id TEXT,
    state_timestamp_ms INTEGER NOT NULL);
CREATE TABLE members (group_id TEXT NOT NULL, member_id TEXT NOT NULL,
    position INTEGER NOT NULL, group_instance_id TEXT, client_id TEXT NOT NULL,
    client_host TEXT NOT NULL, rebalance_timeout_ms INTEGER NOT NULL,
    session_timeout_ms INTEGER NOT NULL, protocols BLOB NOT NULL, assignment BLOB NOT NULL,
    PRIMARY KEY (group_id, member_id));
CREATE TABLE offsets (group_id TEXT NOT NULL, topic TEXT NOT NULL,
    partition INTEGER NOT NULL, committed_offset INTEGER NOT NULL,
    leader_epoch INTEGER NOT NULL, metadata TEXT NOT NULL,
    commit_timestamp_ms INTEGER NOT NULL, expire_timestamp_ms INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition));
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO groups VALUES ('g', 'Empty', 4, 'consumer', NULL, NULL, 123);
INSERT INTO offsets VALUES ('g', 't', 0, 42, -1, '', 100, -1);
"""


def test_a_version_1_data_dir_opens_and_is_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(_V1_SCHEMA)
    conn.commit()
    conn.close()
    with SqliteOffsetStore(path) as store:
        loaded = store.load()
        assert loaded.groups["g"].generation_id == 4
        assert loaded.offsets["g"][TopicPartition("t", 0)].committed_offset == 42
        assert loaded.consumer_groups == {}
        store.write([ConsumerGroupRecord(group_id="cg", group_epoch=1, assignment_epoch=1)])
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == ("2",)
    conn.close()
    with SqliteOffsetStore(path) as store:  # and opens again as version 2
        assert set(store.load().consumer_groups) == {"cg"}


def test_a_consumer_group_replacing_an_empty_classic_group_replaces_its_record() -> None:
    store = MemoryOffsetStore()
    store.write([GroupRecord("g", "Empty", 2, "consumer", None, None, (), 0)])
    h = ConsumerHarness({"orders": 2}, store=store)
    assert h.join("a").error is None
    loaded = store.load()
    assert "g" not in loaded.groups and "a" in loaded.consumer_groups["g"].members


class ReplayedConsumerGroupMachine(base.ConsumerGroupMachine):
    """The stateful machine's random heartbeat histories (joins, acknowledgements late or
    at once, leaves, crashes, session and revocation timeouts, partition count changes),
    with a store: after every step a coordinator built from the store has the live
    group."""

    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryOffsetStore()
        self.h = ConsumerHarness(base.TOPICS, store=self.store)
        self.h.shell.add_member_listener(lambda e: self.removed.append(e.member_id))

    @rule(topic=st.sampled_from(sorted(base.TOPICS)), more=st.integers(min_value=1, max_value=2))
    def add_partitions(self, topic: str, more: int) -> None:
        topics = dict(self.h.topics)
        topics[topic] += more
        self.h.set_topics(topics)

    @invariant()
    def the_store_replays_to_the_live_group(self) -> None:
        assert self.h.coord.unpersisted_batches == 0
        assert _state(_reloaded(self.store, self.h)) == _state(self.h.coord)


ReplayedConsumerGroupMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestReplayedConsumerGroupMachine = ReplayedConsumerGroupMachine.TestCase


def test_stored_state_is_empty_by_default() -> None:
    assert StoredState().consumer_groups == {}
