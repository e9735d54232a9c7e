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

#: the shape of a Kafka timestamp ("2026-01-31 12:00:00,123"; "." in some layouts)
STAMP_SHAPE: Final = r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[,.]\d{3}$"

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
    the end for the logger); the regexes run on the group coordinator's lines alone, one
    per line. Spark generates one Java method for all of this (about 11,500 bytes of
    bytecode): above 8,000 HotSpot leaves a method to its interpreter unless the JVM runs
    with ``-XX:-DontCompileHugeMethods``, which local sessions do
    (:data:`groupcoord.pipeline.session.LOCAL_JVM_OPTIONS`)."""
    from pyspark.sql import functions as F

    line = F.col("line")
    is_json = line.startswith("{")
    data = _json_fields(line, is_json)
    # "[2026-01-31 12:00:00,123] LEVEL message (logger)": the stamp is 23 characters. The
    # line's head is cut by bytes, not characters (substring of a string counts the
    # characters of the whole line, every call): a line whose first 26 characters are not
    # ASCII has no stamp either way, and where they are, bytes and characters agree.
    data_bytes = line.cast("binary")
    stamp = F.substring(data_bytes, 2, 23).cast("string")
    framed = line.startswith("[") & (F.substring(data_bytes, 25, 2).cast("string") == "] ")
    # a stamp of the usual shape goes through Spark's own cast (a quick hand-written
    # parser); only what that rejects goes to the pattern-driven java.time parser (ten times
    # the work per line), which decides
    usual = F.when(
        stamp.rlike(STAMP_SHAPE),
        F.concat(
            F.substring(data_bytes, 2, 19), F.lit(bytearray(b".")), F.substring(data_bytes, 22, 3)
        )
        .cast("string")
        .try_cast("timestamp"),
    )
    kafka_time = F.when(
        framed,
        F.coalesce(
            usual,
            F.try_to_timestamp(stamp, F.lit("yyyy-MM-dd HH:mm:ss,SSS")),
            F.try_to_timestamp(stamp, F.lit("yyyy-MM-dd HH:mm:ss.SSS")),
        ),
    )
    level = F.substring_index(F.substring(data_bytes, 27, 6).cast("string"), " ", 1)
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
    j = F.col("j")
    json_ok = (
        F.col("is_json")
        & j.isNotNull()
        & j["event"].isNotNull()
        & j["group"].isNotNull()
        & j["time_ms"].isNotNull()
    )
    header = ~F.col("is_json") & F.col("kafka_time").isNotNull()
    # the tail is a suffix of the line, shorter when the line has a " (": comparing bytes
    # spares counting the characters of every line
    complete = (
        F.col("tail").endswith(")")
        & ~F.col("tail").contains(" ")
        & (F.octet_length("tail") < F.octet_length(line))
    )
    # the message, between "LEVEL " and " (logger)", on complete lines that may be the
    # coordinator's only; by bytes, as the head (on a header line "[stamp] LEVEL " is ASCII)
    msg_start = F.col("msg_start")
    msg = F.when(
        header & complete & line.contains("roup "),
        F.substring(
            line.cast("binary"),
            msg_start,
            F.octet_length(line) - F.octet_length("tail") - 1 - msg_start,
        ).cast("string"),
    )
    # a header line's prefix "[stamp] LEVEL " cannot end a match of MULTILINE_OPENER (it
    # ends in "] LEVEL "), so the whole line is tested instead of its message
    kafka_ok = header & (complete | line.rlike(MULTILINE_OPENER))
    continuation = ~F.col("is_json") & F.col("kafka_time").isNull() & line.rlike(CONTINUATION)
    kept = ["source", "seq", "line", "j", "kafka_time", "json_ok", "kafka_ok", "continuation"]
    df = df.select(
        "source",
        "seq",
        line,
        "j",
        "kafka_time",
        json_ok.alias("json_ok"),
        kafka_ok.alias("kafka_ok"),
        continuation.alias("continuation"),
        msg.alias("msg"),
    )
    # a line names a group ("group " or "Group ") in its message; the message is null on
    # the other lines. The regexes run in their own projection, each once per line and on
    # these lines only.
    msg = F.col("msg")
    coordinator_line = F.coalesce(msg.contains("roup "), F.lit(False))
    df = df.select(*kept, "msg", coordinator_line.alias("coordinator_line"))
    df = df.select(*kept, *_kafka_matches(msg, F.col("coordinator_line")))
    # the first pattern (in _KINDS order) that matched: its fields, one per line
    fields = F.coalesce(
        *[F.when(F.col(f"m_{kind}").contains(_SEP), F.col(f"m_{kind}")) for kind, _, _ in _KINDS]
    )
    df = df.select(*kept, F.split(fields, _SEP).alias("k"))
    json_ok, kafka_ok, continuation = F.col("json_ok"), F.col("kafka_ok"), F.col("continuation")
    out = df.select(
        F.when(json_ok, F.lit("event_log")).when(kafka_ok, F.lit("kafka")).alias("source_kind"),
        "source",
        F.lit(None).cast("string").alias("broker"),
        F.when(json_ok, F.timestamp_millis(j["time_ms"]))
        .otherwise(F.col("kafka_time"))
        .alias("time"),
        "seq",
        F.when(json_ok, _json_events()).otherwise(_kafka_events(F.col("k"))).alias("ev"),
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
    event: Column | str,
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
        # try_cast: a number too large for an int on a corrupt line is null, not a failed job
        return (F.lit(None) if col is None else col).try_cast(sql_type)

    return F.struct(
        typed(group, "string").alias("group"),
        (F.lit(event) if isinstance(event, str) else event).alias("event"),
        typed(generation, "int").alias("generation"),
        typed(members, "int").alias("members"),
        typed(member, "string").alias("member"),
        typed(instance_id, "string").alias("instance_id"),
        typed(cause, "string").alias("cause"),
        typed(reason, "string").alias("reason"),
        typed(state, "string").alias("state"),
        typed(started_at, "timestamp").alias("started_at"),
    )


#: the fields a Kafka coordinator line's match is rewritten to, in this order (see _LAYOUT)
_FIELDS: Final = (
    "event",
    "group",
    "generation",
    "members",
    "member",
    "instance_id",
    "cause",
    "reason",
    "state",
)

#: (kind, a substring every line of the kind contains (part of its pattern's text, starting
#: with a character that seldom occurs: a search tries a comparison wherever the first
#: byte occurs), its fields: a regex group ($n) or a literal per name of _FIELDS; unnamed
#: fields are empty, i.e. null)
_KINDS: Final[tuple[tuple[str, str, dict[str, str]], ...]] = (
    (
        "rebalance_started",
        "Preparing to rebalance group ",
        {
            "event": "rebalance_started",
            "group": "$1",
            "state": "$2",
            "generation": "$3",
            "reason": "$4",
        },
    ),
    (
        "rebalance_completed",
        "Stabilized group ",
        {"event": "rebalance_completed", "group": "$1", "generation": "$2", "members": "$3"},
    ),
    (
        "assignment_received",
        "Assignment received from leader ",
        {
            "event": "assignment_received",
            "member": "$1",
            "group": "$2",
            "generation": "$3",
            "members": "$4",
        },
    ),
    (
        "expired",
        ", removing it from the group",
        {
            "event": "member_removed",
            "member": "$1",
            "group": "$2",
            "cause": "session_timeout",
            "reason": "heartbeat expiration",
        },
    ),
    (
        "left_4",
        "`LeaveGroup`",
        {"event": "member_removed", "group": "$1", "member": "$2", "cause": "left", "reason": "$3"},
    ),
    (
        # the member is one of two alternative groups: at most one of them is set
        "left_3",
        "`LeaveGroup`",
        {
            "event": "member_removed",
            "member": "$1$2",
            "group": "$3",
            "cause": "left",
            "reason": "$4",
        },
    ),
    (
        "left_2",
        "Member[group.instance.id ",
        {
            "event": "member_removed",
            "instance_id": "$1",
            "member": "$2",
            "group": "$3",
            "cause": "left",
        },
    ),
    (
        "member_joined",
        "Dynamic member with unknown member id joins group ",
        {"event": "member_joined", "group": "$1", "state": "$2", "member": "$3"},
    ),
    (
        "static_member_replaced",
        "Replacing previously mapped member ",
        {
            "event": "static_member_replaced",
            "instance_id": "$1",
            "group": "$2",
            "state": "$3",
            "member": "$4",
            "reason": "static member rejoined with a new member id",
        },
    ),
    (
        "group_empty",
        "Group ",
        {
            "event": "group_empty",
            "group": "$1",
            "generation": "$2",
            "members": "0",
            "state": "Empty",
        },
    ),
)

#: the text of a 4.x LeaveGroup line, which the 3.x pattern is not tried on
_LEFT_4_TEXT: Final = "has left group through explicit `LeaveGroup`"

#: separates the fields of a rewritten match: a line read by spark.read.text never holds a
#: newline, so a message with one is a match, and no field holds one
_SEP: Final = "\n"


def _kafka_matches(msg: Column, candidate: Column) -> list[Column]:
    """One column ``m_<kind>`` per kind of :data:`_KINDS`: on a candidate line that contains
    the kind's keyword, the message rewritten (one ``regexp_replace``) to the kind's fields
    in :data:`_FIELDS` order joined by :data:`_SEP` when the pattern matches, else the
    message unchanged; null on other lines."""
    from pyspark.sql import functions as F

    columns = []
    for kind, keyword, fields in _KINDS:
        pattern = "^.*?(?:" + KAFKA_PATTERNS[kind] + ").*$"
        replacement = _SEP.join(fields.get(name, "") for name in _FIELDS)
        hit = candidate & msg.contains(keyword)
        if kind == "left_3":
            # what the 4.x pattern would have matched is no 3.x line
            hit = hit & ~msg.contains(_LEFT_4_TEXT)
        columns.append(F.when(hit, F.regexp_replace(msg, pattern, replacement)).alias(f"m_{kind}"))
    return columns


def _kafka_events(fields: Column) -> Column:
    """The event struct of a Kafka coordinator line from its split fields (``_FIELDS``
    order; an empty field is null), or null when no pattern matched."""
    from pyspark.sql import functions as F

    def x(name: str) -> Column:
        value = F.element_at(fields, _FIELDS.index(name) + 1)
        return F.when(value != "", value)

    event, cause, reason, instance_id = x("event"), x("cause"), x("reason"), x("instance_id")
    return F.when(
        fields.isNotNull(),
        _event_struct(
            group=x("group"),
            event=event,
            generation=x("generation"),
            members=x("members"),
            member=x("member"),
            # Kafka 2.x writes "None" for a dynamic member's instance id when it leaves
            instance_id=F.when(
                ~((event == "member_removed") & (instance_id == "None")), instance_id
            ),
            cause=F.when(
                (cause == "left") & F.coalesce(reason, F.lit("")).rlike(POLL_TIMEOUT_REASON),
                "poll_timeout",
            ).otherwise(cause),
            reason=reason,
            state=x("state"),
        ),
    )


def _json_fields(line: Column, is_json: Column) -> Column:
    """The event-log fields of a JSON line (``get_json_object`` per field, evaluated on
    JSON lines only: unlike ``from_json`` it compiles to Java, so the other lines pay
    nothing); null (no struct at all) on lines that are no JSON object."""
    from pyspark.sql import functions as F

    fields = [field.strip().split(" ") for field in EVENT_LOG_SCHEMA.split(",")]
    return F.when(
        is_json,
        F.struct(
            *[
                # try_cast: a corrupt value ("time_ms": "soon") is null, not a failed job
                F.get_json_object(line, f"$.{name.strip('`')}")
                .try_cast(sql_type.lower())
                .alias(name.strip("`"))
                for name, sql_type in fields
            ]
        ),
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
