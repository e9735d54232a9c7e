"""The ``groupcoord`` command line (also ``python -m groupcoord``).

``groupcoord serve`` runs the Kafka-protocol coordinator server; ``groupcoord assign FILE``
plans an assignment from a JSON description of a group; ``groupcoord simulate SCENARIO``
runs the rebalance simulator; ``groupcoord sweep GRID`` runs a grid of simulations on Spark;
``groupcoord bench`` prints the assignor comparison table.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from groupcoord._version import __version__
from groupcoord.assignors import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from groupcoord.cli_help import PlainHelpCommand, choice, choice_metavar
from groupcoord.config import CoordinatorConfig
from groupcoord.errors import GroupcoordError
from groupcoord.protocol.wire import DEFAULT_MAX_FRAME_BYTES
from groupcoord.types import Subscription, TopicPartition

if TYPE_CHECKING:
    from groupcoord.storage.credential_store import SqliteCredentialStore

app = typer.Typer(
    name="groupcoord",
    help="Kafka consumer-group coordination: assignors with a Rust core.",
    no_args_is_help=True,
    add_completion=False,
    # real bugs should show a plain traceback, not a page of local variables
    pretty_exceptions_enable=False,
    # plain help, readable at 80 columns (see groupcoord.cli_help)
    rich_markup_mode=None,
)

#: exit status for bad input, as for command-line usage errors
EXIT_BAD_INPUT = 2


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"groupcoord {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Kafka consumer-group coordination: assignors with a Rust core."""


class AssignorName(StrEnum):
    range = "range"
    roundrobin = "roundrobin"
    sticky = "sticky"
    cooperative_sticky = "cooperative-sticky"


class BackendName(StrEnum):
    rust = "rust"
    python = "python"


_ASSIGNOR_CLASSES: Mapping[AssignorName, type[Assignor]] = {
    AssignorName.range: RangeAssignor,
    AssignorName.roundrobin: RoundRobinAssignor,
    AssignorName.sticky: StickyAssignor,
    AssignorName.cooperative_sticky: CooperativeStickyAssignor,
}

_INT32_MAX = 2**31 - 1
_GROUP_KEYS = {"topics", "members"}
_MEMBER_KEYS = {"topics", "owned_partitions", "generation_id", "group_instance_id"}

ASSIGN_INPUT_HELP = """\
FILE is JSON ("-" reads stdin):

\b
  {"topics": {"orders": 12},
   "members": {"m1": {"topics": ["orders"],
                      "owned_partitions": [["orders", 0]],
                      "generation_id": 3,
                      "group_instance_id": null}}}

Only "topics" is required for a member. Prints
{"assignor": ..., "assignment": {"m1": [["orders", 0], ...]}}.
"""


class BadInput(Exception):
    """The input file cannot describe a group; the message says where and why."""


