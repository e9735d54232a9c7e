"""``groupcoord serve``: the asyncio Kafka-protocol server.

One :class:`Server` opens the stores (SQLite under ``data_dir``, or memory) and builds
what serves: the topic log and its APIs (:mod:`groupcoord.broker`), one
:class:`~groupcoord.coordinator.GroupCoordinator` (given the log as its view of the topics)
behind a :class:`~groupcoord.server.group_gateway.GroupGateway`, and the listening socket.
Every connection is a :class:`~groupcoord.server.connection.Connection`.

Limits, as Kafka names them: ``max_connections`` (``max.connections``) and
``max_connections_per_ip`` (``max.connections.per.ip``), counted over every listener of
either shell in one ``ConnectionLimits`` table, close a new connection at accept
when it would exceed them (logged, at most once a second with the count refused since);
``connections_max_idle_ms`` (``connections.max.idle.ms``) closes a connection that sent
no request for that long and has nothing outstanding (a parked JoinGroup is not idle).
With ``metrics_port`` the server counts what it does (:mod:`~groupcoord.server.stats`)
and serves it to Prometheus (:mod:`~groupcoord.server.metrics`).

Shutdown (:meth:`Server.close`, or SIGTERM/SIGINT under :func:`run`): stop accepting,
wait for the coordinator records already handed to the writer (so the commits received
so far are answered), stop reading, send every reply already complete, give up on parked
ones (JoinGroups, long polls), then close the coordinator's store and the log, so both
databases are closed cleanly. A commit is answered only once it is durable, so no
acknowledged commit is lost, whenever the process dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import signal
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from groupcoord._core import ConnectionLimits
from groupcoord.broker.data_apis import BrokerInfo, DataApiConfig, DataApis
from groupcoord.broker.log import TopicLog, validate_topic_name
from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import (
    GroupCoordinator,
    MemoryOffsetStore,
    OffsetStore,
    SqliteOffsetStore,
)
from groupcoord.coordinator.offsets import StoreError
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.errors import KafkaError
from groupcoord.protocol.wire import DEFAULT_MAX_FRAME_BYTES
from groupcoord.security.acl import ANONYMOUS
from groupcoord.security.authorizer import AclAuthorizer
from groupcoord.security.sasl import SASL_MECHANISMS, SaslSession
from groupcoord.server.acl_admin import AclAdmin
from groupcoord.server.connection import (
    DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_WRITE_TIMEOUT_S,
    Connection,
)
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.event_log import EventLog
from groupcoord.server.fetch_wait import FetchWaiter
from groupcoord.server.group_gateway import GroupGateway
from groupcoord.server.heap import keep_freed_heap
from groupcoord.server.listeners import Endpoint, parse_listener, tls_context, tls_principal
from groupcoord.server.native_listener import NativeListener, bind_listener
from groupcoord.server.stats import ServerStats
from groupcoord.server.thread_policy import favour_io_threads
from groupcoord.storage.acl_store import AclStore, MemoryAclStore, SqliteAclStore
from groupcoord.storage.credential_store import SqliteCredentialStore
from groupcoord.storage.log_store import LogStore, MemoryLogStore, SqliteLogStore

if TYPE_CHECKING:
    from groupcoord.server.metrics import MetricsEndpoint

__all__ = ["DATABASE_NAME", "Server", "ServerConfig", "StartupError", "WallClock", "run"]

log = logging.getLogger("groupcoord.server")

#: The one SQLite file (offsets, groups, topics, record batches) under ``data_dir``.
DATABASE_NAME: Final = "groupcoord.db"
#: How long a graceful shutdown waits for connections to flush ready replies.
SHUTDOWN_GRACE_S: Final = 5.0
#: The garbage collector's young-generation size under ``run``. With CPython's default
#: (700) the objects of every commit in flight (futures, records, responses; alive a few
#: milliseconds while their transaction is written) survive young collections, and the
#: full collections that follow scan the whole heap of thousands of connections: 75-250 ms
#: pauses of the event loop, measured, the heartbeat p99 with commits going on. Most of
#: these objects die young if young collections are rarer.
GC_THRESHOLDS: Final = (50_000, 20, 100)
#: Kafka's ``connections.max.idle.ms`` default (10 minutes)
DEFAULT_CONNECTIONS_MAX_IDLE_MS: Final = 600_000
#: at most one "refused connection" warning per this many seconds (a flood would
#: otherwise write a line per attempt)
_REFUSAL_LOG_INTERVAL_S = 1.0


class StartupError(Exception):
    """The server cannot start for a reason other than its listening socket: the data
    directory, the event log file or a topic of ``ServerConfig.topics``. The message names
    the path or topic and the problem."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """``data_dir=None`` keeps everything in memory (``--memory``). ``topics`` are
    created at start, or grown to the count given if they exist with fewer partitions
    (as ``kafka-topics --alter --partitions`` would); a topic with more partitions than
    given cannot start the server, since Kafka never removes partitions.
    ``advertised_host`` is what Metadata and
    FindCoordinator tell clients (default: ``host``, or this machine's name when
    ``host`` is a wildcard address)."""

    host: str = "127.0.0.1"
    port: int = 9092
    data_dir: str | None = "./groupcoord-data"
    topics: tuple[tuple[str, int], ...] = ()
    auto_create_partitions: int | None = None
    coordinator: CoordinatorConfig = field(default_factory=CoordinatorConfig)
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    node_id: int = 0
    cluster_id: str = "groupcoord"
    advertised_host: str | None = None
    #: append one JSON line per group event here (``--event-log``; see event_log.py)
    event_log: str | None = None
    #: ``"acl"``: every request is checked against the ACLs (``--authorizer acl``, Kafka's
    #: ``authorizer.class.name``); ``None``: everything is allowed
    authorizer: str | None = None
    #: principals allowed everything (``--super-user User:NAME``, Kafka's ``super.users``)
    super_users: tuple[str, ...] = ()
    #: a resource no ACL applies to is open to everyone (Kafka's
    #: ``allow.everyone.if.no.acl.found``; off: deny by default)
    allow_everyone_if_no_acl_found: bool = False
    #: ``PROTOCOL://HOST:PORT`` endpoints (``--listener``); none: one PLAINTEXT listener
    #: on ``host``:``port``
    listeners: tuple[str, ...] = ()
    #: what SASL listeners offer (``--sasl-mechanisms``, Kafka's ``sasl.enabled.mechanisms``)
    sasl_mechanisms: tuple[str, ...] = ("SCRAM-SHA-512", "SCRAM-SHA-256")
    #: TLS of SSL and SASL_SSL listeners; with ``ssl_cafile`` client certificates are
    #: required (mTLS) and name the principal on SSL listeners
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_cafile: str | None = None
    #: connections open at once, all listeners (Kafka's ``max.connections``; None: no limit)
    max_connections: int | None = None
    #: connections open at once from one address (``max.connections.per.ip``)
    max_connections_per_ip: int | None = None
    #: close a connection with no request for this long (``connections.max.idle.ms``;
    #: None: never)
    connections_max_idle_ms: int | None = DEFAULT_CONNECTIONS_MAX_IDLE_MS
    #: reply bytes one connection may hold before it stops reading (connection.py)
    max_buffered_bytes_per_connection: int = DEFAULT_MAX_BUFFERED_BYTES
    #: close a connection whose client takes no reply bytes for this long
    connections_write_timeout_ms: int = int(DEFAULT_WRITE_TIMEOUT_S * 1000)
    #: serve Prometheus metrics over HTTP on this port (0: any free port; None: off)
    metrics_port: int | None = None
    #: the metrics endpoint's address (None: ``host``)
    metrics_host: str | None = None
    #: serve PLAINTEXT listeners with the native shell (native_listener.py): sockets on a
    #: Rust thread, heartbeats and commits of current members answered there. The default:
    #: the asyncio shell (``--no-native-io``) cannot keep heartbeats timely under commit
    #: load (benches/results/durable.md)
    native_io: bool = True

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        for name in (
            "max_connections",
            "max_connections_per_ip",
            "connections_max_idle_ms",
        ):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name.replace('_', '-')} must be positive, got {value}")
        if self.max_buffered_bytes_per_connection < 1:
            raise ValueError(
                "max buffered bytes per connection must be positive, got "
                f"{self.max_buffered_bytes_per_connection}"
            )
        if self.connections_write_timeout_ms < 1:
            raise ValueError(
                f"write timeout must be positive, got {self.connections_write_timeout_ms}"
            )
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"metrics port must be in [0, 65535], got {self.metrics_port}")
        if self.max_frame_bytes < 1:
            raise ValueError(f"max frame bytes must be positive, got {self.max_frame_bytes}")
        if self.auto_create_partitions is not None and self.auto_create_partitions < 1:
            raise ValueError(
                f"auto-create partitions must be at least 1, got {self.auto_create_partitions}"
            )
        seen: dict[str, int] = {}
        for name, partitions in self.topics:
            validate_topic_name(name)
            if partitions < 1:
                raise ValueError(f"topic {name!r} needs at least 1 partition, got {partitions}")
            if name in seen:
                # two counts for one topic: neither can be right, so none is picked
                raise ValueError(
                    f"topic {name!r} is given twice ({name}:{seen[name]} and {name}:{partitions})"
                )
            seen[name] = partitions
        endpoints = self.endpoints()
        if any(e.tls for e in endpoints) and not (self.ssl_certfile and self.ssl_keyfile):
            raise ValueError("SSL and SASL_SSL listeners need --ssl-certfile and --ssl-keyfile")
        if any(e.sasl for e in endpoints):
            if self.data_dir is None:
                raise ValueError(
                    "a SASL listener needs --data-dir: the users (groupcoord users add) are "
                    "stored there"
                )
            unknown = [m for m in self.sasl_mechanisms if m not in SASL_MECHANISMS]
            if unknown or not self.sasl_mechanisms:
                raise ValueError(
                    f"--sasl-mechanisms: {', '.join(unknown) or 'none given'} "
                    f"(supported: {', '.join(SASL_MECHANISMS)})"
                )
        if self.authorizer not in (None, "acl"):
            raise ValueError(f"unknown authorizer {self.authorizer!r} (the one there is: acl)")
        if self.authorizer is None and (self.super_users or self.allow_everyone_if_no_acl_found):
            raise ValueError(
                "--super-user and --allow-everyone-if-no-acl-found need --authorizer acl"
            )
        for principal in self.super_users:
            kind, sep, name = principal.partition(":")
            if not (kind and sep and name):
                raise ValueError(f"super user {principal!r} is not a principal like User:alice")

    def endpoints(self) -> list[Endpoint]:
        """The listeners (``listeners``, or PLAINTEXT on ``host``:``port``)."""
        if not self.listeners:
            return [Endpoint("PLAINTEXT", self.host, self.port)]
        return [parse_listener(spec) for spec in self.listeners]

    def serves_natively(self, endpoint: Endpoint) -> bool:
        """Whether the native shell serves ``endpoint``: PLAINTEXT with ``native_io`` (TLS
        and SASL listeners are always asyncio's)."""
        return self.native_io and endpoint.protocol == "PLAINTEXT"


class WallClock:
    """Milliseconds since the epoch as of the start, advanced by the monotonic clock.

    Timestamps (commit times, log append times) are wall-clock times that stay
    meaningful across restarts, while a system clock stepped during the run (NTP, a
    suspended VM) neither moves time backwards (the coordinator refuses that) nor jumps
    it forward and expires every session at once.
    """

    __slots__ = ("_mono_start_ns", "_wall_start_ms")

    def __init__(self) -> None:
        self._wall_start_ms = time.time_ns() // 1_000_000
        self._mono_start_ns = time.monotonic_ns()

    def __call__(self) -> int:
        return self._wall_start_ms + (time.monotonic_ns() - self._mono_start_ns) // 1_000_000


class Server:
    """The Kafka-protocol server. ``await start()``, then ``host``/``port`` are the
    bound address; ``await serve_forever()`` until :meth:`close` is called."""

    def __init__(self, config: ServerConfig, clock: Callable[[], int] | None = None) -> None:
        self.config = config
        self.clock = WallClock() if clock is None else clock
        self.host = config.host
        self.port = config.port
        self._listeners: list[asyncio.Server] = []
        #: PLAINTEXT listeners served by the native shell (native_io)
        self._native: list[NativeListener] = []
        self._connections: dict[Connection, asyncio.Task[None]] = {}
        self._closed = asyncio.Event()
        self._closing = False
        self.topic_log: TopicLog | None = None
        self.gateway: GroupGateway | None = None
        self.data_apis: DataApis | None = None
        self._fetches: FetchWaiter | None = None
        self.event_log: EventLog | None = None
        self._credentials: SqliteCredentialStore | None = None
        #: the bound address of each listener, in ``config.endpoints()`` order
        self.endpoints: list[Endpoint] = []
        #: each listener's endpoint and dispatcher (same order)
        self._routes: list[tuple[Endpoint, Dispatcher]] = []
        self._acl_store: AclStore | None = None
        #: open connections, in total and per client address, over every listener of
        #: either shell (max_connections, max_connections_per_ip)
        self._limits = ConnectionLimits(config.max_connections, config.max_connections_per_ip)
        self._refused_unlogged = 0
        self._refusal_logged_at = -_REFUSAL_LOG_INTERVAL_S
        self._idle_timer: asyncio.TimerHandle | None = None
        #: what the server counts (None without metrics_port: nothing is counted)
        self.stats: ServerStats | None = None
        self.metrics: MetricsEndpoint | None = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        config = self.config
        offsets, records = _open_stores(config.data_dir)
        try:
            topic_log = TopicLog(records)
        except StoreError as exc:
            offsets.close()
            records.close()
            raise StartupError(f"data directory {config.data_dir}: {exc}") from exc
        except BaseException:
            offsets.close()
            records.close()
            raise
        self.topic_log = topic_log
        try:
            for name, partitions in config.topics:
                _ensure_topic(topic_log, name, partitions)
            coordinator = GroupCoordinator(
                config.coordinator, now_ms=self.clock(), stored=offsets.load(), topics=topic_log
            )
            if config.event_log is not None:
                try:
                    self.event_log = EventLog(config.event_log)
                except OSError as exc:
                    raise StartupError(
                        f"cannot open the event log {config.event_log}: {exc.strerror or exc}"
                    ) from exc
            acls = self._open_acls()
        except BaseException:
            offsets.close()
            topic_log.close()
            if self.event_log is not None:
                self.event_log.close()
            if self._acl_store is not None:
                self._acl_store.close()
            raise
        try:
            self._credentials = self._open_credentials()
            tls = None
            if config.ssl_certfile and config.ssl_keyfile:
                try:
                    tls = tls_context(config.ssl_certfile, config.ssl_keyfile, config.ssl_cafile)
                except ValueError as exc:
                    raise StartupError(str(exc)) from exc
        except BaseException:
            offsets.close()
            topic_log.close()
            if self.event_log is not None:
                self.event_log.close()
            if self._acl_store is not None:
                self._acl_store.close()
            raise
        # a SQLite store is written off the loop (group commit); memory at once
        self.gateway = GroupGateway(
            coordinator, self.clock, offsets, threaded=config.data_dir is not None
        )
        if self.event_log is not None:
            self.event_log.attach(self.gateway)
        if config.metrics_port is not None:
            self.stats = ServerStats()
            self.stats.attach(self.gateway)
        gateway = self.gateway
        # KIP-848 groups see the log's topics, by the ids Metadata gives clients
        gateway.update_topics(topic_metadata(topic_log))
        topic_log.add_topics_listener(lambda: gateway.update_topics(topic_metadata(topic_log)))
        data_config = DataApiConfig(auto_create_partitions=config.auto_create_partitions)
        fetches: FetchWaiter | None = None
        for index, endpoint in enumerate(config.endpoints()):
            native_socket = None
            if config.serves_natively(endpoint):
                native_socket = bind_listener(endpoint.host, endpoint.port)
                port = int(native_socket.getsockname()[1])
            else:
                # connections of listener ``index`` go to ``self._routes[index]``, filled
                # in below once the bound port is known (nothing is accepted before
                # start_serving)
                listener = await asyncio.start_server(
                    functools.partial(self._on_connection, index),
                    endpoint.host,
                    endpoint.port,
                    ssl=tls if endpoint.tls else None,
                    start_serving=False,
                    reuse_address=True,
                )
                self._listeners.append(listener)
                port = int(listener.sockets[0].getsockname()[1])
            bound = Endpoint(endpoint.protocol, endpoint.host, port)
            self.endpoints.append(bound)
            # each listener tells clients its own address (Metadata, FindCoordinator)
            broker = BrokerInfo(
                node_id=config.node_id,
                host=_advertised(config, bound.host),
                port=bound.port,
                cluster_id=config.cluster_id,
            )
            data_apis = DataApis(topic_log, broker, data_config, self.clock)
            if fetches is None:
                self.data_apis = data_apis
                fetches = self._fetches = FetchWaiter(data_apis.fetch_satisfied)
                topic_log.add_append_listener(fetches.on_append)
            dispatcher = Dispatcher(
                broker=broker,
                groups=gateway,
                data_apis=data_apis,
                fetches=fetches,
                acls=acls,
                sasl=bound.sasl,
            )
            self._routes.append((bound, dispatcher))
            if native_socket is not None:
                self._native.append(self._native_listener(native_socket, dispatcher, gateway))
        self.host, self.port = self.endpoints[0].host, self.endpoints[0].port
        if self.stats is not None:
            # imported here: prometheus_client is loaded only when metrics are served
            from groupcoord.server.metrics import MetricsEndpoint

            try:
                self.metrics = MetricsEndpoint.start(
                    self, config.metrics_host or config.host, config.metrics_port or 0
                )
            except OSError as exc:
                raise StartupError(
                    f"cannot serve metrics on port {config.metrics_port}: {exc.strerror or exc}"
                ) from exc
            log.info("metrics on http://%s:%d/metrics", self.metrics.host, self.metrics.port)
        for listener in self._listeners:
            await listener.start_serving()
        for native in self._native:
            native.start()
        self._arm_idle_timer()
        for endpoint in self.endpoints:
            log.info(
                "serving %s on %s:%d (%s I/O; %s)",
                endpoint.protocol,
                endpoint.host,
                endpoint.port,
                "native" if config.serves_natively(endpoint) else "asyncio",
                "in memory" if config.data_dir is None else os.path.abspath(config.data_dir),
            )

    def _native_listener(
        self, sock: socket.socket, dispatcher: Dispatcher, gateway: GroupGateway
    ) -> NativeListener:
        """A listener on the native shell; it answers admitted members' heartbeats and
        takes their commits unless an authorizer must see every request."""
        config = self.config
        answer_natively = config.authorizer is None
        native = NativeListener(
            sock,
            dispatcher,
            now_ms=self.clock(),
            max_frame_bytes=config.max_frame_bytes,
            answer_natively=answer_natively,
            offset_metadata_max_bytes=config.coordinator.offset_metadata_max_bytes,
            max_buffered_bytes=config.max_buffered_bytes_per_connection,
            write_timeout_ms=config.connections_write_timeout_ms,
            idle_ms=config.connections_max_idle_ms,
            limits=self._limits,
            stats=self.stats,
        )
        if answer_natively:
            gateway.attach_native(native.shell)
        return native

    def _open_credentials(self) -> SqliteCredentialStore | None:
        """The users of SASL listeners (none without one)."""
        config = self.config
        if not any(e.sasl for e in config.endpoints()) or config.data_dir is None:
            return None
        try:
            return SqliteCredentialStore(os.path.join(config.data_dir, DATABASE_NAME))
        except (StoreError, sqlite3.Error) as exc:
            raise StartupError(f"data directory {config.data_dir}: {exc}") from exc

    def _open_acls(self) -> AclAdmin:
        """The authorizer with its stored bindings (none without ``authorizer``)."""
        config = self.config
        if config.authorizer is None:
            return AclAdmin(None, None)
        if config.data_dir is None:
            store: AclStore = MemoryAclStore()
        else:
            try:
                store = SqliteAclStore(os.path.join(config.data_dir, DATABASE_NAME))
            except (StoreError, sqlite3.Error) as exc:
                raise StartupError(f"data directory {config.data_dir}: {exc}") from exc
        self._acl_store = store
        try:
            bindings = store.load()
        except StoreError as exc:
            raise StartupError(f"data directory {config.data_dir}: {exc}") from exc
        authorizer = AclAuthorizer(
            bindings,
            super_users=config.super_users,
            allow_if_no_acl=config.allow_everyone_if_no_acl_found,
        )
        log.info(
            "ACL authorizer on: %d ACLs, super users %s",
            len(authorizer),
            ", ".join(sorted(config.super_users)) or "none",
        )
        return AclAdmin(authorizer, store)

    async def serve_forever(self) -> None:
        await self._closed.wait()

    async def close(self) -> None:
        """Graceful shutdown (see the module docstring). Safe to call twice."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        try:
            for listener in self._listeners:
                listener.close()
            if self.gateway is not None:
                # answer the commits already received before the connections close
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.gateway.flush(), SHUTDOWN_GRACE_S)
            for native in self._native:
                native.close()
            for connection in list(self._connections):
                connection.close("server shutdown")
            if self._fetches is not None:
                self._fetches.close()
            tasks = list(self._connections.values())
            if tasks:
                _, late = await asyncio.wait(tasks, timeout=SHUTDOWN_GRACE_S)
                for task in late:
                    task.cancel()
                await asyncio.gather(*late, return_exceptions=True)
            for listener in self._listeners:
                await listener.wait_closed()
        finally:
            if self.gateway is not None:
                self.gateway.close()
            if self.topic_log is not None:
                self.topic_log.close()
            if self.event_log is not None:
                self.event_log.close()
            if self._acl_store is not None:
                self._acl_store.close()
            if self._credentials is not None:
                self._credentials.close()
            if self.metrics is not None:
                self.metrics.close()
            log.info("stopped")
            self._closed.set()

    @property
    def connections(self) -> int:
        return len(self._connections) + sum(n.connections for n in self._native)

    # ------------------------------------------------------------------ connections

    async def _on_connection(
        self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        endpoint, dispatcher = self._routes[index]
        if self._closing:
            writer.close()
            return
        peer = writer.get_extra_info("peername")
        if not isinstance(peer, tuple):
            writer.transport.abort()  # reset before it was accepted: nobody to serve
            return
        address = str(peer[0])
        refused = self._limits.open(address)
        if refused is not None:
            self._refuse(address, refused)
            writer.transport.abort()
            return
        try:
            await self._serve_connection(endpoint, dispatcher, reader, writer, address)
        finally:
            self._limits.close(address)

    async def _serve_connection(
        self,
        endpoint: Endpoint,
        dispatcher: Dispatcher,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        address: str,
    ) -> None:
        principal = ANONYMOUS
        if endpoint.tls:
            principal = tls_principal(writer.get_extra_info("peercert")) or ANONYMOUS
        sasl = None
        if endpoint.sasl:
            credentials = self._credentials
            assert credentials is not None
            sasl = SaslSession(self.config.sasl_mechanisms, credentials.lookup)
        config = self.config
        connection = Connection(
            reader,
            writer,
            dispatcher,
            config.max_frame_bytes,
            sasl=sasl,
            principal=principal,
            max_buffered_bytes=config.max_buffered_bytes_per_connection,
            write_timeout_s=config.connections_write_timeout_ms / 1000,
            stats=self.stats,
        )
        task = asyncio.current_task()
        assert task is not None
        self._connections[connection] = task
        log.debug(
            "connection from %s (%s)",
            connection.peer,
            endpoint.protocol,
            extra={"client": connection.peer, "listener": endpoint.protocol},
        )
        try:
            await connection.run()
        finally:
            del self._connections[connection]

    def _refuse(self, address: str, limit: str) -> None:
        if self.stats is not None:
            self.stats.refused(limit)
        self._refused_unlogged += 1
        now = time.monotonic()
        if now - self._refusal_logged_at >= _REFUSAL_LOG_INTERVAL_S:
            log.warning(
                "refused %d connection(s) (latest from %s): %s reached (%d open)",
                self._refused_unlogged,
                address,
                limit,
                self._limits.open_connections,
            )
            self._refused_unlogged = 0
            self._refusal_logged_at = now

    def _arm_idle_timer(self) -> None:
        idle_ms = self.config.connections_max_idle_ms
        if idle_ms is None or self._closing:
            return
        # checked 4 times per timeout: a connection closes within 1.25 x the timeout
        interval_s = min(max(idle_ms / 4000, 0.01), 30.0)
        self._idle_timer = asyncio.get_running_loop().call_later(interval_s, self._close_idle)

    def _close_idle(self) -> None:
        """Close the connections idle for ``connections_max_idle_ms`` (Kafka's selector
        does this on every poll)."""
        idle_ms = self.config.connections_max_idle_ms
        assert idle_ms is not None
        cutoff = time.monotonic() - idle_ms / 1000
        for connection in list(self._connections):
            if connection.last_request <= cutoff and connection.idle:
                log.info(
                    "closing connection %s: no request for %d ms (connections.max.idle.ms)",
                    connection.peer,
                    idle_ms,
                    extra={"client": connection.peer},
                )
                if self.stats is not None:
                    self.stats.closed("idle")
                connection.close("idle")
        self._arm_idle_timer()

    @property
    def native_listeners(self) -> list[NativeListener]:
        """The listeners served by the native shell (``native_io``), in endpoint order."""
        return list(self._native)

    @property
    def open_connections(self) -> list[Connection]:
        return list(self._connections)

    @property
    def per_ip_connections(self) -> dict[str, int]:
        """Open connections per client address, over every listener."""
        return self._limits.per_ip()


def topic_metadata(topic_log: TopicLog) -> list[TopicMetadata]:
    """The coordinator's view of the log's topics (same names, ids and partition counts)."""
    return [
        TopicMetadata(name=t.name, topic_id=t.topic_id, partitions=t.partitions)
        for t in topic_log.topics().values()
    ]


def _ensure_topic(topic_log: TopicLog, name: str, partitions: int) -> None:
    """Create ``name``, or grow it to ``partitions``; anything else is a StartupError."""
    existing = topic_log.topic(name)
    try:
        if existing is None:
            topic_log.create_topic(name, partitions)
            log.info("created topic %s with %d partitions", name, partitions)
        elif existing.partitions != partitions:
            topic_log.add_partitions(name, partitions)
            log.info(
                "grew topic %s from %d to %d partitions", name, existing.partitions, partitions
            )
    except KafkaError as exc:
        raise StartupError(f"topic {name}:{partitions}: {exc}") from exc


def _open_stores(data_dir: str | None) -> tuple[OffsetStore, LogStore]:
    """Both stores, or a StartupError naming the data directory and what is wrong with it."""
    if data_dir is None:
        return MemoryOffsetStore(), MemoryLogStore()
    if os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise StartupError(f"data directory {data_dir}: exists and is not a directory")
    try:
        os.makedirs(data_dir, exist_ok=True)
    except OSError as exc:
        raise StartupError(
            f"data directory {data_dir}: cannot create it: {exc.strerror or exc}"
        ) from exc
    path = os.path.join(data_dir, DATABASE_NAME)
    try:
        offsets = SqliteOffsetStore(path)
    except (StoreError, sqlite3.Error) as exc:
        raise StartupError(f"data directory {data_dir}: {exc}") from exc
    try:
        records = SqliteLogStore(path)
    except (StoreError, sqlite3.Error) as exc:
        offsets.close()
        raise StartupError(f"data directory {data_dir}: {exc}") from exc
    except BaseException:
        offsets.close()
        raise
    return offsets, records


def _advertised(config: ServerConfig, host: str) -> str:
    """What clients are told to connect to for a listener bound to ``host``."""
    if config.advertised_host:
        return config.advertised_host
    if host in ("", "0.0.0.0", "::"):
        return socket.getfqdn()
    return host


def run(config: ServerConfig, on_ready: Callable[[str, int], None] | None = None) -> None:
    """Run a server until SIGTERM or SIGINT, then shut down gracefully. ``on_ready(host,
    port)`` is called once it accepts connections."""

    async def main() -> None:
        server = Server(config)
        await server.start()
        # what start-up built lives as long as the server: out of the collector's way
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        if config.native_io:
            favour_io_threads()  # the I/O threads carry the latency (thread_policy.py)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            if on_ready is not None:
                on_ready(server.host, server.port)
            stopper = asyncio.ensure_future(stop.wait())
            serving = asyncio.ensure_future(server.serve_forever())
            await asyncio.wait((stopper, serving), return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            serving.cancel()
            log.info("shutting down")
        finally:
            with contextlib.suppress(Exception):
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
            await server.close()

    if not keep_freed_heap():
        log.debug("this C library has no mallopt: freed heap goes back to the kernel")
    asyncio.run(main())
