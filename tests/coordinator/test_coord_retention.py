"""Offsets retention (offsets.retention.minutes, KIP-211) and the expiry of idle groups,
on a virtual clock."""

from __future__ import annotations

from coord_harness import FAST, Harness, rebalance
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.config import ConfigError, CoordinatorConfig
from groupcoord.coordinator import GroupState, MemoryOffsetStore, SqliteOffsetStore, SyncShell
from groupcoord.types import TopicPartition

MINUTE = 60_000
#: 10 minutes of retention, checked every minute
CONFIG = {
    **FAST,
    "offsets.retention.minutes": 10,
    "offsets.retention.check.interval.ms": MINUTE,
}
RETENTION = 10 * MINUTE


def _simple_commit(h: Harness, group: str, offsets: dict[tuple[str, int], int], **kw) -> None:
    m = h.member("admin", group_id=group)
    resp = m.commit(offsets, generation_id_or_member_epoch=-1, member_id="", **kw)
    assert all(p.error is None for t in resp.topics for p in t.partitions)


def test_kafka_defaults_and_checks() -> None:
    c = CoordinatorConfig()
    assert (c.offsets_retention_minutes, c.offsets_retention_check_interval_ms) == (
        10_080,
        600_000,
    )
    assert c.offsets_retention_ms == 7 * 24 * 3600 * 1000
    for name in ("offsets.retention.minutes", "offsets.retention.check.interval.ms"):
        try:
            CoordinatorConfig.from_dict({name: 0})
        except ConfigError as e:
            assert name in str(e)
        else:
            raise AssertionError("0 accepted")


def test_simple_consumer_offsets_expire_after_their_commit_and_the_group_goes() -> None:
    h = Harness(CONFIG)
    _simple_commit(h, "s", {("t", 0): 1})
    h.advance(5 * MINUTE)
    _simple_commit(h, "s", {("t", 1): 2})  # committed 5 minutes later
    h.advance(5 * MINUTE + MINUTE)  # first offset past retention at the next check
    assert set(h.coord.committed_offsets("s")) == {TopicPartition("t", 1)}
    h.advance(5 * MINUTE)
    assert h.coord.committed_offsets("s") == {}
    assert h.coord.snapshot("s") is None  # empty and offset-less: deleted
    assert h.store.load().offsets == {} and "s" not in h.store.load().groups


def test_offsets_of_a_group_with_members_never_expire_until_it_is_empty() -> None:
    h = Harness(CONFIG)
    a = h.member("a", session_timeout_ms=10_000)
    rebalance(h, [a])
    a.commit({("t", 0): 3})
    for _ in range(720):  # an hour of heartbeats: the offsets stay
        h.advance(5_000)
        a.heartbeat()
    assert TopicPartition("t", 0) in h.coord.committed_offsets("g")
    a.leave()
    h.advance(FAST["group.initial.rebalance.delay.ms"])
    assert h.snapshot().state is GroupState.EMPTY
    empty_since = h.now
    h.advance(RETENTION - 2 * MINUTE)
    assert TopicPartition("t", 0) in h.coord.committed_offsets("g")
    h.advance(3 * MINUTE)
    assert h.coord.snapshot("g") is None
    assert h.now - empty_since >= RETENTION