def _fail(message: str) -> NoReturn:
    typer.echo(f"groupcoord: error: {message}", err=True)
    raise typer.Exit(EXIT_BAD_INPUT)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _keys(obj: Mapping[str, object], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise BadInput(
            f"{where}: unknown key {unknown[0]!r} (expected {', '.join(sorted(allowed))})"
        )


def parse_group(doc: object) -> tuple[dict[str, int], dict[str, Subscription]]:
    """Partition counts and subscriptions from the JSON document of ``groupcoord assign``."""
    if not isinstance(doc, dict):
        raise BadInput(f"the document must be an object, not {type(doc).__name__}")
    _keys(doc, _GROUP_KEYS, "the document")
    missing = sorted(_GROUP_KEYS - set(doc))
    if missing:
        raise BadInput(f'missing "{missing[0]}"')
    topics = doc["topics"]
    if not isinstance(topics, dict):
        raise BadInput('"topics" must be an object of topic name to partition count')
    for topic, count in topics.items():
        if not _is_int(count) or not 0 <= count <= _INT32_MAX:
            raise BadInput(
                f"topics.{topic}: partition count must be an int32 >= 0"
                f" (0 to {_INT32_MAX}, Kafka's partition count type), got {count!r}"
            )
    members = doc["members"]
    if not isinstance(members, dict):
        raise BadInput('"members" must be an object of member id to member')
    subscriptions = {
        member_id: _parse_member(member, f"members.{member_id}")
        for member_id, member in members.items()
    }
    return dict(topics), subscriptions


def _parse_member(member: object, where: str) -> Subscription:
    if not isinstance(member, dict):
        raise BadInput(f"{where}: must be an object, not {type(member).__name__}")
    _keys(member, _MEMBER_KEYS, where)
    if "topics" not in member:
        raise BadInput(f'{where}: missing "topics"')
    topics = member["topics"]
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise BadInput(f"{where}.topics: must be a list of topic names")
    owned = member.get("owned_partitions", [])
    if not isinstance(owned, list):
        raise BadInput(f"{where}.owned_partitions: must be a list of [topic, partition]")
    owned_partitions = []
    for i, pair in enumerate(owned):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not isinstance(pair[0], str)
            or not _is_int(pair[1])
            or not 0 <= pair[1] <= _INT32_MAX
        ):
            raise BadInput(
                f"{where}.owned_partitions[{i}]: expected [topic, partition] with partition"
                f" an int32 >= 0 (0 to {_INT32_MAX}), got {pair!r}"
            )
        owned_partitions.append(TopicPartition(pair[0], pair[1]))
    generation = member.get("generation_id", -1)
    if not _is_int(generation) or not -(2**31) <= generation <= _INT32_MAX:
        raise BadInput(f"{where}.generation_id: must be an int32, got {generation!r}")
    instance = member.get("group_instance_id")
    if instance is not None and not isinstance(instance, str):
        raise BadInput(f"{where}.group_instance_id: must be a string or null, got {instance!r}")
    return Subscription(
        topics,
        owned_partitions=owned_partitions,
        generation_id=generation,
        group_instance_id=instance,
    )


def _read(file: str) -> str:
    if file == "-":
        return sys.stdin.read()
    try:
        return Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {file}: {exc}")


def _render_assignment(name: str, assignment: Mapping[str, list[list[object]]]) -> str:
    # one member per line: readable for people, still one JSON document for tools
    lines = ["{", f'  "assignor": {json.dumps(name)},', '  "assignment": {']
    items = list(assignment.items())
    for i, (member, partitions) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"    {json.dumps(member)}: {json.dumps(partitions)}{comma}")
    lines += ["  }", "}"]
    return "\n".join(lines)


@app.command(
    cls=PlainHelpCommand,
    help="Assign partitions to a group described in JSON.\n\n" + ASSIGN_INPUT_HELP,
)
def assign(
    file: Annotated[
        str,
        typer.Argument(
            metavar="FILE",
            help='JSON file describing the group, or "-" for stdin.',
            show_default=False,
        ),
    ],
    assignor: Annotated[
        AssignorName,
        typer.Option(
            parser=choice(AssignorName),
            metavar=choice_metavar(AssignorName),
            help="The assignment strategy.",
        ),
    ] = AssignorName.range,
    backend: Annotated[
        BackendName,
        typer.Option(
            parser=choice(BackendName),
            metavar=choice_metavar(BackendName),
            help="rust (the core) or python (the reference).",
        ),
    ] = BackendName.rust,
) -> None:
    text = _read(file)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{'stdin' if file == '-' else file} is not valid JSON: {exc}")
    try:
        partitions_per_topic, subscriptions = parse_group(doc)
    except BadInput as exc:
        _fail(str(exc))
    chosen = _ASSIGNOR_CLASSES[assignor](backend=backend.value)
    try:
        result = chosen.assign(partitions_per_topic, subscriptions)
    except (GroupcoordError, ValueError) as exc:
        _fail(str(exc))
    assignment = {
        member: [[tp.topic, tp.partition] for tp in result[member].partitions]
        for member in subscriptions
    }
    typer.echo(_render_assignment(chosen.name, assignment))


