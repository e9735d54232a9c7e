"""``groupcoord._core.ConnectionLimits`` through its Python surface (the counting itself is
tested in ``rust/src/net/connection_limits.rs``): the addresses Python's sockets give it,
the Kafka names it answers with, and the table against a counting model under any
sequence of opens and closes."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord._core import ConnectionLimits


def test_a_refusal_names_the_kafka_limit_and_counts_nothing() -> None:
    limits = ConnectionLimits(max_connections=3, max_connections_per_ip=2)
    assert limits.open("10.0.0.1") is None
    assert limits.open("10.0.0.1") is None
    assert limits.open("10.0.0.1") == "max.connections.per.ip"
    assert limits.open("10.0.0.2") is None
    assert limits.open("10.0.0.3") == "max.connections"
    assert limits.open_connections == 3
    assert limits.per_ip() == {"10.0.0.1": 2, "10.0.0.2": 1}


def test_addresses_as_python_sockets_give_them() -> None:
    limits = ConnectionLimits(max_connections_per_ip=1)
    assert limits.open("::1") is None
    # a scope names the interface, not another client
    assert limits.open("fe80::1%eth0") is None
    assert limits.open("fe80::1%lo") == "max.connections.per.ip"
    # an IPv4 client on a dual-stack socket is the IPv4 address
    assert limits.open("127.0.0.1") is None
    assert limits.open("::ffff:127.0.0.1") == "max.connections.per.ip"
    assert limits.per_ip() == {"::1": 1, "fe80::1": 1, "127.0.0.1": 1}
    assert limits.close("::ffff:127.0.0.1") is True
    assert limits.close("127.0.0.1") is False


@pytest.mark.parametrize("address", ["", "localhost", "10.0.0.256", "None", "1.2.3.4:9092"])
def test_what_is_not_an_ip_address_is_a_value_error_naming_it(address: str) -> None:
    limits = ConnectionLimits()
    with pytest.raises(ValueError, match="is not an IP address"):
        limits.open(address)
    with pytest.raises(ValueError, match="is not an IP address"):
        limits.close(address)
    assert limits.open_connections == 0


ADDRESSES = ["10.0.0.1", "10.0.0.2", "::1", "192.168.1.9"]


@given(
    max_connections=st.none() | st.integers(0, 6),
    max_per_ip=st.none() | st.integers(0, 3),
    ops=st.lists(st.tuples(st.booleans(), st.sampled_from(ADDRESSES)), max_size=60),
)
def test_the_table_is_a_counting_model(
    max_connections: int | None, max_per_ip: int | None, ops: list[tuple[bool, str]]
) -> None:
    limits = ConnectionLimits(max_connections, max_per_ip)
    model: Counter[str] = Counter()
    for is_open, address in ops:
        if is_open:
            if max_connections is not None and model.total() >= max_connections:
                expected: str | None = "max.connections"
            elif max_per_ip is not None and model[address] >= max_per_ip:
                expected = "max.connections.per.ip"
            else:
                expected = None
                model[address] += 1
            assert limits.open(address) == expected
        else:
            was_open = model[address] > 0
            if was_open:
                model[address] -= 1
            assert limits.close(address) is was_open
        assert limits.open_connections == model.total()
        assert limits.per_ip() == {a: n for a, n in model.items() if n}
