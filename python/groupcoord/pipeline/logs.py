"""Group events from three sources, as one Spark DataFrame of the schema :data:`EVENT_COLUMNS`.

- Apache Kafka broker logs (``server.log``, rotated ``server.log.*``, ``.gz``): the classic
  group coordinator's INFO lines as Kafka 2.8 through 4.x write them with the packaged
  layout ``[%d] %p %m (%c)%n`` (see :data:`KAFKA_PATTERNS`);
- ``groupcoord serve --event-log`` files (JSON lines, :mod:`groupcoord.server.event_log`);
- the simulator's ``events.parquet`` (with ``rebalances.parquet`` beside it for member counts).

Text inputs (files, directories, globs, any mix of Kafka logs and event logs) are read with
``spark.read.text`` and parsed with built-in Spark SQL functions only (``substring``,
``try_to_timestamp``, ``substring_index``, ``regexp_replace``/``split``,
``get_json_object``): no Python runs per line, and every function compiles to Java in
Spark's whole-stage code generation (``from_json`` does not: it made every line run
interpreted, 2.7x slower). A line is *parsed* when it is a
well-formed record (a Kafka line with its timestamp, level and logger, or a JSON object with
an ``event`` and ``group``, the first line of a multi-line message, a continuation line of a
stack trace or config dump), whether or not it is a group event; every other line (corrupt,
truncated, binary, two lines run together) is *unparsed*: counted and sampled, never an
error. Group events come from complete lines only.

Kafka writes local time without a zone; its timestamps are read as UTC (the session time
zone is set to UTC), so mixed sources line up when the brokers run in UTC.
"""

from __future__ import annotations

import glob as _glob
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from groupcoord.pipeline.session import PipelineError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, Observation, SparkSession

__all__ = [
    "EVENT_COLUMNS",
    "EVENT_KINDS",
    "KAFKA_PATTERNS",
    "Inputs",
    "classify_inputs",
    "read_events",
]

#: the unified event schema: (name, Spark SQL type, meaning)
EVENT_COLUMNS: Final[tuple[tuple[str, str, str], ...]] = (
    ("source_kind", "string", "kafka (broker log), event_log (groupcoord serve) or sim"),
    ("source", "string", "the file the event came from"),
    ("broker", "string", "the broker (host) that logged it: see broker_of"),
    ("time", "timestamp", "when it happened (UTC)"),
    ("seq", "bigint", "input order, to break ties between events of the same millisecond"),
    ("group", "string", "consumer group id"),
    ("event", "string", "one of EVENT_KINDS"),
    ("generation", "int", "the generation created (rebalance_completed), else the current one"),
    ("members", "int", "group size after the event, when the line says"),
    ("member", "string", "the member id the event concerns"),
    ("instance_id", "string", "group.instance.id of a static member, when known"),
    ("cause", "string", "member_removed: session_timeout, left, poll_timeout, not_rejoined, ..."),
    ("reason", "string", "why (the coordinator's text with the client's KIP-800 reason)"),
    ("state", "string", "the group state the line names"),
    ("started_at", "timestamp", "rebalance_completed: when the rebalance started, if known"),
)

#: every value of the ``event`` column
EVENT_KINDS: Final = (
    "rebalance_started",  # Kafka "Preparing to rebalance group ..."
    "rebalance_completed",  # Kafka "Stabilized group ...", serve/sim rebalance_completed
    "assignment_received",  # Kafka "Assignment received from leader ..."
    "member_joined",  # Kafka "Dynamic member with unknown member id joins group ..."
    "member_removed",  # expired (heartbeat), left (LeaveGroup), ...: see ``cause``
    "static_member_replaced",  # Kafka "Static member with groupInstanceId=... Replacing ..."
    "group_empty",  # Kafka "Group X with generation N is now empty"
)

#: a Kafka log line: [timestamp] LEVEL message (logger). The logger is missing on the first
#: line of a record whose message spans lines (the config dump: "KafkaConfig values: ") and
#: on a truncated line; group events are read from complete lines only.
KAFKA_LINE: Final = (
    r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[,.]\d{3})\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) "
    r"(.*?)( \([\w.$]+\))?$"
)

#: Kafka's log levels
LEVELS: Final = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")

#: the first line of a multi-line message (no logger yet)
MULTILINE_OPENER: Final = r":\s*$"

