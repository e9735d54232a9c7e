"""Runs the conformance catalogue over the wire against one Kafka-protocol server.

Not a test module: ``test_conformance.py`` runs it against ``groupcoord serve``,
``tools/conformance_goldens.py`` against Apache Kafka. Requests are built and responses
read with the project's own codec (:mod:`groupcoord.protocol.wire` through
:class:`~groupcoord.protocol.client.ClientCodec`, kio's schemas), on plain blocking
sockets: one connection per simulated client, as a parked JoinGroup holds back every later
request on its connection (Kafka reads one request per connection at a time).

A case is a function of a :class:`Run`; every response it receives is recorded, in order,
under the step's label, as JSON (:func:`to_json`): the golden files hold these records,
normalized (``conformance_compare``).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import socket
import sys
import time
import typing
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema

from groupcoord.protocol.client import ClientCodec, ReceivedResponse
from groupcoord.protocol.wire import MalformedFrameError

#: no step waits longer than this for a response it expects
RESPONSE_TIMEOUT_S = 30.0
#: how long a request the server parks is given to reach the server before the next one
SETTLE_S = 0.3

Record = dict[str, Any]


class ConnectionClosed(Exception):
    """The server closed the connection instead of answering (Kafka does this for a
    request version it does not serve): recorded, and it ends the case."""


# --------------------------------------------------------------------------------------
# building requests from plain values, reading responses into JSON
# --------------------------------------------------------------------------------------


def build(api_key: int, version: int, **fields: Any) -> Any:
    """The kio request of (api, version) from plain values: ints for timeouts (ms), dicts
    for nested entities, lists for arrays, str for UUIDs. Fields the version lacks are
    dropped (so one case text serves every version); a required field that is missing
    raises TypeError."""
    return _entity(load_request_schema(api_key, version), fields)


def _entity(cls: type[Any], values: Mapping[str, Any]) -> Any:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in values:
            continue
        kwargs[f.name] = _value(hints[f.name], f.metadata.get("kafka_type"), values[f.name])
    return cls(**kwargs)


def _value(hint: Any, kafka_type: str | None, value: Any) -> Any:
    if value is None:
        return None
    if kafka_type == "timedelta_i32":
        from kio.static.primitive import i32Timedelta

        return i32Timedelta.parse(datetime.timedelta(milliseconds=value))
    if kafka_type == "timedelta_i64":
        from kio.static.primitive import i64Timedelta

        return i64Timedelta.parse(datetime.timedelta(milliseconds=value))
    if kafka_type == "uuid":
        return value if isinstance(value, uuid.UUID) else uuid.UUID(value)
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple or (args and typing.get_origin(args[0]) is tuple):
        tup = hint if typing.get_origin(hint) is tuple else args[0]
        item = typing.get_args(tup)[0]
        return tuple(_item(item, kafka_type, v) for v in value)
    if dataclasses.is_dataclass(hint):
        return _entity(hint, value)
    if args and dataclasses.is_dataclass(args[0]):
        return _entity(args[0], value)
    return value


def _item(hint: Any, kafka_type: str | None, value: Any) -> Any:
    if dataclasses.is_dataclass(hint):
        return _entity(hint, value)
    return _value(hint, kafka_type, value)


def to_json(value: Any) -> Any:
    """A kio response (or any part of it) as JSON values: entities as objects (field
    order), error codes by name, timeouts in ms, bytes as hex, UUIDs as strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.name.upper()
    if isinstance(value, bool | str | int | float) or value is None:
        return value
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple | list | frozenset):
        return [to_json(v) for v in value]
    raise TypeError(f"cannot record a {type(value).__name__}: {value!r}")


# --------------------------------------------------------------------------------------
# connections
# --------------------------------------------------------------------------------------


