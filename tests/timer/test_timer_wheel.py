"""Behaviour of TimerWheel, checked on the Rust wheel and the pure-Python reference alike."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import pytest

import groupcoord
from groupcoord.reference.timer import TimerWheel as RefWheel

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
DAY_MS = 86_400_000

IMPLS = [pytest.param(groupcoord.TimerWheel, id="rust"), pytest.param(RefWheel, id="reference")]

Wheel = Any  # either implementation; they share the API


@pytest.fixture(params=IMPLS)
def make(request: pytest.FixtureRequest) -> Callable[..., Wheel]:
    cls: Callable[..., Wheel] = request.param
    return cls


def test_advance_returns_due_keys_by_deadline_then_key_once(make: Callable[..., Wheel]) -> None:
    w = make()
    for key, deadline in [(5, 100), (3, 100), (9, 50), (1, 5_000), (2, 2**40), (7, 100)]:
        w.schedule(key, deadline)
    assert len(w) == 6
    assert w.next_deadline() == 50
    assert w.advance(99) == [9]
    assert w.advance(100) == [3, 5, 7]
    assert w.advance(100) == []
    assert w.next_deadline() == 5_000
    assert w.advance(2**40 - 1) == [1]
    assert w.advance(I64_MAX) == [2]
    assert len(w) == 0
    assert w.next_deadline() is None


def test_past_and_present_deadlines_fire_on_the_next_advance(make: Callable[..., Wheel]) -> None:
    w = make(1_000)
    assert w.now_ms == 1_000
    w.schedule(1, 2_000)
    w.schedule(2, 1_000)  # equal to now
    w.schedule(3, -5)
    w.schedule(4, I64_MIN)
    assert w.next_deadline() == I64_MIN
    assert w.advance(1_000) == [4, 3, 2]
    assert w.advance(5_000) == [1]


def test_time_never_goes_backwards(make: Callable[..., Wheel]) -> None:
    w = make(10)
    w.schedule(1, 5)
    with pytest.raises(ValueError, match="backwards"):
        w.advance(9)
    # Nothing happened: the key is still due and time is still 10.
    assert w.now_ms == 10
    assert 1 in w
    assert w.advance(10) == [1]


def test_far_future_deadlines(make: Callable[..., Wheel]) -> None:
    w = make(0)
    w.schedule(1, 3 * DAY_MS)
    w.schedule(2, 400 * DAY_MS)
    w.schedule(3, I64_MAX)
    assert w.advance(3 * DAY_MS - 1) == []
    assert w.next_deadline() == 3 * DAY_MS
    assert w.advance(3 * DAY_MS) == [1]
    assert w.advance(399 * DAY_MS) == []
    assert w.next_deadline() == 400 * DAY_MS
    assert w.advance(I64_MAX) == [2, 3]


def test_reschedule_earlier_later_cancel_and_reuse(make: Callable[..., Wheel]) -> None:
    w = make()
    w.schedule(1, 10_000)
    w.schedule(1, 20)
    assert w.deadline(1) == 20
    w.schedule(1, 300_000)
    w.schedule(2, 300_001)
    assert w.cancel(2) is True
    assert w.cancel(2) is False
    assert w.deadline(2) is None
    assert w.advance(299_999) == []
    assert w.advance(300_000) == [1]
    assert 1 not in w
    w.schedule(1, 300_000)  # reused after expiry, due immediately
    assert w.advance(300_000) == [1]


def test_huge_and_sparse_keys(make: Callable[..., Wheel]) -> None:
    w = make()
    keys = [0, 2**64 - 1, 2**63, 2**40, 12345]
    w.schedule_many(keys, 7)
    assert all(k in w for k in keys)
    assert -1 not in w
    assert 2**64 not in w
    assert w.advance(7) == sorted(keys)


@pytest.mark.parametrize(
    "container",
    [
        pytest.param(list, id="list"),
        pytest.param(tuple, id="tuple"),
        pytest.param(lambda ks: array("q", ks), id="array-q"),
        pytest.param(lambda ks: array("Q", ks), id="array-Q"),
        pytest.param(lambda ks: memoryview(array("q", ks)), id="memoryview-q"),
        pytest.param(lambda ks: array("i", ks), id="array-i"),
        pytest.param(lambda ks: memoryview(array("H", ks)), id="memoryview-H"),
        pytest.param(lambda ks: (k for k in ks), id="generator"),
        pytest.param(lambda ks: bytearray(ks), id="bytearray"),
    ],
)
def test_schedule_many_accepts_sequences_buffers_and_iterables(
    make: Callable[..., Wheel], container: Callable[[list[int]], object]
) -> None:
    w = make()
    keys = [4, 1, 3, 2]
    w.schedule_many(container(keys), 50)
    w.schedule_many(container([5, 6]), container([40, 60]))
    assert w.advance(50) == [5, 1, 2, 3, 4]
    assert w.advance(60) == [6]


def test_schedule_many_equals_schedule_in_order(make: Callable[..., Wheel]) -> None:
    a, b = make(), make()
    pairs = [(1, 30), (2, 10), (1, 20), (3, 10), (2, 40)]  # repeated keys: last wins
    for k, d in pairs:
        a.schedule(k, d)
    b.schedule_many([k for k, _ in pairs], array("q", [d for _, d in pairs]))
    assert [a.deadline(k) for k in (1, 2, 3)] == [b.deadline(k) for k in (1, 2, 3)] == [20, 40, 10]
    assert a.advance(100) == b.advance(100) == [3, 1, 2]


def test_cancel_many(make: Callable[..., Wheel]) -> None:
    w = make()
    w.schedule_many(range(10), 5)
    assert w.cancel_many(array("Q", [1, 3, 3, 11])) == 2
    assert w.cancel_many([]) == 0
    assert len(w) == 8


BAD_SCALARS = [
    # (key, deadline, exception, message fragment)
    (-1, 5, ValueError, "key must be a non-negative integer"),
    (2**64, 5, ValueError, "key must be a non-negative integer"),
    (None, 5, TypeError, "key must be an int, not NoneType"),
    (1.0, 5, TypeError, "key must be an int, not float"),
    ("1", 5, TypeError, "key must be an int, not str"),
    (True, 5, TypeError, "key must be an int, not bool"),
    (1, None, TypeError, "deadline_ms must be an int, not NoneType"),
    (1, 5.5, TypeError, "deadline_ms must be an int, not float"),
    (1, False, TypeError, "deadline_ms must be an int, not bool"),
    (1, 2**63, ValueError, "deadline_ms must fit in a signed 64-bit integer"),
    (1, -(2**63) - 1, ValueError, "deadline_ms must fit in a signed 64-bit integer"),
]


@pytest.mark.parametrize(("key", "deadline", "exc", "message"), BAD_SCALARS)
def test_bad_scalars_are_refused_clearly(
    make: Callable[..., Wheel], key: object, deadline: object, exc: type[Exception], message: str
) -> None:
    w = make()
    with pytest.raises(exc, match=message):
        w.schedule(key, deadline)
    assert len(w) == 0


def test_bad_arguments_elsewhere(make: Callable[..., Wheel]) -> None:
    w = make()
    with pytest.raises(TypeError, match="now_ms must be an int"):
        make(None)
    with pytest.raises(ValueError, match="now_ms must fit"):
        make(2**63)
    with pytest.raises(TypeError, match="now_ms must be an int, not NoneType"):
        w.advance(None)
    with pytest.raises(ValueError, match="key must be a non-negative integer"):
        w.cancel(-3)
    with pytest.raises(TypeError, match="key must be an int"):
        w.deadline("x")
    with pytest.raises(TypeError, match="key must be an int"):
        _ = "x" in w


@pytest.mark.parametrize(
    ("keys", "deadlines", "exc", "message"),
    [
        ([1, -2], 5, ValueError, r"keys\[1\] must be a non-negative integer"),
        (array("q", [1, -2]), 5, ValueError, r"keys\[1\] must be a non-negative integer"),
        ([1, None], 5, TypeError, r"keys\[1\] must be an int, not NoneType"),
        (array("d", [1.0]), 5, TypeError, r"keys\[0\] must be an int, not float"),
        ([1, 2], [5], ValueError, "deadline_ms has 1 elements but keys has 2"),
        ([1, 2], [5, None], TypeError, r"deadline_ms\[1\] must be an int"),
        ([1], array("Q", [2**63]), ValueError, r"deadline_ms\[0\] must fit"),
        ("12", 5, TypeError, "keys must be a sequence, not a single str"),
        (b"12", 5, TypeError, "keys must be a sequence, not a single bytes"),
        (12, 5, TypeError, "keys must be a sequence, not int"),
        ([1], None, TypeError, "deadline_ms must be a sequence, not NoneType"),
    ],
)
def test_bad_batches_change_nothing(
    make: Callable[..., Wheel], keys: object, deadlines: object, exc: type[Exception], message: str
) -> None:
    w = make()
    w.schedule(1, 1_000)
    with pytest.raises(exc, match=message):
        w.schedule_many(keys, deadlines)
    # Atomic: the valid elements before the bad one were not applied either.
    assert len(w) == 1
    assert w.deadline(1) == 1_000


def test_repr(make: Callable[..., Wheel]) -> None:
    w = make(7)
    w.schedule(1, 9)
    assert repr(w) == "TimerWheel(now_ms=7, scheduled=1)"


def test_numpy_style_index_objects_are_accepted(make: Callable[..., Wheel]) -> None:
    class Index:
        def __init__(self, v: int) -> None:
            self.v = v

        def __index__(self) -> int:
            return self.v

    w = make()
    w.schedule(Index(3), Index(10))
    w.schedule_many([Index(4)], Index(10))
    assert w.deadline(Index(3)) == 10
    assert w.advance(Index(10)) == [3, 4]
