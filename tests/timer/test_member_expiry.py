"""Behaviour of MemberExpiry and Expired, on the Rust table and the pure-Python reference."""

from __future__ import annotations

import pickle
from array import array
from collections.abc import Callable
from typing import Any

import pytest

import groupcoord
from groupcoord import JOIN, SESSION, SYNC, Expired
from groupcoord.reference import expiry as ref

IMPLS = [
    pytest.param(groupcoord.MemberExpiry, id="rust"),
    pytest.param(ref.MemberExpiry, id="reference"),
]

Table = Any  # either implementation; they share the API


@pytest.fixture(params=IMPLS)
def make(request: pytest.FixtureRequest) -> Callable[..., Table]:
    cls: Callable[..., Table] = request.param
    return cls


def test_kind_constants() -> None:
    assert (SESSION, JOIN, SYNC) == ("session", "join", "sync")
    assert (ref.SESSION, ref.JOIN, ref.SYNC) == (SESSION, JOIN, SYNC)


def test_kinds_are_independent_and_ties_break_by_group_member_kind(
    make: Callable[..., Table],
) -> None:
    t = make()
    t.heartbeat("g2", "a", 0, 100)
    t.expect_sync("g1", "b", 100)
    t.expect_join("g1", "b", 100)
    t.heartbeat("g1", "b", 0, 100)
    t.expect_join("g1", "a", 50)
    assert len(t) == 5
    assert (t.member_count, t.group_count) == (3, 2)
    assert t.next_deadline() == 50
    assert t.expire(100) == [
        ("g1", "a", JOIN, 50),
        ("g1", "b", SESSION, 100),
        ("g1", "b", JOIN, 100),
        ("g1", "b", SYNC, 100),
        ("g2", "a", SESSION, 100),
    ]
    assert len(t) == 0
    assert (t.member_count, t.group_count) == (0, 0)
    assert t.next_deadline() is None


def test_expired_session_leaves_other_kinds_pending(make: Callable[..., Table]) -> None:
    t = make()
    t.heartbeat("g", "m", 0, 10)
    t.expect_sync("g", "m", 30)
    assert t.expire(20) == [("g", "m", SESSION, 10)]
    assert ("g", "m") in t
    assert t.deadline("g", "m", SESSION) is None
    assert t.deadline("g", "m", SYNC) == 30
    t.heartbeat("g", "m", 20, 10)  # the member is back
    assert t.expire(30) == [("g", "m", SESSION, 30), ("g", "m", SYNC, 30)]


def test_ids_order_by_code_point_including_non_ascii_and_surrogates(
    make: Callable[..., Table],
) -> None:
    ids = ["b", "a", "", "é", "\U0001f600", "\udc80", "ab", "\uffff"]
    t = make()
    for m in ids:
        t.heartbeat("group", m, 0, 5)
    t.expect_join("\udcff", "x", 5)
    got = t.expire(5)
    assert [e.member for e in got] == [*sorted(ids), "x"]
    assert got[-1].group == "\udcff"


def test_heartbeat_reschedules_earlier_and_later(make: Callable[..., Table]) -> None:
    t = make()
    t.heartbeat("g", "m", 0, 45_000)
    t.heartbeat("g", "m", 10, 10)
    assert t.deadline("g", "m", SESSION) == 20
    t.heartbeat("g", "m", 3_000, 45_000)
    assert t.expire(47_999) == []
    assert t.expire(48_000) == [("g", "m", SESSION, 48_000)]


def test_clear(make: Callable[..., Table]) -> None:
    t = make()
    t.heartbeat("g", "m", 0, 10)
    t.expect_join("g", "m", 20)
    t.expect_sync("g", "m", 30)
    assert t.clear("g", "m", SESSION) is True
    assert t.clear("g", "m", SESSION) is False
    assert t.deadline("g", "m", JOIN) == 20
    assert t.clear("g", "m") is True
    assert ("g", "m") not in t
    assert t.clear("g", "m") is False
    assert t.clear("nope", "m", JOIN) is False
    assert (len(t), t.member_count, t.group_count) == (0, 0, 0)
    assert t.expire(100) == []