class Conn:
    """One client connection (blocking socket); responses in arrival order."""

    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.sock = socket.create_connection((host, port), timeout=RESPONSE_TIMEOUT_S)
        self.codec = ClientCodec(client_id=client_id)
        self.ready: list[ReceivedResponse] = []
        self.closed = False

    def send(self, request: Any) -> int:
        correlation_id, frame = self.codec.encode(request)
        try:
            self.sock.sendall(frame)
        except OSError as e:
            raise ConnectionClosed(f"send failed: {e}") from None
        return correlation_id

    def poll(self, timeout_s: float) -> None:
        """Read what arrives within ``timeout_s`` (raises ConnectionClosed on EOF)."""
        if self.closed:
            raise ConnectionClosed("closed earlier")
        self.sock.settimeout(max(timeout_s, 0.001))
        try:
            data = self.sock.recv(1 << 20)
        except TimeoutError:
            return
        except OSError as e:
            self.closed = True
            raise ConnectionClosed(str(e)) from None
        if not data:
            self.closed = True
            raise ConnectionClosed("closed by the server")
        try:
            self.ready.extend(self.codec.feed(data))
        except MalformedFrameError as e:
            raise AssertionError(f"unreadable response: {e}") from None

    def take(self, correlation_id: int) -> ReceivedResponse | None:
        for i, received in enumerate(self.ready):
            if received.correlation_id == correlation_id:
                return self.ready.pop(i)
        return None

    def settle(self, correlation_id: int, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the answer, leaving it to be taken later."""
        deadline = time.monotonic() + timeout_s
        while not any(r.correlation_id == correlation_id for r in self.ready):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.poll(remaining)

    def wait(self, correlation_id: int, timeout_s: float) -> ReceivedResponse | None:
        deadline = time.monotonic() + timeout_s
        while True:
            received = self.take(correlation_id)
            if received is not None:
                return received
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.poll(remaining)

    def close(self) -> None:
        self.sock.close()


@dataclass(slots=True)
class Pending:
    conn: Conn
    correlation_id: int
    step: str
    api_key: int
    version: int


class Run:
    """One case against one server: connections, requests, and the record of answers."""

    def __init__(self, host: str, port: int, case: str) -> None:
        self.host = host
        self.port = port
        self.case = case
        self.records: list[Record] = []
        self._conns: list[Conn] = []

    @property
    def group(self) -> str:
        """The case's own group id (cases share a server)."""
        return f"{self.case}-g"

    def connect(self, client_id: str = "conformance") -> Conn:
        conn = Conn(self.host, self.port, client_id)
        self._conns.append(conn)
        return conn

    def close(self) -> None:
        for conn in self._conns:
            conn.close()

    # ------------------------------------------------------------------ steps

    def _record(self, step: str, record: Record) -> None:
        if any(r["step"] == step for r in self.records):
            raise ValueError(f"case {self.case}: step label {step!r} used twice")
        self.records.append({"step": step, **record})

    def send(self, conn: Conn, step: str, api_key: int, version: int, **fields: Any) -> Pending:
        """Send a request whose answer comes later (a JoinGroup the coordinator parks)."""
        request = build(api_key, version, **fields)
        try:
            correlation_id = conn.send(request)
            # Requests on different connections may be processed in any order; a case
            # that sends on one connection and then on another means that order, so wait
            # until this one is answered or (parked) surely processed.
            conn.settle(correlation_id, SETTLE_S)
        except ConnectionClosed:
            self._record(step, {"api": api_key, "version": version, "closed": True})
            raise
        return Pending(conn, correlation_id, step, api_key, version)

    def receive(self, pending: Pending, timeout_s: float = RESPONSE_TIMEOUT_S) -> Any:
        """The answer to ``pending`` (recorded); AssertionError if none within the timeout."""
        head = {"api": pending.api_key, "version": pending.version}
        try:
            received = pending.conn.wait(pending.correlation_id, timeout_s)
        except ConnectionClosed:
            self._record(pending.step, {**head, "closed": True})
            raise
        if received is None:
            raise AssertionError(
                f"case {self.case}, step {pending.step}: no answer within {timeout_s} s"
            )
        self._record(
            pending.step,
            {**head, "response": self._own(pending.api_key, to_json(received.response))},
        )
        return received.response

    def _own(self, api_key: int, response: Record) -> Record:
        # Cases share a server: listings of every group (ListGroups) or every topic
        # (Metadata) keep only this case's entries (and __consumer_offsets, which a warm Kafka
        # always has; __transaction_state appears once any case looks up a transaction).
        mine = f"{self.case}-"
        if api_key == 16:
            response["groups"] = [g for g in response["groups"] if g["group_id"].startswith(mine)]
        elif api_key == 3:
            keep = (mine, "__consumer_offsets")
            response["topics"] = [
                t for t in response["topics"] if t["name"] is None or t["name"].startswith(keep)
            ]
        return response

    def call(self, conn: Conn, step: str, api_key: int, version: int, **fields: Any) -> Any:
        """One round trip, recorded."""
        return self.receive(self.send(conn, step, api_key, version, **fields))

    def call_any(self, step: str, api_key: int, version: int, **fields: Any) -> Any:
        """One round trip on a connection of its own, for version sweeps: a version the
        server does not serve closes that connection (Kafka), which is recorded and the
        case goes on (``None`` is returned)."""
        conn = self.connect()
        try:
            return self.call(conn, step, api_key, version, **fields)
        except ConnectionClosed:
            return None
        finally:
            conn.close()

    def unanswered(self, pending: Pending, within_s: float, step: str) -> bool:
        """Record whether ``pending`` is still unanswered after ``within_s`` (a parked
        JoinGroup or SyncGroup); an early answer is recorded as such and consumed."""
        received = pending.conn.wait(pending.correlation_id, within_s)
        if received is None:
            self._record(step, {"unanswered": pending.step})
            return True
        self._record(
            step,
            {
                "api": pending.api_key,
                "version": pending.version,
                "answered_early": to_json(received.response),
            },
        )
        return False

    def setup(self, conn: Conn, api_key: int, version: int, **fields: Any) -> Any:
        """A request that is not part of the record (it must simply work: an error code
        anywhere in an OffsetCommit answer fails the case)."""
        request = build(api_key, version, **fields)
        correlation_id = conn.send(request)
        received = conn.wait(correlation_id, RESPONSE_TIMEOUT_S)
        if received is None:
            raise AssertionError(f"case {self.case}: setup request {api_key} not answered")
        if api_key == 8:
            errors = {
                p.error_code.name
                for t in received.response.topics
                for p in t.partitions
                if p.error_code != 0
            }
            if errors:
                raise AssertionError(f"case {self.case}: setup commit failed: {errors}")
        return received.response

    def create_topic(self, name: str, partitions: int) -> None:
        """Create ``name`` (not recorded) and wait until every partition has a leader."""
        conn = self.connect("conformance-setup")
        created = self.setup(
            conn, 19, 4, timeout=30_000, validate_only=False,
            topics=[{"name": name, "num_partitions": partitions, "replication_factor": 1,
                     "assignments": [], "configs": []}],
        )  # fmt: skip
        if created.topics[0].error_code != 0:
            raise AssertionError(f"creating {name}: {created.topics[0].error_code.name}")
        deadline = time.monotonic() + RESPONSE_TIMEOUT_S
        while True:
            metadata = self.setup(
                conn, 3, 9, topics=[{"name": name}], allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )  # fmt: skip
            (topic,) = metadata.topics
            if (
                topic.error_code == 0
                and all(p.error_code == 0 and p.leader_id >= 0 for p in topic.partitions)
                and len(topic.partitions) == partitions
            ):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"topic {name} has no leaders after {RESPONSE_TIMEOUT_S} s")
            time.sleep(0.1)


