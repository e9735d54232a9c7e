"""The runner's Kafka connections (groupcoord.member.connection): version negotiation,
Metadata, FindCoordinator against ``groupcoord serve``; typed errors (never a hang) from
brokers that vanish, stay silent or send garbage; bootstrap parsing and retry backoff as
properties."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from runner_helpers import SERVER_ARGS

from groupcoord.errors import (
    NetworkException,
    RequestTimedOutError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from groupcoord.member.connection import (
    API_VERSIONS,
    FIND_COORDINATOR,
    METADATA,
    BrokerAddress,
    BrokerConnection,
    BrokerConnectionError,
    KafkaClient,
    RetryBackoff,
    build_request,
    parse_bootstrap_servers,
)
from groupcoord.protocol.group_messages import GROUP_API_VERSIONS


@pytest.fixture
def server(serve_factory: Callable[..., Any]) -> Any:
    return serve_factory(*SERVER_ARGS)


def address_of(server: Any) -> BrokerAddress:
    return BrokerAddress(host=server.host, port=server.port)


# --------------------------------------------------------------------------------------
# against groupcoord serve
# --------------------------------------------------------------------------------------


def test_versions_are_negotiated_on_connect(server: Any) -> None:
    with BrokerConnection.open(address_of(server), client_id="t") as conn:
        for api_key, (lo, hi) in GROUP_API_VERSIONS.items():
            broker_lo, broker_hi = conn.api_versions[api_key]
            assert conn.version_for(api_key, lo, hi) == min(hi, broker_hi)
            assert conn.version_for(api_key, broker_lo, broker_lo) == broker_lo
        assert API_VERSIONS in conn.api_versions
        # a range the broker does not have at all
        top = conn.api_versions[METADATA][1]
        with pytest.raises(UnsupportedVersionError):
            conn.version_for(METADATA, top + 1, top + 5)
        with pytest.raises(UnsupportedVersionError):
            conn.version_for(32_000, 0, 3)  # an API nobody has


def test_metadata_and_find_coordinator(server: Any) -> None:
    with KafkaClient(server.bootstrap, client_id="t") as client:
        metadata = client.metadata(["t", "missing"])
        assert metadata.partitions_per_topic == {"t": 6}
        assert metadata.topic_errors == {"missing": UnknownTopicOrPartitionError}
        assert [(b.host, b.port) for b in metadata.brokers.values()] == [(server.host, server.port)]
        coordinator = client.find_coordinator("some-group")
        assert (coordinator.host, coordinator.port) == (server.host, server.port)
        # one connection per broker, reused by every call
        assert client.connection(coordinator) is client.any_connection()


def test_concurrent_requests_on_one_connection_each_get_their_answer(server: Any) -> None:
    with BrokerConnection.open(address_of(server), client_id="t") as conn:
        version = conn.version_for(METADATA, 1, 12)
        results: dict[int, Any] = {}

        def ask(i: int) -> None:
            topics = ["t"] if i % 2 else ["x"]
            request = build_request(
                METADATA,
                version,
                topics=tuple(_metadata_topic(version, t) for t in topics),
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
            results[i] = conn.send(request).result(10)

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, response in results.items():
            assert [str(t.name) for t in response.topics] == (["t"] if i % 2 else ["x"])
        assert len(results) == 16


def _metadata_topic(version: int, name: str) -> Any:
    from kio.index import load_request_schema

    import groupcoord.member.connection as connection

    cls = connection._nested(load_request_schema(METADATA, version), "MetadataRequestTopic")
    fields = {"name": name, "topic_id": None} if version >= 10 else {"name": name}
    return cls(**fields)


def test_a_server_that_goes_away_fails_pending_and_later_requests(server: Any) -> None:
    conn = BrokerConnection.open(address_of(server), client_id="t")
    try:
        version = conn.version_for(FIND_COORDINATOR, 0, 6)
        request = build_request(
            FIND_COORDINATOR, version, key="g", key_type=0, coordinator_keys=("g",)
        )
        assert conn.send(request).result(10) is not None
        server.kill()
        deadline = time.monotonic() + 10
        while not conn.closed and time.monotonic() < deadline:
            time.sleep(0.02)
        assert conn.closed
        with pytest.raises(BrokerConnectionError):
            conn.send(request)
    finally:
        conn.close()
    with pytest.raises(BrokerConnectionError), KafkaClient(server.bootstrap) as client:
        client.find_coordinator("g")


# --------------------------------------------------------------------------------------
# brokers that misbehave: a bare TCP peer
# --------------------------------------------------------------------------------------


@pytest.fixture
def raw_peer() -> Iterator[tuple[BrokerAddress, Callable[[Callable[[socket.socket], None]], None]]]:
    """A TCP listener whose behaviour on each accepted connection a test chooses."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.05)  # so that the accept loop sees the end of the test
    accepted: list[socket.socket] = []
    behaviour: list[Callable[[socket.socket], None]] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                peer, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            peer.settimeout(None)
            accepted.append(peer)
            if behaviour:
                threading.Thread(target=behaviour[0], args=(peer,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield BrokerAddress(host="127.0.0.1", port=listener.getsockname()[1]), behaviour.append
    done.set()
    thread.join(timeout=5)
    listener.close()
    for peer in accepted:
        peer.close()


def test_a_silent_broker_times_out_with_a_typed_error(raw_peer: Any) -> None:
    address, _behave = raw_peer  # accepts, never answers
    started = time.monotonic()
    with pytest.raises(RequestTimedOutError):
        BrokerConnection.open(address, client_id="t", connect_timeout_ms=400)
    assert time.monotonic() - started < 10, "the timeout was not enforced"


def test_a_broker_sending_garbage_closes_the_connection_with_a_typed_error(
    raw_peer: Any,
) -> None:
    address, behave = raw_peer

    def garbage(peer: socket.socket) -> None:
        peer.recv(65536)
        peer.sendall(b"\x00\x00\x00\x06\x00\x00\x00\x01\xff\xff")  # ApiVersions, truncated body

    behave(garbage)
    with pytest.raises(NetworkException):
        BrokerConnection.open(address, client_id="t", connect_timeout_ms=2000)


def test_a_broker_sending_a_negative_frame_size_is_dropped(raw_peer: Any) -> None:
    address, behave = raw_peer

    def negative(peer: socket.socket) -> None:
        peer.recv(65536)
        peer.sendall(b"\xff\xff\xff\xf0")

    behave(negative)
    with pytest.raises(BrokerConnectionError):
        BrokerConnection.open(address, client_id="t", connect_timeout_ms=2000)


def test_a_refused_connection_is_a_typed_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BrokerConnectionError):
        BrokerConnection.open(BrokerAddress(host="127.0.0.1", port=port), client_id="t")


# --------------------------------------------------------------------------------------
# properties
# --------------------------------------------------------------------------------------

_hosts = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,3}", fullmatch=True),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda ip: f"[{ip}]"),
)
_ports = st.integers(1, 65535)


