"""``groupcoord analyze``: rebalance analytics over broker logs, ``serve --event-log`` files
and simulator output (read by :mod:`groupcoord.pipeline.logs`), written as

- ``groups.csv``: one row per group (see :data:`GROUP_COLUMNS`);
- ``brokers.csv``: one row per broker (source host);
- ``rebalances/``: Parquet, one row per completed rebalance (:data:`REBALANCE_COLUMNS`);
- ``events/``: Parquet, every group event in the unified schema (logs.EVENT_COLUMNS);
- ``storms.csv``: rebalance storms (``storm_count`` rebalances of one group within
  ``storm_window_s``), one row per storm;
- ``summary.json``: line counts (``lines``, ``lines_parsed``, ``lines_unparsed``) and totals;
- ``report/index.html``: timeline, duration histogram, reasons, rebalances per hour, storms,
  top-N tables and a sample of the unparsed lines.

Everything up to the tables runs in Spark; only the small aggregated tables are collected
to the driver for the plots.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from groupcoord.pipeline.logs import classify_inputs, read_events

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "GROUP_COLUMNS",
    "REBALANCE_COLUMNS",
    "AnalyzeOptions",
    "analyze",
    "rebalances_of",
]

#: DIR/rebalances/: (name, meaning)
REBALANCE_COLUMNS: Final = (
    ("source", "file the rebalance was read from"),
    ("source_kind", "kafka, event_log or sim"),
    ("broker", "broker (host) whose coordinator ran it"),
    ("group", "consumer group"),
    ("generation", "generation it created"),
    ("members", "members of that generation"),
    ("started_at", "first 'Preparing to rebalance' after the previous generation (UTC), or null"),
    ("completed_at", "'Stabilized group' (UTC)"),
    ("duration_ms", "completed_at - started_at in ms, or null"),
    ("reason", "why it started (the first 'Preparing' line's reason)"),
    ("reason_kind", "reason with member ids replaced by <member>, for grouping"),
)

#: DIR/groups.csv: (name, meaning)
GROUP_COLUMNS: Final = (
    ("group", "consumer group id"),
    ("rebalances", "completed rebalances ('Stabilized group' lines and their equivalents)"),
    ("max_generation", "highest generation a completed rebalance created"),
    ("members_left", "members removed by an explicit LeaveGroup (poll timeouts included)"),
    ("members_left_poll_timeout", "of members_left: the LeaveGroup reason is a poll timeout"),
    ("members_expired", "members removed by the coordinator on heartbeat (session) expiry"),
    ("members_removed_other", "members removed for not rejoining / not syncing in time"),
    ("members_joined", "new dynamic members (Kafka 'Dynamic member ... joins')"),
    ("static_replaced", "static members replaced by a new member id"),
    ("rebalances_per_hour", "rebalances / hours between the group's first and last event"),
    ("duration_ms_p50", "median rebalance duration (ms)"),
    ("duration_ms_max", "longest rebalance duration (ms)"),
    ("storms", "rebalance storms (see storms.csv)"),
    ("top_reason", "most frequent reason_kind"),
    ("brokers", "brokers that logged events of the group"),
    ("first_seen", "first event (UTC)"),
    ("last_seen", "last event (UTC)"),
)

MEMBER_ID: Final = (
    r"[\w.:-]*[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}[\w.-]*?(?=[\s;:,)]|$)"
    r"|member-\d+"
)


@dataclass(frozen=True)
class AnalyzeOptions:
    storm_count: int = 5
    storm_window_s: int = 600
    top_n: int = 20
    sample_unparsed: int = 20


def rebalances_of(events: DataFrame) -> DataFrame:
    """One row per completed rebalance (:data:`REBALANCE_COLUMNS`). For Kafka logs the start
    is the first "Preparing to rebalance" of the same group on the same source after the
    previous "Stabilized"/"is now empty" line."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    phases = events.where(
        F.col("event").isin("rebalance_started", "rebalance_completed", "group_empty")
    )
    order = Window.partitionBy("source", "group").orderBy("time", "seq")
    ends = F.when(F.col("event").isin("rebalance_completed", "group_empty"), 1).otherwise(0)
    phases = phases.withColumn(
        "epoch",
        F.coalesce(F.sum(ends).over(order.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)),
    )
    starts = (
        phases.where(F.col("event") == "rebalance_started")
        .groupBy("source", "group", "epoch")
        .agg(
            F.min("time").alias("first_start"),
            F.min_by("reason", F.struct("time", "seq")).alias("first_reason"),
        )
    )
    done = phases.where(F.col("event") == "rebalance_completed").join(
        starts, ["source", "group", "epoch"], "left"
    )
    started = F.coalesce(F.col("started_at"), F.col("first_start"))
    reason = F.coalesce(F.col("reason"), F.col("first_reason"))
    return done.select(
        "source",
        "source_kind",
        "broker",
        "group",
        "generation",
        "members",
        started.alias("started_at"),
        F.col("time").alias("completed_at"),
        ((F.unix_micros(F.col("time")) - F.unix_micros(started)) / F.lit(1000))
        .cast("long")
        .alias("duration_ms"),
        reason.alias("reason"),
        F.regexp_replace(
            F.regexp_replace(F.coalesce(reason, F.lit("unknown")), MEMBER_ID, "<member>"),
            r"\.$",
            "",
        ).alias("reason_kind"),
    )


