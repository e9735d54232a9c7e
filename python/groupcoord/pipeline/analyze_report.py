"""The HTML report of ``groupcoord analyze`` (``DIR/report/``): plots and tables built
from the small aggregated tables :func:`groupcoord.pipeline.analyze.analyze` collected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groupcoord.pipeline.html import Report, new_figure

__all__ = ["write_report"]

#: groups drawn one per row in the timeline; the rest are summed under "other groups"
TIMELINE_GROUPS = 25


def write_report(
    directory: Path,
    *,
    summary: dict[str, Any],
    groups: Any,
    brokers: Any,
    storms: Any,
    per_hour: Any,
    timeline: Any,
    reasons: Any,
    top_n: int,
) -> Path:
    report = Report("groupcoord analyze: consumer-group rebalances")
    report.text(
        f"{summary['lines']:,} lines read, {summary['lines_parsed']:,} parsed, "
        f"({summary['lines_continuation']:,} of them continuation lines of stack traces and "
        f"multi-line messages), {summary['lines_unparsed']:,} unparsed; "
        f"{summary['events']:,} group events, {summary['groups']:,} groups, "
        f"{summary['rebalances']:,} completed rebalances, {summary['storms']:,} storms "
        f"(at least {summary['storm_count']} rebalances within {summary['storm_window_s']} s)."
    )
    _timeline(report, timeline)
    _per_hour(report, per_hour)
    _durations(report, timeline)
    _reasons(report, reasons)
    report.heading("Groups")
    top = groups.head(top_n)
    report.table(
        "groups",
        list(groups.columns),
        _rows(groups),
        caption=f"Groups by completed rebalances (top {min(top_n, len(groups))} shown).",
        max_rows=len(top),
    )
    report.heading("Brokers")
    report.table("brokers", list(brokers.columns), _rows(brokers), caption="Per broker (host).")
    report.heading("Rebalance storms")
    if len(storms):
        report.table(
            "storms",
            list(storms.columns),
            _rows(storms),
            caption=f"At least {summary['storm_count']} rebalances of one group within "
            f"{summary['storm_window_s']} s; 'rebalances' counts every rebalance of the storm.",
        )
    else:
        report.text("No storms.", note=True)
    report.heading("Unparsed lines")
    sample = summary.get("unparsed_sample", [])
    if sample:
        report.table(
            "unparsed_sample",
            ["source", "line"],
            [[s["source"], s["line"]] for s in sample],
            caption="A sample of the lines that are no well-formed log record (counted, skipped).",
        )
    else:
        report.text("Every line parsed.", note=True)
    return report.write(directory)


def _rows(frame: Any) -> list[list[object]]:
    rows: list[list[object]] = []
    for record in frame.itertuples(index=False):
        rows.append([_plain(v) for v in record])
    return rows


def _plain(value: object) -> object:
    import math

    if value is None:
        return None
    if hasattr(value, "isoformat"):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item"):
        return value.item()  # numpy scalar
    return value


def _timeline(report: Report, timeline: Any) -> None:
    report.heading("Timeline")
    if not len(timeline):
        report.text("No completed rebalances.", note=True)
        return
    simulated = timeline["source_kind"] == "sim"
    if (~simulated).any():
        _timeline_figure(report, timeline[~simulated], "timeline", "time (UTC)", simulated=False)
    if simulated.any():
        _timeline_figure(
            report, timeline[simulated], "timeline_sim", "virtual time (s)", simulated=True
        )


def _timeline_figure(
    report: Report, timeline: Any, name: str, xlabel: str, *, simulated: bool
) -> None:
    counts = timeline["group"].value_counts()
    shown = list(counts.index[:TIMELINE_GROUPS])
    fig, ax = new_figure(10, max(3.0, 0.35 * len(shown) + 1.5))
    for row, group in enumerate(shown):
        times = timeline.loc[timeline["group"] == group, "completed_at"]
        if simulated:  # virtual time: milliseconds from 0 shown as seconds
            times = (times - times.dt.normalize()).dt.total_seconds()
        ax.scatter(times, [row] * len(times), s=40, marker="|", linewidths=1.5)
    ax.set_yticks(range(len(shown)), shown)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("consumer group")
    more = (
        f" ({len(counts) - len(shown)} more groups not drawn)" if len(counts) > len(shown) else ""
    )
    kind = "simulated groups" if simulated else "per group"
    ax.set_title(f"Completed rebalances, {kind}{more}")
    if not simulated:
        fig.autofmt_xdate()
    report.figure(name, fig, "Each mark is one completed rebalance (Stabilized group).")


def _per_hour(report: Report, per_hour: Any) -> None:
    if not len(per_hour):
        return
    totals = per_hour.groupby("hour")["count"].sum().sort_index()
    totals = totals[totals.index.year >= 1980]  # simulated groups run in virtual time from 0
    if not len(totals):
        return
    fig, ax = new_figure()
    ax.bar(totals.index, totals.values, width=1 / 24 * 0.9, align="edge")
    ax.set_xlabel("hour (UTC)")
    ax.set_ylabel("rebalances per hour")
    ax.set_title("Completed rebalances per hour, all groups")
    fig.autofmt_xdate()
    report.figure("rebalances_per_hour", fig, "Rebalances per hour over every group.")
    report.table(
        "rebalances_per_hour",
        ["group", "hour", "rebalances"],
        [
            [r.group, str(r.hour), int(r.count)]
            for r in per_hour.sort_values(["hour", "group"]).itertuples(index=False)
        ],
        caption="Rebalances per group and hour.",
        max_rows=30,
    )


def _durations(report: Report, timeline: Any) -> None:
    report.heading("Rebalance durations")
    if not len(timeline) or not timeline["duration_ms"].notna().any():
        report.text("No rebalance with a known start.", note=True)
        return
    import numpy as np

    durations = timeline["duration_ms"].dropna()
    seconds = np.maximum(durations.to_numpy(dtype=float) / 1000.0, 0.001)
    fig, ax = new_figure()
    bins = np.logspace(-3, max(np.log10(seconds.max()) + 0.1, 0.0), 40)
    ax.hist(seconds, bins=bins)
    ax.set_xscale("log")
    ax.set_xlabel("duration: preparing to rebalance -> stabilized (s, log scale)")
    ax.set_ylabel("rebalances")
    ax.set_title(
        f"Rebalance duration (n={len(seconds)}, median {np.median(seconds):.3g} s, "
        f"max {seconds.max():.3g} s)"
    )
    report.figure("durations", fig, "Join-phase durations of completed rebalances.")


def _reasons(report: Report, reasons: Any) -> None:
    report.heading("Reasons")
    if not len(reasons):
        report.text("No reasons.", note=True)
        return
    frame = reasons.iloc[::-1]
    labels = [str(r)[:70] for r in frame["reason_kind"]]
    fig, ax = new_figure(10, max(3.0, 0.3 * len(labels) + 1.5))
    ax.barh(labels, frame["count"])
    ax.set_xlabel("completed rebalances")
    ax.set_ylabel("reason (member ids as <member>)")
    ax.set_title("Why rebalances started")
    report.figure("reasons", fig, "The reason of each rebalance's first 'Preparing' line.")
    report.table(
        "reasons",
        ["reason", "rebalances"],
        [[r.reason_kind, int(r.count)] for r in reasons.itertuples(index=False)],
    )