@app.command(
    cls=PlainHelpCommand,
    help="Compare the assignors (Rust, the Python reference, kafka-python) and print the"
    " Markdown table.",
)
def bench(
    sizes: Annotated[
        str,
        typer.Option(
            metavar="SIZES",
            help="quick (~2 min), all (adds 2000x1M), smoke, or a comma-separated"
            " list of 100x1k, 100x1k-random, 500x10k, 500x10k-random, 1000x100k, 2000x1M.",
        ),
    ] = "quick",
    peers: Annotated[
        bool,
        typer.Option(
            "--peers/--no-peers",
            help="Also measure the Python reference and kafka-python.",
        ),
    ] = True,
    repeat: Annotated[
        int,
        typer.Option(
            min=1, metavar="N", help="Runs per measurement (fewer for runs over a second)."
        ),
    ] = 5,
    peer_limit: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            metavar="SECONDS",
            help="Skip a peer run estimated to take longer than this many seconds.",
            show_default="5 for --sizes quick, 60 otherwise",
        ),
    ] = None,
) -> None:
    # imported here: the benchmark code is only needed by this command
    from groupcoord.benchmark import render_markdown, resolve_sizes, run_benchmarks

    try:
        scenarios, default_limit = resolve_sizes(sizes)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--sizes") from None
    started = time.perf_counter()
    rows = run_benchmarks(
        scenarios,
        peers=peers,
        repeat=repeat,
        peer_limit=default_limit if peer_limit is None else peer_limit,
        progress=lambda line: typer.echo(line, err=True),
    )
    typer.echo(render_markdown(rows, peers=peers), nl=False)
    limit = default_limit if peer_limit is None else peer_limit
    # the exact command, so a table pasted elsewhere says how to measure it again
    typer.echo(
        f"\nReproduce with: groupcoord bench --sizes {sizes} --repeat {repeat}"
        f" --peer-limit {limit:g}{'' if peers else ' --no-peers'}"
    )
    typer.echo(f"bench took {time.perf_counter() - started:.0f} s", err=True)


DEFAULT_DATA_DIR = "./groupcoord-data"


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class LogFormat(StrEnum):
    text = "text"
    json = "json"


def parse_topic(spec: str) -> tuple[str, int]:
    """``NAME:PARTITIONS`` as given to ``--topic``."""
    name, sep, count = spec.rpartition(":")
    if not sep or not name:
        raise typer.BadParameter(f"expected NAME:PARTITIONS, got {spec!r}", param_hint="--topic")
    try:
        partitions = int(count, 10)
    except ValueError:
        raise typer.BadParameter(
            f"partition count of {spec!r} is not an integer", param_hint="--topic"
        ) from None
    if not 1 <= partitions <= _INT32_MAX:
        raise typer.BadParameter(
            f"{name}: partitions must be in [1, {_INT32_MAX}], got {partitions}",
            param_hint="--topic",
        )
    # imported here: assign/bench do not load the server
    from groupcoord.broker.log import validate_topic_name

    try:
        validate_topic_name(name)
    except GroupcoordError as exc:
        raise typer.BadParameter(str(exc), param_hint="--topic") from None
    return name, partitions