def test_remove_group(make: Callable[..., Table]) -> None:
    t = make()
    t.heartbeat_many("g", ["a", "b", "c"], 0, 10)
    t.expect_join("g", "a", 5)
    t.heartbeat("h", "a", 0, 10)
    assert t.remove_group("g") == 3
    assert t.remove_group("g") == 0
    assert (len(t), t.member_count, t.group_count) == (1, 1, 1)
    assert t.expire(100) == [("h", "a", SESSION, 10)]
    # The group can come back after removal.
    t.heartbeat("g", "a", 100, 10)
    assert t.expire(110) == [("g", "a", SESSION, 110)]


def test_churn_keeps_counts_at_live_members(make: Callable[..., Table]) -> None:
    t = make()
    now = 0
    for round_ in range(300):
        group = f"group-{round_}"
        t.heartbeat_many(group, [f"m{round_}-{i}" for i in range(5)], now, 1_000)
        if round_ % 2:
            t.remove_group(group)
        else:
            now += 1_000
            assert len(t.expire(now)) == 5
        assert (len(t), t.member_count, t.group_count) == (0, 0, 0)


@pytest.mark.parametrize(
    "shape",
    ["one-group", "group-list", "group-tuple", "timeout-list", "timeout-array", "generator"],
)
def test_heartbeat_many_is_heartbeat_in_order(make: Callable[..., Table], shape: str) -> None:
    members = ["m3", "m1", "m2", "m1"]  # m1 twice: the last heartbeat wins
    groups = ["g", "h", "g", "h"]
    timeouts = [10, 20, 30, 40]
    one, many = make(), make()
    if shape == "one-group":
        for m in members:
            one.heartbeat("g", m, 5, 10)
        many.heartbeat_many("g", members, 5, 10)
    elif shape in ("group-list", "group-tuple"):
        for g, m in zip(groups, members, strict=True):
            one.heartbeat(g, m, 5, 10)
        gs = groups if shape == "group-list" else tuple(groups)
        many.heartbeat_many(gs, tuple(members), 5, 10)
    elif shape in ("timeout-list", "timeout-array"):
        for g, m, to in zip(groups, members, timeouts, strict=True):
            one.heartbeat(g, m, 5, to)
        ts = timeouts if shape == "timeout-list" else array("q", timeouts)
        many.heartbeat_many(groups, members, 5, ts)
    else:
        for g, m in zip(groups, members, strict=True):
            one.heartbeat(g, m, 5, 10)
        many.heartbeat_many((g for g in groups), (m for m in members), 5, 10)
    assert len(one) == len(many)
    assert one.expire(100) == many.expire(100)


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [
        (lambda t: t.heartbeat(None, "m", 0, 1), TypeError, "group must be a str, not NoneType"),
        (lambda t: t.heartbeat("g", 5, 0, 1), TypeError, "member must be a str, not int"),
        (lambda t: t.heartbeat("g", "m", 0.5, 1), TypeError, "now_ms must be an int, not float"),
        (lambda t: t.heartbeat("g", "m", 0, None), TypeError, "session_timeout_ms must be an int"),
        (lambda t: t.heartbeat("g", "m", 0, -1), ValueError, "session_timeout_ms must be >= 0"),
        (lambda t: t.heartbeat("g", "m", 2**63 - 1, 1), ValueError, "overflows"),
        (lambda t: t.expect_join("g", "m", None), TypeError, "deadline_ms must be an int"),
        (lambda t: t.expect_sync("g", "m", 2**63), ValueError, "deadline_ms must fit"),
        (lambda t: t.clear("g", "m", "SESSION"), ValueError, "kind must be one of"),
        (lambda t: t.clear("g", "m", 0), TypeError, "kind must be one of"),
        (lambda t: t.deadline("g", "m", None), TypeError, "kind must be one of"),
        (lambda t: t.remove_group(b"g"), TypeError, "group must be a str, not bytes"),
        (lambda t: t.expire(None), TypeError, "now_ms must be an int"),
        (lambda t: t.expire(-1), ValueError, "time went backwards"),
        (lambda t: ("g",) in t, TypeError, r"expected a \(group, member\) tuple"),
        (lambda t: t.heartbeat_many("g", "m", 0, 1), TypeError, "members must be a sequence"),
        (lambda t: t.heartbeat_many("g", ["a", 1], 0, 1), TypeError, r"members\[1\] must be a str"),
        (lambda t: t.heartbeat_many(["g"], ["a", "b"], 0, 1), ValueError, "groups has 1 elements"),
        (lambda t: t.heartbeat_many(["g", None], ["a", "b"], 0, 1), TypeError, r"groups\[1\]"),
        (lambda t: t.heartbeat_many("g", ["a"], 0, [1, 2]), ValueError, "has 2 elements"),
        (lambda t: t.heartbeat_many("g", ["a", "b"], 0, [1, -1]), ValueError, r"\[1\]: .*>= 0"),
        (lambda t: t.heartbeat_many("g", ["a"], None, 1), TypeError, "now_ms must be an int"),
    ],
)
def test_bad_input_is_refused_clearly_and_changes_nothing(
    make: Callable[..., Table], call: Callable[[Table], object], exc: type[Exception], message: str
) -> None:
    t = make(0)
    t.heartbeat("g", "keep", 0, 1_000)
    with pytest.raises(exc, match=message):
        call(t)
    assert len(t) == 1
    assert t.deadline("g", "keep", SESSION) == 1_000
    assert t.now_ms == 0


