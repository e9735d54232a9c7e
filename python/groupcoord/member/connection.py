"""Blocking, thread-safe Kafka client connections: one broker socket, and a small cluster view.

:class:`BrokerConnection` owns one TCP socket. Any thread may :meth:`~BrokerConnection.send`
a kio request; a reader thread matches response frames to requests by correlation id and
completes their :class:`PendingResponse`. Requests that outlive their timeout close the
connection, as Kafka's ``NetworkClient`` does: a broker that does not answer one request
cannot be trusted with the others in flight on the same socket. On connect the connection
negotiates API versions (``ApiVersions``), so callers pick the highest version both sides
support with :meth:`~BrokerConnection.version_for`.

:class:`KafkaClient` bootstraps from ``"host:port,host:port"``, keeps one connection per
broker, and answers the two cluster questions a group member has: which partitions do my
topics have (``Metadata``) and which broker coordinates my group (``FindCoordinator``,
key type 0). Failures surface as typed :mod:`groupcoord.errors` exceptions: a lost or
refused connection is :class:`BrokerConnectionError` (Kafka's retriable
``NETWORK_EXCEPTION``), an unanswered request :class:`~groupcoord.errors.RequestTimedOutError`.

Frames go through :class:`~groupcoord.protocol.client.ClientCodec` (the project's one Kafka
codec, :mod:`groupcoord.protocol.wire`); this module adds only sockets and threads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kio.index import load_request_schema

from groupcoord.errors import (
    KafkaError,
    NetworkException,
    RequestTimedOutError,
    UnsupportedVersionError,
)
from groupcoord.protocol.client import ClientCodec
from groupcoord.protocol.wire import kio_version_range

__all__ = [
    "API_VERSIONS",
    "FIND_COORDINATOR",
    "METADATA",
    "BrokerAddress",
    "BrokerConnection",
    "BrokerConnectionError",
    "ClusterMetadata",
    "KafkaClient",
    "PendingResponse",
    "RetryBackoff",
    "build_request",
    "parse_bootstrap_servers",
]

API_VERSIONS: Final = 18
METADATA: Final = 3
FIND_COORDINATOR: Final = 10

#: Kafka's ``request.timeout.ms`` default.
DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000
#: Kafka's ``socket.connection.setup.timeout.ms`` default.
DEFAULT_CONNECT_TIMEOUT_MS: Final = 10_000
# How often the reader wakes up to expire requests when nothing arrives.
_READER_TICK_S: Final = 0.05
_CLIENT_SOFTWARE_NAME: Final = "groupcoord"
_CLIENT_SOFTWARE_VERSION: Final = "0.1.0"


class BrokerConnectionError(NetworkException):
    """The connection to a broker could not be opened, or closed with requests in flight.

    A ``NETWORK_EXCEPTION`` (retriable), like Java's ``DisconnectException``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerAddress:
    """Where a broker listens. ``node_id`` is -1 for a bootstrap address not yet identified."""

    host: str
    port: int
    node_id: int = -1


def parse_bootstrap_servers(servers: str | Iterable[str]) -> list[BrokerAddress]:
    """``"host:port,host:port"`` (or a list of ``"host:port"``) as addresses.

    IPv6 hosts are written in brackets (``"[::1]:9092"``). Anything else raises ValueError
    naming the bad entry: a typo here would otherwise show up as a connection hang later.
    """
    entries = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[BrokerAddress] = []
    for raw in entries:
        if not isinstance(raw, str):
            raise TypeError(f"bootstrap server entries must be str, got {type(raw).__name__}")
        entry = raw.strip()
        if not entry:
            continue
        host, sep, port_text = entry.rpartition(":")
        if not sep or not host:
            raise ValueError(f"bootstrap server {entry!r} is not host:port")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            port = int(port_text, 10)
        except ValueError:
            raise ValueError(f"bootstrap server {entry!r} has no numeric port") from None
        if not 0 < port < 65536:
            raise ValueError(f"bootstrap server {entry!r}: port {port} is out of range")
        out.append(BrokerAddress(host=host, port=port))
    if not out:
        raise ValueError("bootstrap_servers lists no server")
    return out