@app.command(
    cls=PlainHelpCommand,
    help="Serve the Kafka protocol: consumer groups, offsets, topics; real clients connect."
    " Prints 'groupcoord listening on HOST:PORT' when ready; SIGTERM/SIGINT stop it cleanly.",
)
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(min=0, max=65535, metavar="PORT", help="Port (0: any free port, printed)."),
    ] = 9092,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="Directory of the SQLite database (groupcoord.db, WAL).",
            show_default=DEFAULT_DATA_DIR,
        ),
    ] = None,
    memory: Annotated[
        bool, typer.Option("--memory", help="Keep everything in memory (nothing survives).")
    ] = False,
    topic: Annotated[
        list[str] | None,
        typer.Option(
            metavar="NAME:PARTITIONS",
            help="Create topic NAME with PARTITIONS at start, or grow it to PARTITIONS"
            " (repeatable, once per topic).",
            show_default=False,
        ),
    ] = None,
    auto_create_partitions: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Create unknown topics clients ask for, with N partitions.",
            show_default="off",
        ),
    ] = None,
    group_min_session_timeout_ms: Annotated[
        int, typer.Option(min=0, metavar="MS", help="Kafka's group.min.session.timeout.ms.")
    ] = 6_000,
    group_max_session_timeout_ms: Annotated[
        int, typer.Option(min=0, metavar="MS", help="Kafka's group.max.session.timeout.ms.")
    ] = 1_800_000,
    group_initial_rebalance_delay_ms: Annotated[
        int, typer.Option(min=0, metavar="MS", help="Kafka's group.initial.rebalance.delay.ms.")
    ] = 3_000,
    group_max_size: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Kafka's group.max.size.", show_default="unbounded"),
    ] = None,
    group_consumer_session_timeout_ms: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="MS",
            help="Kafka's group.consumer.session.timeout.ms (KIP-848 groups); a value below"
            " group.consumer.min.session.timeout.ms lowers that bound to it.",
        ),
    ] = 45_000,
    group_consumer_heartbeat_interval_ms: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="MS",
            help="Kafka's group.consumer.heartbeat.interval.ms (KIP-848 groups); a value below"
            " group.consumer.min.heartbeat.interval.ms lowers that bound to it.",
        ),
    ] = 5_000,
    offsets_retention_minutes: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="MINUTES",
            help="Kafka's offsets.retention.minutes: an Empty group's offsets go this long"
            " after it became Empty (a simple consumer's, after their commit), and the"
            " group with them.",
        ),
    ] = 10_080,
    offsets_retention_check_interval_ms: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="MS",
            help="Kafka's offsets.retention.check.interval.ms: how often expiry is checked.",
        ),
    ] = 600_000,
    max_frame_bytes: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="BYTES",
            help="Largest request frame accepted (socket.request.max.bytes).",
        ),
    ] = DEFAULT_MAX_FRAME_BYTES,
    log_level: Annotated[
        LogLevel,
        typer.Option(
            parser=choice(LogLevel),
            metavar=choice_metavar(LogLevel),
            help="Log level (logs go to stderr).",
        ),
    ] = LogLevel.info,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            parser=choice(LogFormat),
            metavar=choice_metavar(LogFormat),
            help="Log lines as text, or one JSON object per line (timestamp, level, logger,"
            " message, and fields such as group, member, client).",
        ),
    ] = LogFormat.text,
    event_log: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Append one JSON line per group event (rebalance completed, member removed)"
            " to this file, for 'groupcoord analyze'.",
            show_default=False,
        ),
    ] = None,
    authorizer: Annotated[
        str | None,
        typer.Option(
            metavar="acl",
            help="Check every request against ACLs (Kafka's authorizer; deny by default)."
            " Manage them with Kafka's AdminClient / kafka-acls (CreateAcls, DescribeAcls,"
            " DeleteAcls).",
            show_default="off",
        ),
    ] = None,
    super_user: Annotated[
        list[str] | None,
        typer.Option(
            metavar="User:NAME",
            help="A principal allowed everything (Kafka's super.users; repeatable).",
            show_default=False,
        ),
    ] = None,
    allow_everyone_if_no_acl_found: Annotated[
        bool,
        typer.Option(
            "--allow-everyone-if-no-acl-found",
            help="With --authorizer: a resource no ACL names is open to everyone.",
        ),
    ] = False,
    listener: Annotated[
        list[str] | None,
        typer.Option(
            metavar="PROTOCOL://HOST:PORT",
            help="A listener (repeatable): PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, as"
            " Kafka names them. Replaces --host/--port (the ready line names the first).",
            show_default=False,
        ),
    ] = None,
    sasl_mechanisms: Annotated[
        str,
        typer.Option(
            metavar="M1,M2",
            help="What SASL listeners offer: SCRAM-SHA-512, SCRAM-SHA-256, PLAIN (users:"
            " 'groupcoord users add').",
        ),
    ] = "SCRAM-SHA-512,SCRAM-SHA-256",
    ssl_certfile: Annotated[
        Path | None,
        typer.Option(metavar="PEM", help="Server certificate (chain) of TLS listeners."),
    ] = None,
    ssl_keyfile: Annotated[
        Path | None, typer.Option(metavar="PEM", help="Private key of --ssl-certfile.")
    ] = None,
    ssl_cafile: Annotated[
        Path | None,
        typer.Option(
            metavar="PEM",
            help="Require client certificates signed by this CA (mTLS); the subject is the"
            " principal on SSL listeners.",
        ),
    ] = None,
    max_connections: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Kafka's max.connections: connections beyond N (all listeners) are closed at"
            " accept.",
            show_default="unbounded",
        ),
    ] = None,
    max_connections_per_ip: Annotated[
        int | None,
        typer.Option(
            min=1,
            metavar="N",
            help="Kafka's max.connections.per.ip.",
            show_default="unbounded",
        ),
    ] = None,
    connections_max_idle_ms: Annotated[
        int,
        typer.Option(
            min=0,
            metavar="MS",
            help="Kafka's connections.max.idle.ms: close a connection with no request for"
            " this long (0: never).",
        ),
    ] = 600_000,
    max_buffered_bytes_per_connection: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="BYTES",
            help="Reply bytes one connection may hold unsent before the server stops reading"
            " its requests.",
        ),
    ] = 4 * 1024 * 1024,
    connections_write_timeout_ms: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="MS",
            help="Close a connection whose client takes no reply bytes for this long.",
        ),
    ] = 60_000,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            metavar="PORT",
            help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port, logged).",
            show_default="off",
        ),
    ] = None,
    metrics_host: Annotated[
        str | None,
        typer.Option(
            metavar="HOST",
            help="Address of the metrics endpoint.",
            show_default="--host",
        ),
    ] = None,
    native_io: Annotated[
        bool,
        typer.Option(
            "--native-io/--no-native-io",
            help="Serve PLAINTEXT listeners from a Rust I/O thread that also answers the"
            " heartbeats and commits of current members; --no-native-io serves them from"
            " the asyncio loop (SSL and SASL listeners always are).",
        ),
    ] = True,
) -> None:
    # imported here: assign/bench do not need asyncio or the server
    from groupcoord.server import ServerConfig, StartupError, run
    from groupcoord.server.log_format import configure_logging

    if memory and data_dir is not None:
        _fail("--data-dir and --memory exclude each other")
    directory = Path(DEFAULT_DATA_DIR) if data_dir is None else data_dir
    settings: dict[str, object] = {
        "group.min.session.timeout.ms": group_min_session_timeout_ms,
        "group.max.session.timeout.ms": group_max_session_timeout_ms,
        "group.initial.rebalance.delay.ms": group_initial_rebalance_delay_ms,
        "offsets.retention.minutes": offsets_retention_minutes,
        "offsets.retention.check.interval.ms": offsets_retention_check_interval_ms,
    }
    if group_max_size is not None:
        settings["group.max.size"] = group_max_size
    defaults = CoordinatorConfig()
    # a test or a laptop wants faster KIP-848 rebalances than Kafka's minimums allow
    settings["group.consumer.session.timeout.ms"] = group_consumer_session_timeout_ms
    settings["group.consumer.min.session.timeout.ms"] = min(
        group_consumer_session_timeout_ms, defaults.group_consumer_min_session_timeout_ms
    )
    settings["group.consumer.heartbeat.interval.ms"] = group_consumer_heartbeat_interval_ms
    settings["group.consumer.min.heartbeat.interval.ms"] = min(
        group_consumer_heartbeat_interval_ms, defaults.group_consumer_min_heartbeat_interval_ms
    )
    try:
        config = ServerConfig(
            host=host,
            port=port,
            data_dir=None if memory else str(directory),
            topics=tuple(parse_topic(t) for t in topic or ()),
            auto_create_partitions=auto_create_partitions,
            coordinator=CoordinatorConfig.from_dict(settings),
            max_frame_bytes=max_frame_bytes,
            event_log=None if event_log is None else str(event_log),
            authorizer=authorizer,
            super_users=tuple(super_user or ()),
            allow_everyone_if_no_acl_found=allow_everyone_if_no_acl_found,
            listeners=tuple(listener or ()),
            sasl_mechanisms=tuple(m.strip() for m in sasl_mechanisms.split(",") if m.strip()),
            ssl_certfile=None if ssl_certfile is None else str(ssl_certfile),
            ssl_keyfile=None if ssl_keyfile is None else str(ssl_keyfile),
            ssl_cafile=None if ssl_cafile is None else str(ssl_cafile),
            max_connections=max_connections,
            max_connections_per_ip=max_connections_per_ip,
            connections_max_idle_ms=connections_max_idle_ms or None,
            max_buffered_bytes_per_connection=max_buffered_bytes_per_connection,
            connections_write_timeout_ms=connections_write_timeout_ms,
            metrics_port=metrics_port,
            metrics_host=metrics_host,
            native_io=native_io,
        )
    except (ValueError, GroupcoordError) as exc:
        _fail(str(exc))
    configure_logging(log_level.value, log_format.value)

    def ready(bound_host: str, bound_port: int) -> None:
        print(f"groupcoord listening on {bound_host}:{bound_port}", flush=True)

    try:
        run(config, on_ready=ready)
    except StartupError as exc:
        _fail(str(exc))
    except OSError as exc:
        # what is left is the listening socket: address in use, no such address, ...
        _fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
    except (GroupcoordError, sqlite3.Error) as exc:
        where = "in memory" if memory else f"data directory {directory}"
        _fail(f"cannot start ({where}): {exc}")