def test_repr(make: Callable[..., Table]) -> None:
    t = make(3)
    t.heartbeat("g", "m", 0, 1)
    assert repr(t) == "MemberExpiry(now_ms=3, groups=1, members=1, deadlines=1)"


# --- Expired ------------------------------------------------------------------------------


def test_expired_is_a_frozen_tuple_like_record() -> None:
    e = Expired("g", "m", JOIN, 7)
    assert (e.group, e.member, e.kind, e.deadline_ms) == ("g", "m", "join", 7)
    assert tuple(e) == ("g", "m", "join", 7)
    g, m, k, d = e
    assert (g, m, k, d) == ("g", "m", "join", 7)
    assert len(e) == 4
    assert e[0] == "g"
    assert e[-1] == 7
    assert e[1:3] == ("m", "join")
    with pytest.raises(IndexError):
        e[4]
    with pytest.raises(AttributeError):
        e.group = "x"  # type: ignore[misc]
    assert repr(e) == "Expired(group='g', member='m', kind='join', deadline_ms=7)"
    assert pickle.loads(pickle.dumps(e)) == e
    match e:
        case Expired(group, member, kind, deadline_ms):
            assert (group, member, kind, deadline_ms) == ("g", "m", "join", 7)


def test_expired_equality_ordering_and_hash_follow_the_tuple() -> None:
    e = Expired("g", "m", SESSION, 7)
    r = ref.Expired("g", "m", SESSION, 7)
    assert e == r
    assert r == e
    assert e == ("g", "m", "session", 7)
    assert ("g", "m", "session", 7) == e  # noqa: SIM300 (the reflected __eq__ is the point)
    assert e != Expired("g", "m", SESSION, 8)
    assert e != "something else"
    assert hash(e) == hash(r) == hash(("g", "m", "session", 7))
    assert len({e, r, Expired("g", "m", SESSION, 7)}) == 1
    assert e < Expired("g", "n", SESSION, 0)
    assert Expired("a", "m", SESSION, 9) < e
    assert e <= r
    assert e > ("g", "a", "x", 0)
    with pytest.raises(TypeError):
        _ = e < 5  # type: ignore[operator]


def test_expired_constructor_validates() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        Expired("g", "m", "nope", 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="group must be a str"):
        Expired(1, "m", SESSION, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="deadline_ms must be an int"):
        Expired("g", "m", SESSION, 1.5)  # type: ignore[arg-type]


def test_rust_expire_returns_expired_instances_sharing_group_strings() -> None:
    t = groupcoord.MemberExpiry()
    t.heartbeat_many("a-group", ["x", "y"], 0, 1)
    out = t.expire(1)
    assert all(type(e) is Expired for e in out)
    assert out[0].group is out[1].group  # one str object per run of a group


# --- handles ------------------------------------------------------------------------------