@given(st.lists(st.tuples(_hosts, _ports), min_size=1, max_size=5), st.sampled_from([",", ", "]))
def test_bootstrap_list_parses_back_to_its_addresses(
    entries: list[tuple[str, int]], separator: str
) -> None:
    text = separator.join(f"{host}:{port}" for host, port in entries)
    parsed = parse_bootstrap_servers(text)
    assert [(a.host, a.port) for a in parsed] == [(h.strip("[]"), p) for h, p in entries]
    assert parse_bootstrap_servers([f"{h}:{p}" for h, p in entries]) == parsed


@given(
    st.one_of(
        _hosts,  # no port
        st.tuples(_hosts, st.integers(65536, 10**6)).map(lambda hp: f"{hp[0]}:{hp[1]}"),
        st.tuples(_hosts, st.integers(-(10**6), 0)).map(lambda hp: f"{hp[0]}:{hp[1]}"),
        st.tuples(_hosts, st.from_regex(r"[a-z]+", fullmatch=True)).map(
            lambda hp: f"{hp[0]}:{hp[1]}"
        ),
        st.just(""),
        st.just(" , "),
    )
)
def test_bad_bootstrap_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        parse_bootstrap_servers(entry)


@given(st.integers(0, 5000), st.integers(0, 60_000), st.integers(1, 40))
def test_retry_backoff_doubles_within_jitter_up_to_its_cap(
    initial: int, extra: int, attempts: int
) -> None:
    cap = initial + extra
    backoff = RetryBackoff(initial, cap)
    for attempt in range(attempts):
        base = min(cap, initial * 2**attempt)
        assert 0.8 * base - 1 <= backoff.next_ms() <= 1.2 * base
    backoff.reset()
    assert backoff.next_ms() <= 1.2 * initial


@given(st.integers(-100, -1) | st.integers(1, 100))
def test_retry_backoff_refuses_inverted_bounds(delta: int) -> None:
    with pytest.raises(ValueError):
        RetryBackoff(100, 100 - abs(delta)) if delta > 0 else RetryBackoff(delta, 100)