users_app = typer.Typer(
    name="users",
    help="SASL users of 'groupcoord serve' (SCRAM credentials in the data directory).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(users_app)

#: the hash a --mechanism stores (PLAIN checks the password against any stored credential)
_MECHANISM_HASHES = {"SCRAM-SHA-512": "sha512", "SCRAM-SHA-256": "sha256", "PLAIN": "sha512"}


def _credential_store(data_dir: Path, *, create: bool = False) -> SqliteCredentialStore:
    from groupcoord.server.server import DATABASE_NAME
    from groupcoord.storage.credential_store import SqliteCredentialStore

    if create and not data_dir.exists():
        try:
            data_dir.mkdir(parents=True)
        except OSError as exc:
            _fail(f"--data-dir {data_dir}: cannot create it: {exc.strerror or exc}")
    if not data_dir.is_dir():
        _fail(f"--data-dir {data_dir}: not a directory (the server's data directory)")
    try:
        return SqliteCredentialStore(data_dir / DATABASE_NAME)
    except (GroupcoordError, sqlite3.Error) as exc:
        _fail(f"--data-dir {data_dir}: {exc}")


DataDirOption = Annotated[
    Path,
    typer.Option(metavar="DIR", help="The server's data directory (--data-dir of serve)."),
]


@users_app.command("add", cls=PlainHelpCommand, help="Add a user, or change its password.")
def users_add(
    user: Annotated[str, typer.Argument(metavar="USER", show_default=False)],
    password: Annotated[
        str, typer.Option(metavar="PW", help="The password (stored salted and iterated).")
    ],
    data_dir: DataDirOption = Path(DEFAULT_DATA_DIR),
    mechanism: Annotated[
        str, typer.Option(metavar="MECHANISM", help="SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN.")
    ] = "SCRAM-SHA-512",
    iterations: Annotated[
        int,
        typer.Option(
            min=4096, max=16384, metavar="N", help="PBKDF2 iterations (Kafka: 4096-16384)."
        ),
    ] = 4096,
) -> None:
    from groupcoord.security.scram import make_credential

    if mechanism not in _MECHANISM_HASHES:
        _fail(f"--mechanism {mechanism}: one of {', '.join(_MECHANISM_HASHES)}")
    if not user or ":" in user:
        _fail(f"user {user!r}: a name without ':' (the principal is User:{user})")
    try:
        credential = make_credential(_MECHANISM_HASHES[mechanism], password, iterations=iterations)
    except ValueError as exc:
        _fail(f"--password: {exc}")
    with _credential_store(data_dir, create=True) as store:
        store.put(user, credential)
    typer.echo(f"user {user}: {mechanism} credential stored ({iterations} iterations)")


@users_app.command("remove", cls=PlainHelpCommand, help="Remove a user's credentials.")
def users_remove(
    user: Annotated[str, typer.Argument(metavar="USER", show_default=False)],
    data_dir: DataDirOption = Path(DEFAULT_DATA_DIR),
) -> None:
    with _credential_store(data_dir) as store:
        removed = store.remove(user)
    if not removed:
        _fail(f"user {user}: no such user in {data_dir}")
    typer.echo(f"user {user}: removed")


@users_app.command("list", cls=PlainHelpCommand, help="List users (never passwords).")
def users_list(data_dir: DataDirOption = Path(DEFAULT_DATA_DIR)) -> None:
    with _credential_store(data_dir) as store:
        for user, hash_name, iterations in store.users():
            typer.echo(f"{user}\t{hash_name}\t{iterations} iterations")


SIMULATE_HELP = """\
Simulate a consumer group in virtual time: the real coordinator and members, a workload and
a timeline of faults, from a scenario file (TOML; the README's "Simulator" section documents
every key). Writes OUT/summary.json, OUT/events.parquet and OUT/rebalances.parquet and prints
a short summary. The same file and seed give the same summary.json, byte for byte.
"""


@app.command(cls=PlainHelpCommand, help=SIMULATE_HELP)
def simulate(
    scenario_file: Annotated[
        Path,
        typer.Argument(metavar="SCENARIO.toml", help="The scenario file.", show_default=False),
    ],
    seed: Annotated[
        int | None,
        typer.Option(
            min=0,
            metavar="N",
            help="Random seed.",
            show_default="the scenario's seed, else 0",
        ),
    ] = None,
    out: Annotated[
        Path,
        typer.Option(
            metavar="DIR", help="Directory for summary.json, events.parquet, rebalances.parquet."
        ),
    ] = Path("sim-out"),
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override a scenario key (repeatable): --set consumer.max_poll_records=100.",
            show_default=False,
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option(help="Show a progress bar for runs longer than a few seconds.")
    ] = True,
) -> None:
    from groupcoord.sim import Scenario, ScenarioError, run
    from groupcoord.sim.progress import ProgressBar
    from groupcoord.sim.scenario import parse_override

    try:
        import pyarrow  # noqa: F401
    except ImportError:
        _fail("groupcoord simulate writes Parquet: pip install 'groupcoord[sim]' (pyarrow)")
    try:
        scenario = Scenario.from_toml(scenario_file)
        overrides = dict(parse_override(text) for text in set_ or ())
        if overrides:
            scenario = scenario.replace(**overrides)
    except ScenarioError as exc:
        _fail(f"{scenario_file}: {exc}")
    bar = ProgressBar(enabled=progress)
    with bar:
        result = run(scenario, seed, progress=bar.update)
    try:
        result.write(out)
    except OSError as exc:
        _fail(f"cannot write the results to {out}: {exc.strerror or exc}")
    print(result.describe())
    print(f"wrote {out / 'summary.json'}, {out / 'events.parquet'}, {out / 'rebalances.parquet'}")