#: a continuation line of a multi-line record: a stack trace (at ..., Caused by, ... N
#: more, the exception line), a config dump's tab-indented lines and its closing (logger)
CONTINUATION: Final = (
    r"^(\t|\s+at |\s*\.\.\. \d+ more|Caused by: |Suppressed: |\s\([\w.$]+\)$"
    r"|[a-z][\w$]*(\.[\w$]+)+(Exception|Error|Throwable)(: |$))"
)

#: the group coordinator's lines (regexes over the message; Kafka 2.8-3.x Scala
#: GroupCoordinator and 4.x GroupMetadataManager). Member ids are \S+; the prefixes
#: "[GroupCoordinator 1]: " (3.x) and "[GroupCoordinator id=1 topic=... partition=P] " (4.x)
#: are skipped by searching inside the message.
KAFKA_PATTERNS: Final[dict[str, str]] = {
    # group, state (3.0+), old generation, reason (2.8+ "(reason: ...)")
    "rebalance_started": (
        r"Preparing to rebalance group (\S+)(?: in state (\w+))? with old generation (-?\d+)"
        r"(?: \(__consumer_offsets-\d+\))?(?: \(reason: (.*)\))?\.?$"
    ),
    # group, generation, members
    "rebalance_completed": (
        r"Stabilized group (\S+) generation (\d+)(?: \(__consumer_offsets-\d+\))?"
        r" with (\d+) members\.?$"
    ),
    # leader, group, generation, members (3.x+)
    "assignment_received": (
        r"Assignment received from leader (\S+) for group (\S+) for generation (\d+)"
        r"(?:\. The group has (\d+) members)?"
    ),
    # member, group: the heartbeat (session) expired
    "expired": r"Member (\S+) in group (\S+) has failed, removing it from the group\.?$",
    # 4.x: group, member, client reason
    "left_4": (
        r"\[Group (\S+)\] Member (\S+) has left group through explicit `LeaveGroup`"
        r"(?: request)?; client reason: (.*)$"
    ),
    # 3.x: member (MemberMetadata(memberId=..., ...) or an id), group, client reason
    "left_3": (
        r"Member (?:MemberMetadata\(memberId=([^,]+),[^ ]*.*?\)|(\S+)) has left group (\S+)"
        r" through explicit `LeaveGroup`(?: request)?(?:; client reason: (.*))?$"
    ),
    # 2.x: instance id, member, group
    "left_2": (
        r"Member\[group\.instance\.id (\S+), member\.id (\S+)\] in group (\S+) has left,"
        r" removing it from the group"
    ),
    # group, state, new member id
    "member_joined": (
        r"Dynamic member with unknown member id joins group (\S+) in (\w+) state\."
        r" Created a new member id (\S+)"
    ),
    # instance id, group, state, old member id (same text in 2.8-4.x)
    "static_member_replaced": (
        r"Static member with groupInstanceId=(\S+) and unknown member id joins group (\S+)"
        r" in (\w+) state\. Replacing previously mapped member (\S+) with this groupInstanceId"
    ),
    # group, generation
    "group_empty": r"Group (\S+) with generation (\d+) is now empty",
}

#: a LeaveGroup reason that says the member left because it did not poll in time
POLL_TIMEOUT_REASON: Final = r"(?i)poll timeout|max\.poll\.interval"

#: the JSON lines of ``groupcoord serve --event-log`` (groupcoord.server.event_log)
EVENT_LOG_SCHEMA: Final = (
    "event STRING, time_ms BIGINT, `group` STRING, generation INT, members INT, "
    "member STRING, instance_id STRING, cause STRING, reason STRING, started_ms BIGINT, "
    "leader STRING, protocol STRING"
)


@dataclass(frozen=True)
class Inputs:
    """The paths of one analysis, by kind: ``text`` (Kafka logs and event logs; Spark
    expands globs and directories) and ``sim`` (simulator output directories)."""

    text: tuple[str, ...]
    sim: tuple[str, ...]