# --------------------------------------------------------------------------------------
# running a catalogue
# --------------------------------------------------------------------------------------


Case = Callable[[Run], None]


def run_case(host: str, port: int, name: str, case: Case) -> list[Record]:
    """The records of one case; a closed connection ends it (recorded)."""
    run = Run(host, port, name)
    try:
        case(run)
    except ConnectionClosed:
        pass
    except (AssertionError, OSError, TypeError, ValueError) as e:
        # recorded, not raised: one broken case must not hide what the others found
        run.records.append({"step": "!failed", "error": f"{type(e).__name__}: {e}"})
    finally:
        run.close()
    return run.records


def run_catalogue(
    bootstrap: str,
    cases: Mapping[str, Case],
    *,
    topics: Mapping[str, int] | None = None,
    workers: int = 4,
) -> dict[str, list[Record]]:
    """Every case's records, by name, after creating the shared ``topics`` (name ->
    partitions). Cases are independent (each has its own groups and topics), so they run
    ``workers`` at a time: many wait out session timeouts."""
    host, _, port = bootstrap.rpartition(":")
    prelude = Run(host, int(port), "prelude")
    try:
        for name, partitions in (topics or {}).items():
            prelude.create_topic(name, partitions)
    finally:
        prelude.close()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {
            name: pool.submit(run_case, host, int(port), name, case) for name, case in cases.items()
        }
        return {name: futures[name].result() for name in sorted(cases)}