SWEEP_HELP = """\
Run a grid of simulations on Spark: every combination of the grid's axes (scenario keys, as
--set names them) with every seed. Writes the Parquet datasets OUT/runs/ (one row per run: run_id,
seed, one column per axis, every summary.json key, error, wall_s), OUT/rebalances/ and
OUT/events/ (partitioned by run_id), and the report OUT/report/index.html. Running it again with
the same --out skips the runs already written (resume after Ctrl-C or a crash).

GRID.toml: scenario = "base.toml" (relative to the grid), seeds = [1, 2], and an [axes] table
of "dotted.key" = [values]. Needs the pipeline extra (pip install 'groupcoord[pipeline]') and
Java 17+.
"""


#: ``--master`` of the Spark jobs (sweep, analyze)
SparkMasterOption = Annotated[
    str | None,
    typer.Option(
        metavar="URL", help="Spark master URL.", show_default="$SPARK_MASTER, else local[*]"
    ),
]


@app.command(cls=PlainHelpCommand, help=SWEEP_HELP)
def sweep(
    grid_file: Annotated[
        Path, typer.Argument(metavar="GRID.toml", help="The grid file.", show_default=False)
    ],
    out: Annotated[
        str,
        typer.Option(
            metavar="DIR",
            help="Directory of the datasets and the report (resumed if it exists): a local"
            " path, or a URI such as hdfs://namenode:8020/sweeps/x. Every executor writes"
            " into it: on a cluster it must be a filesystem they all see.",
            show_default=False,
        ),
    ],
    master: SparkMasterOption = None,
    parallelism: Annotated[
        int | None,
        typer.Option(min=1, metavar="N", help="Runs at once.", show_default="the cores Spark has"),
    ] = None,
    heatmap_axes: Annotated[
        str | None,
        typer.Option(
            metavar="A,B",
            help="The report's heatmap axes.",
            show_default="the two axes with the most values",
        ),
    ] = None,
    progress: Annotated[
        bool, typer.Option(help="Show runs done / total with an ETA on stderr.")
    ] = True,
) -> None:
    from groupcoord.pipeline.grid import Grid
    from groupcoord.pipeline.session import PipelineError
    from groupcoord.pipeline.sweep import run_sweep

    pair: tuple[str, str] | None = None
    if heatmap_axes is not None:
        names = [a.strip() for a in heatmap_axes.split(",")]
        if len(names) != 2 or not all(names):
            _fail(f"--heatmap-axes takes two axes A,B, got {heatmap_axes!r}")
        pair = (names[0], names[1])
    try:
        grid = Grid.from_toml(grid_file)
        result = run_sweep(
            grid,
            out,
            master=master,
            parallelism=parallelism,
            progress=progress,
            heatmap_axes=pair,
        )
    except PipelineError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(
            f"groupcoord: interrupted; the finished runs are kept in {out}: run the same command"
            " again to resume",
            err=True,
        )
        raise typer.Exit(130) from None
    except OSError as exc:
        _fail(f"cannot write the results to {out}: {exc.strerror or exc}")
    except Exception as exc:  # a Spark job that failed: its first line, not a JVM trace
        if type(exc).__module__.startswith(("pyspark", "py4j")):
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            _fail(f"the Spark job failed: {first}")
        raise
    print(
        f"{result.total} runs: {result.ran} run now, {result.skipped} already in {out},"
        f" {result.failed} raised (see their error column); {result.wall_s:.0f} s"
    )
    where = str(result.out).rstrip("/")
    print(f"wrote {where}/runs, {where}/rebalances, {where}/events")
    if result.report is not None:
        print(f"report: {result.report}")