def test_handle_is_stable_while_live_and_heartbeats_its_own_member(
    make: Callable[..., Table],
) -> None:
    t = make()
    t.heartbeat("g", "a", 0, 100)
    t.expect_join("g", "b", 50)  # any pending deadline makes a member tracked
    a, b = t.handle("g", "a"), t.handle("g", "b")
    assert a != b
    assert t.handle("g", "a") == a
    assert all(type(h) is int and 0 <= h < 2**63 for h in (a, b))
    t.heartbeat_handle(a, 10, 100)
    t.heartbeat_handle(b, 20, 5)
    assert t.deadline("g", "a", SESSION) == 110
    assert (t.deadline("g", "b", SESSION), t.deadline("g", "b", JOIN)) == (25, 50)
    assert t.expire(200) == [
        ("g", "b", SESSION, 25),
        ("g", "b", JOIN, 50),
        ("g", "a", SESSION, 110),
    ]


def test_untracked_member_has_no_handle(make: Callable[..., Table]) -> None:
    t = make()
    with pytest.raises(KeyError, match="member 'm' of group 'g' has no pending deadline"):
        t.handle("g", "m")
    with pytest.raises(TypeError, match="member must be a str, not NoneType"):
        t.handle("g", None)


@pytest.mark.parametrize("how", ["expiry", "clear-all", "clear-last-kind", "remove-group"])
def test_handle_goes_stale_with_the_last_pending_deadline(
    make: Callable[..., Table], how: str
) -> None:
    t = make()
    t.heartbeat("g", "m", 0, 10)
    t.heartbeat("g", "other", 0, 1_000)
    h = t.handle("g", "m")
    other = t.handle("g", "other")
    if how == "expiry":
        assert t.expire(10) == [("g", "m", SESSION, 10)]
    elif how == "clear-all":
        t.clear("g", "m")
    elif how == "clear-last-kind":
        t.clear("g", "m", SESSION)
    else:
        t.remove_group("g")
    with pytest.raises(KeyError, match=f"{h} is not a live handle"):
        t.heartbeat_handle(h, 20, 10)
    assert ("g", "m") not in t
    if how != "remove-group":
        t.heartbeat_handle(other, 20, 1_000)  # the other member's handle is unaffected
        assert t.deadline("g", "other", SESSION) == 1_020


def test_handle_outlives_an_expired_session_while_another_deadline_is_pending(
    make: Callable[..., Table],
) -> None:
    t = make()
    t.heartbeat("g", "m", 0, 10)
    t.expect_sync("g", "m", 100)
    h = t.handle("g", "m")
    assert t.expire(10) == [("g", "m", SESSION, 10)]
    t.heartbeat_handle(h, 10, 10)  # SYNC still pending: the member and its handle live on
    assert t.deadline("g", "m", SESSION) == 20
    assert t.handle("g", "m") == h


def test_stale_handle_never_reaches_the_member_that_reuses_its_slot(
    make: Callable[..., Table],
) -> None:
    t = make()
    t.heartbeat("g", "first", 0, 10)
    stale = t.handle("g", "first")
    t.expire(10)
    # The Rust table hands the freed slot to the next member (with a new generation).
    t.heartbeat("g", "second", 10, 10)
    t.heartbeat("g", "first", 10, 10)  # the same ids again: a new member, a new handle
    fresh = t.handle("g", "first")
    assert stale not in (fresh, t.handle("g", "second"))
    with pytest.raises(KeyError, match="not a live handle"):
        t.heartbeat_handle(stale, 10, 1_000)
    with pytest.raises(KeyError, match="not a live handle"):
        t.heartbeat_handles([fresh, stale], 10, 1_000)
    assert t.deadline("g", "second", SESSION) == t.deadline("g", "first", SESSION) == 20
    t.heartbeat_handle(fresh, 10, 1_000)
    assert t.deadline("g", "first", SESSION) == 1_010