def storms_of(rebalances: DataFrame, count: int, window_s: int) -> DataFrame:
    """Rebalance storms: maximal stretches where a group completed at least ``count``
    rebalances within ``window_s`` seconds. Columns: group, start, end, rebalances, peak."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    t = F.unix_micros("completed_at") / F.lit(1_000_000)
    rb = rebalances.select("group", "completed_at", t.alias("t"))
    frame = Window.partitionBy("group").orderBy("t").rangeBetween(-window_s, 0)
    rb = rb.withColumn("in_window", F.count("*").over(frame)).withColumn(
        "window_start", F.min("t").over(frame)
    )
    hot = rb.where(F.col("in_window") >= count)
    by_time = Window.partitionBy("group").orderBy("t")
    hot = hot.withColumn("prev", F.lag("t").over(by_time))
    hot = hot.withColumn(
        "storm",
        F.sum(
            F.when(F.col("prev").isNull() | (F.col("window_start") > F.col("prev")), 1).otherwise(0)
        ).over(by_time.rowsBetween(Window.unboundedPreceding, 0)),
    )
    spans = hot.groupBy("group", "storm").agg(
        F.min("window_start").alias("start_t"),
        F.max("t").alias("end_t"),
        F.max("in_window").alias("peak"),
    )
    counted = (
        spans.join(rb.select("group", F.col("t").alias("rt")), "group")
        .where((F.col("rt") >= F.col("start_t")) & (F.col("rt") <= F.col("end_t")))
        .groupBy("group", "storm", "start_t", "end_t", "peak")
        .agg(F.count("*").alias("rebalances"))
    )
    return counted.select(
        "group",
        F.timestamp_micros((F.col("start_t") * 1_000_000).cast("long")).alias("start"),
        F.timestamp_micros((F.col("end_t") * 1_000_000).cast("long")).alias("end"),
        F.round(F.col("end_t") - F.col("start_t"), 3).alias("span_s"),
        "rebalances",
        F.col("peak").alias("peak_in_window"),
    ).orderBy("start")


def group_table(events: DataFrame, rebalances: DataFrame, storms: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    removed = F.col("event") == "member_removed"
    cause = F.col("cause")
    per_group = events.groupBy("group").agg(
        F.sum(F.when(removed & cause.isin("left", "poll_timeout"), 1).otherwise(0)).alias(
            "members_left"
        ),
        F.sum(F.when(removed & (cause == "poll_timeout"), 1).otherwise(0)).alias(
            "members_left_poll_timeout"
        ),
        F.sum(F.when(removed & (cause == "session_timeout"), 1).otherwise(0)).alias(
            "members_expired"
        ),
        F.sum(
            F.when(removed & ~cause.isin("left", "poll_timeout", "session_timeout"), 1).otherwise(0)
        ).alias("members_removed_other"),
        F.sum(F.when(F.col("event") == "member_joined", 1).otherwise(0)).alias("members_joined"),
        F.sum(F.when(F.col("event") == "static_member_replaced", 1).otherwise(0)).alias(
            "static_replaced"
        ),
        F.concat_ws(" ", F.sort_array(F.collect_set("broker"))).alias("brokers"),
        F.min("time").alias("first_seen"),
        F.max("time").alias("last_seen"),
    )
    rb = rebalances.groupBy("group").agg(
        F.count("*").alias("rebalances"),
        F.max("generation").alias("max_generation"),
        F.percentile_approx("duration_ms", 0.5).alias("duration_ms_p50"),
        F.max("duration_ms").alias("duration_ms_max"),
        F.mode("reason_kind").alias("top_reason"),
    )
    st = storms.groupBy("group").agg(F.count("*").alias("storms"))
    hours = (F.unix_micros("last_seen") - F.unix_micros("first_seen")) / F.lit(3.6e9)
    table = per_group.join(rb, "group", "left").join(st, "group", "left")
    table = table.fillna(0, subset=["rebalances", "max_generation", "storms"])
    table = table.withColumn(
        "rebalances_per_hour",
        F.when(hours > 0, F.round(F.col("rebalances") / hours, 3)),
    )
    return table.select(*[name for name, _ in GROUP_COLUMNS]).orderBy(F.desc("rebalances"), "group")


def broker_table(events: DataFrame, rebalances: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    removed = F.col("event") == "member_removed"
    ev = events.groupBy("broker").agg(
        F.countDistinct("group").alias("groups"),
        F.sum(F.when(removed & (F.col("cause") == "session_timeout"), 1).otherwise(0)).alias(
            "members_expired"
        ),
        F.sum(F.when(removed & F.col("cause").isin("left", "poll_timeout"), 1).otherwise(0)).alias(
            "members_left"
        ),
    )
    rb = rebalances.groupBy("broker").agg(
        F.count("*").alias("rebalances"),
        F.percentile_approx("duration_ms", 0.5).alias("duration_ms_p50"),
    )
    return (
        ev.join(rb, "broker", "left")
        .fillna(0, subset=["rebalances"])
        .select(
            "broker", "groups", "rebalances", "members_expired", "members_left", "duration_ms_p50"
        )
        .orderBy(F.desc("rebalances"), "broker")
    )


def analyze(
    spark: SparkSession, paths: Sequence[str], out: Path, options: AnalyzeOptions | None = None
) -> dict[str, Any]:
    """Run the whole analysis; returns summary.json's content."""
    from pyspark.sql import functions as F

    options = options or AnalyzeOptions()
    inputs = classify_inputs(paths)
    from pyspark.sql import Observation

    observation = Observation("lines")
    events, lines = read_events(spark, inputs, observation)
    out.mkdir(parents=True, exist_ok=True)
    # one pass over the text: the events (small next to the logs) are written, the lines
    # counted on the way (an observation), and the events read back for every table
    events.write.mode("overwrite").parquet(str(out / "events"))
    counts = (
        _line_counts(lines, observation.get, options.sample_unparsed)
        if lines is not None
        else _no_lines()
    )
    events = spark.read.parquet(str(out / "events"))
    rebalances = rebalances_of(events)
    rebalances.orderBy("group", "completed_at").coalesce(1).write.mode("overwrite").parquet(
        str(out / "rebalances")
    )
    rebalances = spark.read.parquet(str(out / "rebalances"))
    storms = storms_of(rebalances, options.storm_count, options.storm_window_s)
    storms_pd: Any = storms.toPandas()
    groups_pd: Any = group_table(events, rebalances, storms).toPandas()
    brokers_pd: Any = broker_table(events, rebalances).toPandas()
    _write_csv(groups_pd, out / "groups.csv")
    _write_csv(brokers_pd, out / "brokers.csv")
    _write_csv(storms_pd, out / "storms.csv")
    summary: dict[str, Any] = {
        **counts,
        "inputs": {"text": list(inputs.text), "sim": list(inputs.sim)},
        "events": events.count(),
        "events_by_source_kind": {
            row["source_kind"]: row["count"]
            for row in events.groupBy("source_kind").count().collect()
        },
        "groups": len(groups_pd),
        "rebalances": int(groups_pd["rebalances"].sum()) if len(groups_pd) else 0,
        "storms": len(storms_pd),
        "storm_count": options.storm_count,
        "storm_window_s": options.storm_window_s,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    from groupcoord.pipeline.analyze_report import write_report

    per_hour = (
        rebalances.groupBy("group", F.date_trunc("hour", "completed_at").alias("hour"))
        .count()
        .toPandas()
    )
    timeline = rebalances.select(
        "group", "source_kind", "completed_at", "duration_ms", "members"
    ).toPandas()
    reasons = (
        rebalances.groupBy("reason_kind")
        .count()
        .orderBy(F.desc("count"))
        .limit(options.top_n)
        .toPandas()
    )
    write_report(
        out / "report",
        summary=summary,
        groups=groups_pd,
        brokers=brokers_pd,
        storms=storms_pd,
        per_hour=per_hour,
        timeline=timeline,
        reasons=reasons,
        top_n=options.top_n,
    )
    return summary


def _no_lines() -> dict[str, Any]:
    return {
        "lines": 0,
        "lines_parsed": 0,
        "lines_unparsed": 0,
        "lines_continuation": 0,
        "unparsed_sample": [],
    }


def _line_counts(lines: DataFrame, observed: dict[str, Any], sample: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    total = int(observed.get("lines") or 0)
    parsed = int(observed.get("lines_parsed") or 0)
    unparsed = (
        # only scanned again when there is something to find (stops at ``sample`` lines)
        lines.where(~F.col("parsed")).select("source", "line").limit(sample).collect()
        if parsed < total
        else []
    )
    return {
        "lines": total,
        "lines_parsed": parsed,
        "lines_unparsed": total - parsed,
        "lines_continuation": int(observed.get("lines_continuation") or 0),
        "unparsed_sample": [
            {
                "source": r["source"].removeprefix("file://").removeprefix("file:"),
                "line": r["line"][:300],
            }
            for r in unparsed
        ],
    }


def _write_csv(frame: Any, path: Path) -> None:
    frame.to_csv(path, index=False)