ANALYZE_HELP = """\
Rebalance analytics on Spark over Apache Kafka broker logs (server.log, .gz, directories,
globs), 'groupcoord serve --event-log' files and simulator output directories, in any mix.
Writes OUT/groups.csv, OUT/brokers.csv, OUT/storms.csv, OUT/summary.json, the Parquet datasets
OUT/rebalances/ and OUT/events/, and OUT/report/index.html. Unparseable lines are counted
and sampled, never fatal.
"""


@app.command(cls=PlainHelpCommand, help=ANALYZE_HELP)
def analyze(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="Broker logs, --event-log files or simulator output directories.",
            show_default=False,
        ),
    ],
    out: Annotated[Path, typer.Option(metavar="DIR", help="Output directory.")] = Path(
        "analyze-out"
    ),
    master: SparkMasterOption = None,
    storm_count: Annotated[
        int,
        typer.Option(
            min=2, metavar="N", help="A storm: at least this many rebalances of one group..."
        ),
    ] = 5,
    storm_window_s: Annotated[
        int, typer.Option(min=1, metavar="SECONDS", help="...within this many seconds.")
    ] = 600,
    top: Annotated[
        int, typer.Option(min=1, metavar="N", help="Rows of the report's top-N tables.")
    ] = 20,
) -> None:
    from groupcoord.pipeline.session import PipelineError

    try:
        from groupcoord.pipeline.analyze import AnalyzeOptions
        from groupcoord.pipeline.analyze import analyze as run_analyze
        from groupcoord.pipeline.logs import classify_inputs
        from groupcoord.pipeline.session import spark_session

        classify_inputs(paths)  # bad paths fail before Spark starts
        spark = spark_session("groupcoord-analyze", master=master)
        options = AnalyzeOptions(storm_count=storm_count, storm_window_s=storm_window_s, top_n=top)
        summary = run_analyze(spark, paths, out, options)
    except PipelineError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot write {out}: {exc.strerror or exc}")
    print(
        f"{summary['lines']:,} lines ({summary['lines_unparsed']:,} unparsed), "
        f"{summary['groups']:,} groups, {summary['rebalances']:,} rebalances, "
        f"{summary['storms']:,} storms"
    )
    print(f"wrote {out / 'groups.csv'}, {out / 'rebalances'}, {out / 'report' / 'index.html'}")


def main() -> None:
    """Console entry point."""
    app(prog_name="groupcoord")