@pytest.mark.parametrize(
    "shape", ["list", "tuple", "array-q", "array-Q", "memoryview", "generator", "timeouts"]
)
def test_heartbeat_handles_is_heartbeat_handle_in_order(
    make: Callable[..., Table], shape: str
) -> None:
    one, many = make(), make()
    for t in (one, many):
        t.heartbeat_many(["g", "h", "g"], ["a", "b", "c"], 0, 1_000)
    hs1 = [one.handle(g, m) for g, m in [("g", "c"), ("h", "b"), ("g", "a"), ("h", "b")]]
    hs2 = [many.handle(g, m) for g, m in [("g", "c"), ("h", "b"), ("g", "a"), ("h", "b")]]
    timeouts = [10, 20, 30, 40]  # ("h", "b") twice: the last heartbeat wins
    per_item = shape == "timeouts"
    for h, to in zip(hs1, timeouts, strict=True):
        one.heartbeat_handle(h, 5, to if per_item else 10)
    arg: object = {
        "list": hs2,
        "tuple": tuple(hs2),
        "array-q": array("q", hs2),
        "array-Q": array("Q", hs2),
        "memoryview": memoryview(array("q", hs2)),
        "generator": (h for h in hs2),
        "timeouts": hs2,
    }[shape]
    many.heartbeat_handles(arg, 5, array("q", timeouts) if per_item else 10)
    for g, m in [("g", "a"), ("h", "b"), ("g", "c")]:
        assert one.deadline(g, m, SESSION) == many.deadline(g, m, SESSION)
    assert one.expire(10_000) == many.expire(10_000)
    assert many.heartbeat_handles([], 0, 1) is None  # an empty batch is fine


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [
        (lambda t, h: t.heartbeat_handle(-1, 0, 1), ValueError, "handle must be a non-negative"),
        (lambda t, h: t.heartbeat_handle(2**64, 0, 1), ValueError, "below 2\\*\\*64"),
        (lambda t, h: t.heartbeat_handle(None, 0, 1), TypeError, "handle must be an int"),
        (lambda t, h: t.heartbeat_handle(True, 0, 1), TypeError, "handle must be an int, not bool"),
        (lambda t, h: t.heartbeat_handle(h, 0.5, 1), TypeError, "now_ms must be an int"),
        (lambda t, h: t.heartbeat_handle(h, 0, -1), ValueError, "session_timeout_ms must be >= 0"),
        (lambda t, h: t.heartbeat_handle(h, 2**63 - 1, 1), ValueError, "overflows"),
        (lambda t, h: t.heartbeat_handle(h + 2**32, 0, 1), KeyError, "not a live handle"),
        (lambda t, h: t.heartbeat_handles(str(h), 0, 1), TypeError, "handles must be a sequence"),
        (lambda t, h: t.heartbeat_handles([h, -1], 0, 1), ValueError, r"handles\[1\] must be"),
        (lambda t, h: t.heartbeat_handles(array("q", [h, -2]), 0, 1), ValueError, r"handles\[1\]"),
        (lambda t, h: t.heartbeat_handles([h, None], 0, 1), TypeError, r"handles\[1\] must be an"),
        (lambda t, h: t.heartbeat_handles([h], None, 1), TypeError, "now_ms must be an int"),
        (lambda t, h: t.heartbeat_handles([h, h], 0, [1]), ValueError, "has 1 elements but han"),
        (lambda t, h: t.heartbeat_handles([h, h], 0, [1, -1]), ValueError, r"\[1\]: .*>= 0"),
        (lambda t, h: t.heartbeat_handles([h], 0, -1), ValueError, "session_timeout_ms must be"),
        (lambda t, h: t.heartbeat_handles([h, h + 1], 0, 1), KeyError, r"handles\[1\]: \d+ is not"),
        # Argument errors come before any handle is looked at.
        (lambda t, h: t.heartbeat_handles([h + 1], 0, -1), ValueError, ">= 0"),
    ],
)
def test_bad_handle_input_is_refused_clearly_and_changes_nothing(
    make: Callable[..., Table],
    call: Callable[[Table, int], object],
    exc: type[Exception],
    message: str,
) -> None:
    t = make(0)
    t.heartbeat("g", "keep", 0, 1_000)
    h = t.handle("g", "keep")
    # h + 1 names no member: one member only, and neither numbering puts one there.
    with pytest.raises(exc, match=message):
        call(t, h)
    assert len(t) == 1
    assert t.deadline("g", "keep", SESSION) == 1_000
    assert t.handle("g", "keep") == h