def build_request(api_key: int, version: int, **fields: Any) -> Any:
    """A kio request of (api, version) from the fields that version has.

    Fields the version lacks are dropped, so one call site serves every version; a field
    the version requires and the caller did not give raises TypeError (a programming error).
    """
    cls = load_request_schema(api_key, version)
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in fields.items() if k in names})


def _nested(request_cls: type[Any], name: str) -> type[Any]:
    # kio generates one nested class per version, in the payload's own module.
    module = sys.modules[request_cls.__module__]
    cls: type[Any] = getattr(module, name)
    return cls


# --------------------------------------------------------------------------------------
# one request in flight
# --------------------------------------------------------------------------------------


class PendingResponse:
    """A request sent and not yet answered. Completed exactly once, by the reader thread
    (a response, or the error that closed the connection)."""

    __slots__ = (
        "_callbacks",
        "_error",
        "_event",
        "_lock",
        "_response",
        "api_key",
        "correlation_id",
        "deadline",
        "version",
    )

    def __init__(self, api_key: int, version: int, correlation_id: int, deadline: float) -> None:
        self.api_key = api_key
        self.version = version
        self.correlation_id = correlation_id
        #: ``time.monotonic()`` after which the request counts as timed out.
        self.deadline = deadline
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._response: Any = None
        self._error: KafkaError | None = None
        self._callbacks: list[Callable[[PendingResponse], None]] = []

    def done(self) -> bool:
        return self._event.is_set()

    def _complete(self, response: Any, error: KafkaError | None) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._response = response
            self._error = error
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)

    def add_done_callback(self, callback: Callable[[PendingResponse], None]) -> None:
        """Call ``callback(self)`` once complete (at once if already complete). It runs on
        the completing thread, so it must be quick and must not block."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    @property
    def error(self) -> KafkaError | None:
        """The transport error, ``None`` while pending or once answered."""
        return self._error

    def result(self, timeout_s: float | None = None) -> Any:
        """The kio response; raises the transport error, or RequestTimedOutError if it is
        still unanswered after ``timeout_s`` (the request itself stays in flight)."""
        if not self._event.wait(timeout_s):
            raise RequestTimedOutError(
                f"no response to API {self.api_key} v{self.version} within {timeout_s}s"
            )
        if self._error is not None:
            raise self._error
        return self._response


# --------------------------------------------------------------------------------------
# one broker
# --------------------------------------------------------------------------------------


class BrokerConnection:
    """One socket to one broker, shared by every thread of the process.

    Create with :meth:`open` (connects and negotiates versions). After :meth:`close`, or
    when the broker hangs up, every pending request fails with
    :class:`BrokerConnectionError` and :attr:`closed` is true; a new connection is needed.
    """

    def __init__(
        self,
        address: BrokerAddress,
        *,
        client_id: str | None,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
    ) -> None:
        self.address = address
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self._sock: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._in_flight: dict[int, PendingResponse] = {}
        # Correlation ids, framing and decoding by each request's schema (guarded by
        # _state_lock: senders encode, the reader decodes).
        self._codec = ClientCodec(client_id)
        self._closed = threading.Event()
        self._close_error: KafkaError | None = None
        self._reader: threading.Thread | None = None
        #: Broker API key -> (min, max) version, from ApiVersions.
        self.api_versions: dict[int, tuple[int, int]] = {}

    @classmethod
    def open(
        cls,
        address: BrokerAddress,
        *,
        client_id: str | None,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
    ) -> BrokerConnection:
        """Connect, start the reader and negotiate API versions; BrokerConnectionError if
        the broker cannot be reached or does not complete the ApiVersions exchange."""
        conn = cls(address, client_id=client_id, request_timeout_ms=request_timeout_ms)
        conn._connect(connect_timeout_ms / 1000)
        try:
            conn._negotiate_versions(connect_timeout_ms / 1000)
        except BaseException:
            conn.close()
            raise
        return conn

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<BrokerConnection {self.address.host}:{self.address.port} {state}>"

    # -- lifecycle ------------------------------------------------------------------

    def _connect(self, timeout_s: float) -> None:
        where = f"{self.address.host}:{self.address.port}"
        try:
            sock = socket.create_connection((self.address.host, self.address.port), timeout_s)
        except OSError as e:
            raise BrokerConnectionError(f"cannot connect to {where}: {e}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The timeout bounds sendall() only: the reader selects before it receives.
        sock.settimeout(self.request_timeout_ms / 1000)
        self._sock = sock
        self._reader = threading.Thread(
            target=self._read_loop,
            args=(sock,),
            name=f"groupcoord-reader-{where}",
            daemon=True,
        )
        self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def close(self, error: KafkaError | None = None) -> None:
        """Close the socket; pending requests fail with ``error`` (a BrokerConnectionError
        by default). Idempotent, callable from any thread including the reader."""
        with self._state_lock:
            if self._closed.is_set():
                return
            self._close_error = error or BrokerConnectionError(
                f"connection to {self.address.host}:{self.address.port} closed"
            )
            self._closed.set()
            pending = list(self._in_flight.values())
            self._in_flight.clear()
            sock = self._sock
        if sock is not None:
            # shutdown wakes a reader blocked in select/recv; close alone may not.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        for p in pending:
            p._complete(None, self._close_error)
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=2.0)

    def __enter__(self) -> BrokerConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- versions -------------------------------------------------------------------

    def _negotiate_versions(self, timeout_s: float) -> None:
        known = kio_version_range(API_VERSIONS)
        assert known is not None
        version = known[1]
        for _attempt in range(2):
            request = build_request(
                API_VERSIONS,
                version,
                client_software_name=_CLIENT_SOFTWARE_NAME,
                client_software_version=_CLIENT_SOFTWARE_VERSION,
            )
            response = self._send(API_VERSIONS, version, request, timeout_s * 1000).result(
                timeout_s
            )
            ranges = {
                int(a.api_key): (int(a.min_version), int(a.max_version)) for a in response.api_keys
            }
            code = int(response.error_code)
            if code == 0:
                self.api_versions = ranges
                return
            # UNSUPPORTED_VERSION: the broker answered in v0 with its own ApiVersions range,
            # so ask again at the highest version it supports (KIP-511).
            if code == UnsupportedVersionError.code and API_VERSIONS in ranges:
                version = min(version, ranges[API_VERSIONS][1])
                continue
            raise KafkaError.for_code(code)("ApiVersions refused")
        raise BrokerConnectionError("ApiVersions negotiation did not converge")

    def version_for(self, api_key: int, lowest: int, highest: int) -> int:
        """The highest version of ``api_key`` in [lowest, highest] that the broker and kio
        both support; UnsupportedVersionError if there is none."""
        broker = self.api_versions.get(api_key)
        ours = kio_version_range(api_key)
        if broker is None or ours is None:
            raise UnsupportedVersionError(
                f"broker {self.address.host}:{self.address.port} does not support API {api_key}"
            )
        low = max(lowest, broker[0], ours[0])
        high = min(highest, broker[1], ours[1])
        if low > high:
            raise UnsupportedVersionError(
                f"API {api_key}: broker supports v{broker[0]}-v{broker[1]}, "
                f"we support v{max(lowest, ours[0])}-v{min(highest, ours[1])}"
            )
        return high

    # -- requests -------------------------------------------------------------------

    def send(self, request: Any, timeout_ms: float | None = None) -> PendingResponse:
        """Send a kio request; the result arrives on the returned PendingResponse.

        ``timeout_ms`` (default: the connection's request timeout) is how long the broker
        may take: a JoinGroup legitimately waits for the whole rebalance. Raises
        BrokerConnectionError at once if the connection is closed or the send fails.
        """
        api_key = int(request.__api_key__)
        version = int(request.__version__)
        return self._send(api_key, version, request, timeout_ms)

    def _send(
        self, api_key: int, version: int, request: Any, timeout_ms: float | None
    ) -> PendingResponse:
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        with self._state_lock:
            if self._closed.is_set():
                assert self._close_error is not None
                raise type(self._close_error)(self._close_error.message)
            correlation_id, frame = self._codec.encode(request)
            pending = PendingResponse(
                api_key, version, correlation_id, time.monotonic() + timeout / 1000
            )
            self._in_flight[correlation_id] = pending
            sock = self._sock
        assert sock is not None
        try:
            with self._send_lock:
                sock.sendall(frame)
        except OSError as e:
            # A partial write leaves the stream unusable: drop the whole connection.
            self.close(BrokerConnectionError(f"send to {self.address.host} failed: {e}"))
        return pending

    def _read_loop(self, sock: socket.socket) -> None:
        try:
            while not self._closed.is_set():
                readable, _, _ = select.select([sock], [], [], _READER_TICK_S)
                if readable:
                    data = sock.recv(65536)
                    if not data:
                        self.close(BrokerConnectionError("the broker closed the connection"))
                        return
                    self._dispatch(data)
                self._expire(time.monotonic())
        except (OSError, ValueError) as e:
            # OSError: socket closed under us; ValueError: select on a closed fd.
            self.close(BrokerConnectionError(f"connection lost: {e}"))
        except KafkaError as e:
            # A frame we cannot read: nothing after it on this stream can be trusted, so
            # its request fails with all the others.
            self.close(BrokerConnectionError(f"unreadable response: {e}"))

    def _dispatch(self, data: bytes) -> None:
        with self._state_lock:
            received = self._codec.feed(data)
            answered = [(self._in_flight.pop(r.correlation_id, None), r) for r in received]
        for pending, r in answered:
            # None: the request timed out meanwhile (and the connection is closing).
            if pending is not None:
                pending._complete(r.response, None)

    def _expire(self, now: float) -> None:
        with self._state_lock:
            expired = [p for p in self._in_flight.values() if p.deadline <= now]
            for p in expired:
                del self._in_flight[p.correlation_id]
        if expired:
            for p in expired:
                p._complete(
                    None,
                    RequestTimedOutError(
                        f"API {p.api_key} v{p.version} to {self.address.host}:"
                        f"{self.address.port} was not answered in time"
                    ),
                )
            self.close(BrokerConnectionError("closed after a request timed out"))


# --------------------------------------------------------------------------------------
# the cluster
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterMetadata:
    """What a Metadata response says. Topics that do not exist (or errored) are in
    ``topic_errors`` and not in ``partitions_per_topic``."""

    brokers: Mapping[int, BrokerAddress]
    partitions_per_topic: Mapping[str, int]
    topic_errors: Mapping[str, type[KafkaError]]
    #: topic ids (Metadata v10+; empty from older brokers): KIP-848 assignments use them
    topic_ids: Mapping[str, uuid.UUID] = dataclasses.field(default_factory=dict)


class RetryBackoff:
    """Kafka's exponential retry backoff (KIP-580): ``retry.backoff.ms`` doubling up to
    ``retry.backoff.max.ms``, with +-20% jitter so that clients do not retry in step."""

    def __init__(self, initial_ms: int = 100, max_ms: int = 1000) -> None:
        if initial_ms < 0 or max_ms < initial_ms:
            raise ValueError(f"bad backoff bounds {initial_ms}..{max_ms}")
        self.initial_ms = initial_ms
        self.max_ms = max_ms
        self.attempts = 0

    def next_ms(self) -> int:
        base = min(self.max_ms, self.initial_ms * (2 ** min(self.attempts, 30)))
        self.attempts += 1
        return int(base * random.uniform(0.8, 1.2))

    def reset(self) -> None:
        self.attempts = 0


class KafkaClient:
    """The brokers of one cluster, reached from a bootstrap list.

    Thread-safe. Connections are opened on demand and reopened after they close.
    Broker ids come from Metadata / FindCoordinator answers; before the first Metadata
    the bootstrap addresses are tried in order.
    """

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        *,
        client_id: str | None = "groupcoord",
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        connect_timeout_ms: int = DEFAULT_CONNECT_TIMEOUT_MS,
    ) -> None:
        self.bootstrap = parse_bootstrap_servers(bootstrap_servers)
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self._lock = threading.Lock()
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._brokers: dict[int, BrokerAddress] = {}
        self._closed = False

    def connection(self, address: BrokerAddress) -> BrokerConnection:
        """An open connection to ``address`` (reused, or opened now)."""
        key = (address.host, address.port)
        with self._lock:
            if self._closed:
                raise BrokerConnectionError("the client is closed")
            conn = self._connections.get(key)
            if conn is not None and not conn.closed:
                return conn
        # Connect outside the lock: a slow broker must not block the other threads.
        conn = BrokerConnection.open(
            address,
            client_id=self.client_id,
            request_timeout_ms=self.request_timeout_ms,
            connect_timeout_ms=self.connect_timeout_ms,
        )
        with self._lock:
            current = self._connections.get(key)
            if self._closed or (current is not None and not current.closed):
                # closed meanwhile, or another thread won the race
                conn.close()
                if self._closed:
                    raise BrokerConnectionError("the client is closed")
                assert current is not None
                return current
            self._connections[key] = conn
            return conn

    def any_connection(self) -> BrokerConnection:
        """A connection to some broker: known brokers first, then the bootstrap list."""
        with self._lock:
            candidates = [*self._brokers.values(), *self.bootstrap]
        errors: list[str] = []
        for address in candidates:
            try:
                return self.connection(address)
            except NetworkException as e:
                errors.append(str(e))
        raise BrokerConnectionError("no broker reachable: " + "; ".join(errors))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connections = list(self._connections.values())
            self._connections.clear()
        for conn in connections:
            conn.close()

    def __enter__(self) -> KafkaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- Metadata -------------------------------------------------------------------

    def metadata(self, topics: Iterable[str], timeout_ms: int | None = None) -> ClusterMetadata:
        """Partition counts of ``topics`` and the brokers, from any broker.

        Topics are never auto-created (a consumer must not create topics by subscribing)."""
        names = sorted(set(topics))
        conn = self.any_connection()
        version = conn.version_for(METADATA, 1, 12)
        cls = load_request_schema(METADATA, version)
        topic_cls = _nested(cls, "MetadataRequestTopic")
        topic_fields = {f.name for f in dataclasses.fields(topic_cls)}
        entries = tuple(
            topic_cls(
                **({"name": n, "topic_id": None} if "topic_id" in topic_fields else {"name": n})
            )
            for n in names
        )
        request = build_request(
            METADATA,
            version,
            topics=entries,
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        response = conn.send(request, timeout).result(timeout / 1000 + 1)
        brokers = {
            int(b.node_id): BrokerAddress(
                host=str(b.host), port=int(b.port), node_id=int(b.node_id)
            )
            for b in response.brokers
        }
        partitions: dict[str, int] = {}
        errors: dict[str, type[KafkaError]] = {}
        ids: dict[str, uuid.UUID] = {}
        for t in response.topics:
            name = str(t.name)
            code = int(t.error_code)
            if code:
                errors[name] = KafkaError.for_code(code)
            else:
                partitions[name] = len(t.partitions)
                topic_id = getattr(t, "topic_id", None)
                if isinstance(topic_id, uuid.UUID) and topic_id.int:
                    ids[name] = topic_id
        with self._lock:
            self._brokers = dict(brokers)
        return ClusterMetadata(
            brokers=brokers, partitions_per_topic=partitions, topic_errors=errors, topic_ids=ids
        )

    # -- FindCoordinator ----------------------------------------------------------

    def find_coordinator(self, group_id: str, timeout_ms: int | None = None) -> BrokerAddress:
        """The coordinator of ``group_id`` (one attempt). Raises the broker's error
        (typically the retriable COORDINATOR_NOT_AVAILABLE) or a transport error."""
        conn = self.any_connection()
        version = conn.version_for(FIND_COORDINATOR, 0, 6)
        if version >= 4:
            # v4+ batches keys (KIP-699); we ask for one.
            request = build_request(
                FIND_COORDINATOR, version, key_type=0, coordinator_keys=(group_id,)
            )
        else:
            request = build_request(FIND_COORDINATOR, version, key=group_id, key_type=0)
        timeout = self.request_timeout_ms if timeout_ms is None else timeout_ms
        response = conn.send(request, timeout).result(timeout / 1000 + 1)
        if version >= 4:
            matches = [c for c in response.coordinators if str(c.key) == group_id]
            if not matches:
                raise KafkaError.for_code(-1)(f"FindCoordinator answered no entry for {group_id!r}")
            entry = matches[0]
        else:
            entry = response
        code = int(entry.error_code)
        if code:
            raise KafkaError.for_code(code)(str(entry.error_message or ""))
        address = BrokerAddress(
            host=str(entry.host), port=int(entry.port), node_id=int(entry.node_id)
        )
        with self._lock:
            self._brokers.setdefault(address.node_id, address)
        return address