def test_a_member_rejoining_in_time_keeps_the_offsets() -> None:
    h = Harness(CONFIG)
    a = h.member("a")
    rebalance(h, [a])
    a.commit({("t", 0): 3})
    a.leave()
    h.advance(RETENTION - MINUTE)
    b = h.member("b")
    rebalance(h, [b])
    for _ in range(3 * RETENTION // 5_000):  # Stable all along: nothing expires
        h.advance(5_000)
        b.heartbeat()
    assert TopicPartition("t", 0) in h.coord.committed_offsets("g")


def test_explicit_retention_of_old_offset_commits_expires_at_its_own_time() -> None:
    h = Harness(CONFIG)
    _simple_commit(h, "s", {("t", 0): 1}, version=2, retention_time_ms=2 * MINUTE)
    _simple_commit(h, "s", {("t", 1): 1})
    h.advance(3 * MINUTE)
    assert set(h.coord.committed_offsets("s")) == {TopicPartition("t", 1)}


def test_empty_group_without_offsets_is_removed_at_the_next_check() -> None:
    h = Harness(CONFIG)
    a = h.member("a")
    rebalance(h, [a])
    a.leave()
    h.advance(FAST["group.initial.rebalance.delay.ms"])
    assert h.snapshot().state is GroupState.EMPTY
    h.advance(MINUTE)
    assert h.coord.snapshot("g") is None


def test_failed_expiry_write_keeps_everything_and_retries() -> None:
    store = MemoryOffsetStore()
    h = Harness(CONFIG, store=store)
    _simple_commit(h, "s", {("t", 0): 1})
    store.fail_writes = True
    h.advance(RETENTION + MINUTE)
    assert TopicPartition("t", 0) in h.coord.committed_offsets("s")
    assert h.coord.group_state("s") is GroupState.EMPTY  # restored, not left Dead
    store.fail_writes = False
    h.advance(MINUTE)
    assert h.coord.snapshot("s") is None


def test_expired_offsets_stay_gone_after_a_restart(tmp_path) -> None:
    path = tmp_path / "offsets.db"
    store = SqliteOffsetStore(path)
    h = Harness(CONFIG, store=store)
    _simple_commit(h, "s", {("t", 0): 1})
    h.advance_to(5 * MINUTE)
    _simple_commit(h, "s", {("t", 1): 1})
    a = h.member("a")
    rebalance(h, [a])
    a.commit({("t", 0): 9})
    a.leave()
    h.advance(FAST["group.initial.rebalance.delay.ms"])
    h.advance_to(11 * MINUTE)  # s/t-0 expired, s/t-1 not yet; g's retention still runs
    assert set(h.coord.committed_offsets("s")) == {TopicPartition("t", 1)}
    assert set(h.coord.committed_offsets("g")) == {TopicPartition("t", 0)}
    store.close()
    # restart 2 minutes later, on the same file: g's retention counts from when it
    # became Empty (persisted), not from the restart
    again = SqliteOffsetStore(path)
    shell = SyncShell(again, CONFIG, now_ms=h.now + 2 * MINUTE)
    coord = shell.coordinator
    assert set(coord.committed_offsets("s")) == {TopicPartition("t", 1)}
    now = h.now + 2 * MINUTE
    while (d := coord.next_deadline()) is not None and d <= now + RETENTION:
        shell.tick(d)
    assert coord.snapshot("s") is None and coord.snapshot("g") is None
    assert again.load().offsets == {}
    again.close()


@settings(max_examples=60, deadline=None)
@given(
    commits=st.lists(
        st.tuples(st.integers(0, 30 * MINUTE), st.integers(0, 3)), min_size=1, max_size=8
    ),
    interval=st.sampled_from([1_000, MINUTE, 7 * MINUTE]),
    until=st.integers(0, 60 * MINUTE),
)
def test_simple_offsets_expire_exactly_at_the_first_check_after_retention(
    commits: list[tuple[int, int]], interval: int, until: int
) -> None:
    """Whatever the commit times, a simple consumer's offset is there until retention
    has passed since its last commit and gone from the first check after that."""
    config = {**CONFIG, "offsets.retention.check.interval.ms": interval}
    h = Harness(config)
    last: dict[int, int] = {}
    for at, partition in sorted(commits):
        h.advance_to(at)
        _simple_commit(h, "s", {("t", partition): at})
        last[partition] = h.now
    h.advance_to(max(h.now, until))
    now = h.now
    kept = {tp.partition for tp in h.coord.committed_offsets("s")}
    for partition, committed in last.items():
        first_check = -(-(committed + RETENTION) // interval) * interval
        assert (partition in kept) == (now < first_check), (partition, committed, now)
    # the last offset to expire takes the (member-less) group with it
    assert (h.coord.snapshot("s") is None) == (not kept)