def classify_inputs(paths: Sequence[str]) -> Inputs:
    """Split ``paths`` into text inputs and simulator outputs (a directory holding
    ``events.parquet``, or an ``events.parquet`` file). Local paths that match nothing raise
    :class:`PipelineError`; URLs (hdfs://, s3a://) go to Spark as they are."""
    text: list[str] = []
    sim: list[str] = []
    for path in paths:
        if "://" in path and not path.startswith("file://"):
            text.append(path)
            continue
        local = path.removeprefix("file://")
        matches = sorted(_glob.glob(local)) if _glob.has_magic(local) else [local]
        matches = [m for m in matches if os.path.exists(m)]
        if not matches:
            raise PipelineError(f"{path}: no such file or directory")
        for match in matches:
            if os.path.isdir(match) and os.path.exists(os.path.join(match, "events.parquet")):
                sim.append(os.path.join(match, "events.parquet"))
            elif match.endswith(".parquet"):
                sim.append(match)
            else:
                text.append(os.path.abspath(match))
    return Inputs(tuple(text), tuple(sim))


def read_lines(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """Every line of ``paths`` (files, directories read recursively, globs, .gz) with its
    ``source`` file and input order ``seq``."""
    from pyspark.sql import functions as F

    reader = spark.read.option("recursiveFileLookup", "true")
    lines = reader.text(list(paths))
    # the source stays a URI here (file:/...): it is cleaned on the few event rows only
    return lines.select(
        F.col("value").alias("line"),
        F.input_file_name().alias("source"),
        F.monotonically_increasing_id().alias("seq"),
    )


def clean_source(source: Column) -> Column:
    """A local file's path without the ``file:`` scheme Spark adds."""
    from pyspark.sql import functions as F

    return F.regexp_replace(source, "^file:(//)?", "")


def broker_of(source: Column) -> Column:
    """The broker a file belongs to: its directory's name for ``server.log*`` files (the
    usual one directory per broker), else the file name without ``.gz``/``.log``/rotation."""
    from pyspark.sql import functions as F

    name = F.regexp_extract(source, r"([^/]+)$", 1)
    parent = F.regexp_extract(source, r"([^/]+)/[^/]+$", 1)
    stem = F.regexp_replace(name, r"(\.gz)?$", "")
    stem = F.regexp_replace(stem, r"\.(log|jsonl?)(\.[\w-]+)?$", "")
    return F.when(name.startswith("server.log") & (parent != ""), parent).otherwise(stem)


def parse_lines(lines: DataFrame) -> DataFrame:
    """Parse ``lines`` (``line``, ``source``, ``seq``) into one row per line: the event
    columns (null when the line is no group event; ``broker`` is left null, see
    :func:`read_events`) plus ``parsed`` (a well-formed record) and ``continuation``.

    Per line this runs only cheap functions (substring, a timestamp parse, a search from
    the end for the logger); the regexes run on the group coordinator's lines alone."""
    from pyspark.sql import functions as F

    line = F.col("line")
    is_json = line.startswith("{")
    data = _json_fields(line, is_json)
    # "[2026-01-31 12:00:00,123] LEVEL message (logger)": the stamp is 23 characters
    stamp = F.substring(line, 2, 23)
    framed = line.startswith("[") & (F.substring(line, 25, 2) == "] ")
    kafka_time = F.when(
        framed,
        F.coalesce(
            F.try_to_timestamp(stamp, F.lit("yyyy-MM-dd HH:mm:ss,SSS")),
            F.try_to_timestamp(stamp, F.lit("yyyy-MM-dd HH:mm:ss.SSS")),
        ),
    )
    level = F.substring_index(F.substring(line, 27, 6), " ", 1)
    tail = F.substring_index(line, " (", -1)  # "logger)" on a complete line
    df = lines.select(
        "source",
        "seq",
        line,
        is_json.alias("is_json"),
        data.alias("j"),
        F.when(level.isin(*LEVELS), kafka_time).alias("kafka_time"),
        (F.length(level) + 28).alias("msg_start"),
        tail.alias("tail"),
    )
    complete = (
        F.col("tail").endswith(")")
        & ~F.col("tail").contains(" ")
        & (F.length("tail") < F.length(line))
    )
    msg_start = F.col("msg_start")
    msg = F.when(
        complete,
        line.substr(msg_start, F.length(line) - F.length("tail") - 1 - msg_start),
    ).otherwise(line.substr(msg_start, F.lit(1 << 30)))
    df = df.select("*", complete.alias("complete"), msg.alias("msg"))
    j = F.col("j")
    json_ok = (
        F.col("is_json")
        & j.isNotNull()
        & j["event"].isNotNull()
        & j["group"].isNotNull()
        & j["time_ms"].isNotNull()
    )
    header = ~F.col("is_json") & F.col("kafka_time").isNotNull()
    kafka_ok = header & (F.col("complete") | F.col("msg").rlike(MULTILINE_OPENER))
    continuation = ~F.col("is_json") & F.col("kafka_time").isNull() & line.rlike(CONTINUATION)
    coordinator_line = header & F.col("complete") & F.col("msg").contains("roup ")
    # the regexes run in their own projection (each once per line, on candidate lines only)
    df = df.select(
        "*",
        json_ok.alias("json_ok"),
        kafka_ok.alias("kafka_ok"),
        continuation.alias("continuation"),
        coordinator_line.alias("coordinator_line"),
        *_group_columns(F.col("msg"), coordinator_line),
    )
    json_ok, kafka_ok, continuation = F.col("json_ok"), F.col("kafka_ok"), F.col("continuation")
    out = df.select(
        F.when(json_ok, F.lit("event_log")).when(kafka_ok, F.lit("kafka")).alias("source_kind"),
        "source",
        F.lit(None).cast("string").alias("broker"),
        F.when(json_ok, F.timestamp_millis(j["time_ms"]))
        .otherwise(F.col("kafka_time"))
        .alias("time"),
        "seq",
        F.when(json_ok, _json_events())
        .when(F.col("coordinator_line"), _kafka_events())
        .alias("ev"),
        (json_ok | kafka_ok | continuation).alias("parsed"),
        continuation.alias("continuation"),
        line,
    )
    return out.select(
        "source_kind",
        "source",
        "broker",
        "time",
        "seq",
        *[F.col(f"ev.{name}").alias(name) for name, _, _ in EVENT_COLUMNS[5:]],
        "parsed",
        "continuation",
        "line",
    )


def _event_struct(
    *,
    group: Column,
    event: str,
    generation: Column | None = None,
    members: Column | None = None,
    member: Column | None = None,
    instance_id: Column | None = None,
    cause: Column | None = None,
    reason: Column | None = None,
    state: Column | None = None,
    started_at: Column | None = None,
) -> Column:
    from pyspark.sql import functions as F

    def typed(col: Column | None, sql_type: str) -> Column:
        return (F.lit(None) if col is None else col).cast(sql_type)

    return F.struct(
        typed(group, "string").alias("group"),
        F.lit(event).alias("event"),
        typed(generation, "int").alias("generation"),
        typed(members, "int").alias("members"),
        typed(member, "string").alias("member"),
        typed(instance_id, "string").alias("instance_id"),
        typed(cause, "string").alias("cause"),
        typed(reason, "string").alias("reason"),
        typed(state, "string").alias("state"),
        typed(started_at, "timestamp").alias("started_at"),
    )


#: (kind, a substring every line of the kind contains, number of groups in its pattern)
_KINDS: Final = (
    ("rebalance_started", "Preparing to rebalance group ", 4),
    ("rebalance_completed", "Stabilized group ", 3),
    ("assignment_received", "Assignment received from leader ", 4),
    ("expired", "has failed, removing it from the group", 2),
    ("left_4", "has left group through explicit `LeaveGroup`", 3),
    ("left_3", " through explicit `LeaveGroup`", 4),
    ("left_2", "has left, removing it from the group", 3),
    ("member_joined", "Dynamic member with unknown member id joins group ", 3),
    ("static_member_replaced", "Replacing previously mapped member ", 4),
    ("group_empty", " is now empty", 2),
)

_SEP: Final = "\u0001"


def _group_columns(msg: Column, candidate: Column) -> list[Column]:
    """One column per pattern of :data:`_KINDS`: the pattern's groups as an array (one
    regex run, only on lines that contain the pattern's keyword), else null."""
    from pyspark.sql import functions as F

    columns = []
    for kind, keyword, groups in _KINDS:
        pattern = "^.*?(?:" + KAFKA_PATTERNS[kind] + ").*$"
        replacement = _SEP.join(f"${i}" for i in range(1, groups + 1))
        parts = F.split(F.regexp_replace(msg, pattern, replacement), _SEP)
        hit = candidate & msg.contains(keyword)
        if kind == "left_3":
            hit = hit & ~msg.contains(_KINDS[4][1])
        # the size check (a line that does not match leaves no separator) is made in the next
        # projection, so that the regex runs once per line
        columns.append(F.when(hit, parts).alias(f"g_{kind}"))
    return columns


def _kafka_events() -> Column:
    """The event struct of a Kafka line from its ``g_<kind>`` columns, or null."""
    from pyspark.sql import functions as F

    def x(kind: str, index: int) -> Column:
        value = F.element_at(F.col(f"g_{kind}"), index)
        return F.when(value != "", value)

    def poll_or_left(reason: Column) -> Column:
        return F.when(
            F.coalesce(reason, F.lit("")).rlike(POLL_TIMEOUT_REASON), "poll_timeout"
        ).otherwise("left")

    rules: list[tuple[str, Column]] = [
        (
            "rebalance_started",
            _event_struct(
                group=x("rebalance_started", 1),
                event="rebalance_started",
                state=x("rebalance_started", 2),
                generation=x("rebalance_started", 3),
                reason=x("rebalance_started", 4),
            ),
        ),
        (
            "rebalance_completed",
            _event_struct(
                group=x("rebalance_completed", 1),
                event="rebalance_completed",
                generation=x("rebalance_completed", 2),
                members=x("rebalance_completed", 3),
            ),
        ),
        (
            "assignment_received",
            _event_struct(
                member=x("assignment_received", 1),
                group=x("assignment_received", 2),
                event="assignment_received",
                generation=x("assignment_received", 3),
                members=x("assignment_received", 4),
            ),
        ),
        (
            "expired",
            _event_struct(
                member=x("expired", 1),
                group=x("expired", 2),
                event="member_removed",
                cause=F.lit("session_timeout"),
                reason=F.lit("heartbeat expiration"),
            ),
        ),
        (
            "left_4",
            _event_struct(
                group=x("left_4", 1),
                member=x("left_4", 2),
                event="member_removed",
                cause=poll_or_left(x("left_4", 3)),
                reason=x("left_4", 3),
            ),
        ),
        (
            "left_3",
            _event_struct(
                member=F.coalesce(x("left_3", 1), x("left_3", 2)),
                group=x("left_3", 3),
                event="member_removed",
                cause=poll_or_left(x("left_3", 4)),
                reason=x("left_3", 4),
            ),
        ),
        (
            "left_2",
            _event_struct(
                instance_id=F.when(x("left_2", 1) != "None", x("left_2", 1)),
                member=x("left_2", 2),
                group=x("left_2", 3),
                event="member_removed",
                cause=F.lit("left"),
            ),
        ),
        (
            "member_joined",
            _event_struct(
                group=x("member_joined", 1),
                state=x("member_joined", 2),
                member=x("member_joined", 3),
                event="member_joined",
            ),
        ),
        (
            "static_member_replaced",
            _event_struct(
                instance_id=x("static_member_replaced", 1),
                group=x("static_member_replaced", 2),
                state=x("static_member_replaced", 3),
                member=x("static_member_replaced", 4),
                reason=F.lit("static member rejoined with a new member id"),
                event="static_member_replaced",
            ),
        ),
        (
            "group_empty",
            _event_struct(
                group=x("group_empty", 1),
                generation=x("group_empty", 2),
                members=F.lit(0),
                state=F.lit("Empty"),
                event="group_empty",
            ),
        ),
    ]
    sizes = {kind: groups for kind, _, groups in _KINDS}

    def matched(kind: str) -> Column:
        return F.coalesce(F.size(F.col(f"g_{kind}")) == sizes[kind], F.lit(False))

    expr = F.when(matched(rules[0][0]), rules[0][1])
    for kind, value in rules[1:]:
        expr = expr.when(matched(kind), value)
    return expr


def _json_fields(line: Column, is_json: Column) -> Column:
    """The event-log fields of a JSON line (``get_json_object`` per field, evaluated on
    JSON lines only: unlike ``from_json`` it compiles to Java, so the other lines pay
    nothing); null fields on lines that are no JSON object."""
    from pyspark.sql import functions as F

    fields = [field.strip().split(" ") for field in EVENT_LOG_SCHEMA.split(",")]
    return F.struct(
        *[
            F.when(is_json, F.get_json_object(line, f"$.{name.strip('`')}"))
            .cast(sql_type.lower())
            .alias(name.strip("`"))
            for name, sql_type in fields
        ]
    )


def _json_events() -> Column:
    from pyspark.sql import functions as F

    j = F.col("j")
    cause = j["cause"]
    is_removed = j["event"] == "member_removed"
    return _event_struct(
        group=j["group"],
        event="",
        generation=j["generation"],
        members=j["members"],
        member=j["member"],
        instance_id=j["instance_id"],
        cause=F.when(
            is_removed
            & (cause == "left")
            & F.coalesce(j["reason"], F.lit("")).rlike(POLL_TIMEOUT_REASON),
            "poll_timeout",
        ).otherwise(cause),
        reason=j["reason"],
        started_at=F.timestamp_millis(j["started_ms"]),
    ).withField(
        "event",
        # a join phase that ended with no member is Kafka's "is now empty", not a rebalance
        F.when(
            (j["event"] == "rebalance_completed") & (j["members"] == 0), F.lit("group_empty")
        ).otherwise(j["event"]),
    )


def read_sim(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """The simulator's events (``events.parquet``) in the event schema: rebalances (member
    counts from ``rebalances.parquet`` beside it) and removed members. The group is
    ``sim:`` + the output directory's name; times are virtual (ms from 0)."""
    from pyspark.sql import functions as F

    frames = []
    for path in paths:
        directory = os.path.dirname(os.path.abspath(path))
        events = spark.read.parquet(path)
        group = "sim:" + os.path.basename(directory)
        rebalances_path = os.path.join(directory, "rebalances.parquet")
        if os.path.exists(rebalances_path):
            sizes = spark.read.parquet(rebalances_path).select(
                F.col("generation").alias("r_generation"),
                F.col("members_after").alias("r_members"),
            )
            events = events.join(
                sizes,
                (events["kind"] == "rebalance_completed")
                & (events["generation"] == sizes["r_generation"]),
                "left",
            )
        else:
            events = events.withColumn("r_members", F.lit(None).cast("int"))
        detail = F.coalesce(F.col("detail"), F.lit(""))
        cause = F.regexp_extract(detail, r"^(\w+): ", 1)
        is_rebalance = F.col("kind") == "rebalance_completed"
        frames.append(
            events.where(F.col("kind").isin("rebalance_completed", "member_removed")).select(
                F.lit("sim").alias("source_kind"),
                F.lit(os.path.abspath(path)).alias("source"),
                F.lit(group).alias("broker"),
                F.timestamp_millis(F.col("time_ms")).alias("time"),
                F.monotonically_increasing_id().alias("seq"),
                F.lit(group).alias("group"),
                F.col("kind").alias("event"),
                F.col("generation").cast("int").alias("generation"),
                F.col("r_members").cast("int").alias("members"),
                F.when(~is_rebalance, F.col("member")).alias("member"),
                F.lit(None).cast("string").alias("instance_id"),
                F.when(~is_rebalance, F.when(cause != "", cause)).alias("cause"),
                F.when(is_rebalance, detail)
                .otherwise(F.regexp_replace(detail, r"^\w+: ", ""))
                .alias("reason"),
                F.lit(None).cast("string").alias("state"),
                F.when(
                    is_rebalance, F.timestamp_millis(F.col("time_ms") - F.col("duration_ms"))
                ).alias("started_at"),
            )
        )
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def read_events(
    spark: SparkSession, inputs: Inputs, observation: Observation | None = None
) -> tuple[DataFrame, DataFrame | None]:
    """(events, lines): the group events of every input in the schema of
    :data:`EVENT_COLUMNS`, and the parsed text lines (``parsed`` flag, ``line``) for
    sampling (None without text inputs). With ``observation``, the first action on
    ``events`` also counts the lines (``lines``, ``lines_parsed``, ``lines_continuation``)
    in the same pass over the text."""
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    columns = [name for name, _, _ in EVENT_COLUMNS]
    parts: list[DataFrame] = []
    lines: DataFrame | None = None
    if inputs.text:
        from pyspark.sql import functions as F

        lines = parse_lines(read_lines(spark, inputs.text))
        observed = lines
        if observation is not None:
            observed = lines.observe(
                observation,
                F.count(F.lit(1)).alias("lines"),
                F.sum(F.col("parsed").cast("long")).alias("lines_parsed"),
                F.sum(F.col("continuation").cast("long")).alias("lines_continuation"),
            )
        found = observed.where("parsed AND event IS NOT NULL").withColumn(
            "source", clean_source(F.col("source"))
        )
        parts.append(found.withColumn("broker", broker_of(F.col("source"))).select(*columns))
    if inputs.sim:
        parts.append(read_sim(spark, inputs.sim).select(*columns))
    if not parts:
        raise PipelineError("no inputs")
    events = parts[0]
    for part in parts[1:]:
        events = events.unionByName(part)
    return events, lines
