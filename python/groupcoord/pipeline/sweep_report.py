"""The sweep's report, ``OUT/report/index.html`` with its PNG plots and CSV tables, made on the
driver from ``OUT/runs/`` (one row per run: small, so pandas, not Spark).

Definitions used in the report:

- **unwanted rebalances per hour**: unwanted rebalances (below) divided by the simulated
  duration in hours. (Not every rebalance: the group's first would read as 20 per hour in a
  3-minute run with nothing else happening.)
- **unwanted rebalances**: every completed rebalance after the group's first, i.e.
  ``max(rebalances - 1, 0)``. The first forms the group; in a steady workload every later one
  is a cost a setting could avoid (a poll or session timeout, a restart that static
  membership would absorb). A grid whose timeline *wants* rebalances (a scale-out) counts
  them too: read its recommendations as "fewest rebalances";
- **settings** are the axes an operator chooses: ``consumer.*``, ``coordinator.*``,
  ``group.assignors`` and ``group.static``; the other axes (members, topics, workload,
  network, timeline, duration) make the **workload**. For each workload the recommendations
  table lists the settings whose runs had zero unwanted rebalances under every seed, and of
  those the one with the least unavailable partition-seconds (mean over seeds).
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from groupcoord.pipeline.grid import Grid, column_value
from groupcoord.pipeline.html import Report, new_figure

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["default_heatmap_axes", "is_setting", "write_sweep_report"]

_SETTING_KEYS: Final = frozenset({"group.assignors", "group.static"})
_SETTING_PREFIXES: Final = ("consumer.", "coordinator.")
_EAGER: Final = frozenset({"range", "roundrobin", "sticky"})
#: most bars or rows a figure shows before it aggregates
_MAX_GROUPS: Final = 12


def is_setting(axis: str) -> bool:
    """Whether ``axis`` is a setting an operator chooses (else it describes the workload)."""
    return axis in _SETTING_KEYS or axis.startswith(_SETTING_PREFIXES)


def default_heatmap_axes(grid: Grid) -> tuple[str, str] | None:
    """The two axes with the most values (the first in the file on a tie), or None."""
    if len(grid.axes) < 2:
        return None
    ranked = sorted(grid.axes, key=lambda k: -len(grid.axes[k]))  # stable: file order on ties
    return ranked[0], ranked[1]


def label(value: Any) -> str:
    """A short text for an axis value (JSON values shown readably)."""
    if hasattr(value, "item"):  # a numpy scalar from pandas
        value = value.item()
    if isinstance(value, str) and value[:1] in "[{":
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):
            return ",".join(value)
        if all(isinstance(v, dict) and "action" in v for v in value):
            return " + ".join(_action(v) for v in value) or "none"
        return json.dumps(value)
    if isinstance(value, dict) and value.get("dist") == "constant":
        return f"{label(value.get('value'))}"
    if isinstance(value, dict) and value.get("dist") == "uniform":
        return f"{label(value.get('low'))}-{label(value.get('high'))}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={label(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _action(event: dict[str, Any]) -> str:
    """``restart x10 (5s down) @30s``: a timeline event in a few words."""
    text = str(event["action"])
    if "members" in event:
        text += " members " + ",".join(map(str, event["members"]))
    elif "count" in event:
        text += (
            f" x{event['count']}"
            if "topic" not in event
            else f" {event['topic']}->{event['count']}"
        )
    if event.get("downtime_s"):
        text += f" ({label(event['downtime_s'])}s down)"
    if event.get("duration_s"):
        text += f" ({label(event['duration_s'])}s)"
    return text + f" @{label(event.get('at_s', '?'))}s"


def _membership(assignors: Any, static: Any) -> str:
    if isinstance(assignors, str):
        assignors = json.loads(assignors) if assignors[:1] == "[" else [assignors]
    first = next(iter(assignors)) if assignors else "cooperative-sticky"
    kind = f"eager ({first})" if first in _EAGER else "cooperative"
    return f"static, {kind}" if bool(static) else kind


def write_sweep_report(
    out: str | Path, grid: Grid, *, heatmap_axes: tuple[str, str] | None = None
) -> Path | str:
    """Write ``out/report/`` from ``out/runs/`` (the grid's runs); return index.html (a
    URI when ``out`` is one: the report is made in a local directory, then copied there)."""
    from groupcoord.pipeline.sweep import read_runs

    frame = read_runs(out, grid).to_pandas()
    title = f"Sweep: {grid.path.name if grid.path else 'grid'}"
    report = Report(title)
    axes = list(grid.axes)
    kinds = grid.axis_kinds()
    order = {k: [column_value(kinds[k], v) for v in grid.axes[k]] for k in axes}
    failed = frame[frame["error"].notna()]
    frame = _in_grid_order(frame, order)
    ok = frame[frame["error"].isna()].copy()
    ok["unwanted_rebalances"] = (ok["rebalances"] - 1).clip(lower=0)
    ok["unwanted_rebalances_per_hour"] = ok["unwanted_rebalances"] / (ok["duration_s"] / 3600)

    report.text(
        f"Base scenario {grid.scenario_path.name}; {len(grid.axes)} axes "
        f"({', '.join(f'{k} x{len(v)}' for k, v in grid.axes.items()) or 'none'}), "
        f"seeds {', '.join(map(str, grid.seeds))}: {grid.size} runs, {len(frame)} in runs/, "
        f"{len(failed)} raised."
    )
    report.text(
        "Unwanted rebalances: every completed rebalance after the group's first "
        "(max(rebalances - 1, 0)). Unavailable partition-seconds: the simulator's sum over "
        "partitions of the time no running application processed them. Means are over "
        "seeds (and over the axes a plot does not show); spreads are min..max over those runs.",
        note=True,
    )
    if ok.empty:
        report.heading("No results")
        report.text("No run finished without an error; see the failed runs below.")
    else:
        _heatmaps(report, ok, order, heatmap_axes or default_heatmap_axes(grid))
        _membership_bars(report, ok, grid, order)
        _lag(report, ok, order)
        _recommendations(report, ok, frame, order)
        _combinations(report, ok, order)
    if not failed.empty:
        report.heading("Runs that raised")
        report.table(
            "failed_runs",
            ["run_id", "seed", *axes, "error"],
            [
                [r["run_id"], int(r["seed"]), *(label(r[a]) for a in axes), r["error"]]
                for _, r in failed.iterrows()
            ],
            caption="Each run's exception (type, message, where); the sweep went on.",
        )
    if "://" not in str(out):
        return report.write(Path(out) / "report")
    return _write_to_uri(report, str(out))


def _write_to_uri(report: Report, out: str) -> str:
    """``report`` into ``out/report/`` on the filesystem of the URI ``out`` (matplotlib and
    the CSV writer need local files: they are written to a temporary directory first)."""
    import tempfile

    import pyarrow.fs as pafs

    from groupcoord.pipeline.sweep import out_filesystem, out_location

    location = out_location(out)
    fs, base = out_filesystem(location)
    with tempfile.TemporaryDirectory(prefix="groupcoord-report-") as local:
        report.write(local)
        fs.create_dir(f"{base}/report", recursive=True)
        pafs.copy_files(
            local,
            f"{base}/report",
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=fs,
        )
    return f"{location}/report/index.html"


def _in_grid_order(frame: pd.DataFrame, order: dict[str, list[Any]]) -> pd.DataFrame:
    """The runs sorted as the grid lists its axes' values (then by seed), so that groups,
    bars and table rows come in the grid file's order."""
    if frame.empty:
        return frame
    keys = [
        frame[axis].map({v: i for i, v in enumerate(values)}).fillna(len(values))
        for axis, values in order.items()
    ]
    position = list(zip(*keys, frame["seed"], strict=True)) if keys else list(frame["seed"])
    ranks = sorted(range(len(frame)), key=lambda i: position[i])
    return frame.iloc[ranks].reset_index(drop=True)


# ---------------------------------------------------------------------- sections


def _heatmaps(
    report: Report,
    ok: pd.DataFrame,
    order: dict[str, list[Any]],
    pair: tuple[str, str] | None,
) -> None:
    report.heading("Heatmaps")
    if pair is None:
        report.text("The grid has fewer than two axes: no heatmap.")
        return
    y_axis, x_axis = pair
    for name, metric, unit in (
        (
            "heatmap_unwanted_rebalances_per_hour",
            "unwanted_rebalances_per_hour",
            "unwanted rebalances / hour",
        ),
        (
            "heatmap_unavailable",
            "unavailable_partition_seconds",
            "unavailable partition-seconds",
        ),
    ):
        table = ok.groupby([y_axis, x_axis])[metric].mean()
        ys, xs = order[y_axis], order[x_axis]
        grid_values = [
            [float(table.get((y, x), math.nan)) for x in xs] for y in ys
        ]  # rows: y values
        fig, ax = new_figure(max(6.0, 1.1 * len(xs) + 3), max(3.5, 0.6 * len(ys) + 2))
        image = ax.imshow(grid_values, aspect="auto", cmap="viridis", origin="lower")
        ax.set_xticks(range(len(xs)), [label(x) for x in xs], rotation=30, ha="right")
        ax.set_yticks(range(len(ys)), [label(y) for y in ys])
        ax.set_xlabel(x_axis)
        ax.set_ylabel(y_axis)
        ax.set_title(f"{unit.capitalize()} by {y_axis} and {x_axis}")
        bar = fig.colorbar(image, ax=ax)
        bar.set_label(unit)
        top = max((v for row in grid_values for v in row if not math.isnan(v)), default=0.0)
        for i, row in enumerate(grid_values):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    color = "black" if top and v > 0.6 * top else "white"
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", color=color, fontsize=8)
        report.figure(
            name,
            fig,
            f"{unit.capitalize()} (mean over seeds and the other axes) by {y_axis} (rows) "
            f"and {x_axis} (columns).",
        )


def _membership_bars(
    report: Report, ok: pd.DataFrame, grid: Grid, order: dict[str, list[Any]]
) -> None:
    if "group.assignors" not in grid.axes and "group.static" not in grid.axes:
        return
    report.heading("Eager vs cooperative vs static")
    frame = ok.copy()
    assignors = frame.get("group.assignors")
    static = frame.get("group.static")
    frame["membership"] = [
        _membership(
            grid.scenario.group.assignors if assignors is None else assignors.iloc[i],
            grid.scenario.group.static if static is None else static.iloc[i],
        )
        for i in range(len(frame))
    ]
    workload_axes = [a for a in order if not is_setting(a)]
    frame["workload"] = _combo_labels(frame, workload_axes) if workload_axes else "all runs"
    workloads = list(dict.fromkeys(frame["workload"]))[:_MAX_GROUPS]
    kinds = sorted(set(frame["membership"]), key=_membership_rank)
    fig, _ = new_figure(max(8.0, 2.0 * len(workloads) + 3), 7.5)
    fig.clf()
    plots = fig.subplots(2, 1, sharex=True)
    width = 0.8 / max(1, len(kinds))
    rows = []
    for metric, ax, unit in (
        ("rebalances", plots[0], "rebalances (count)"),
        ("unavailable_partition_seconds", plots[1], "unavailable partition-seconds"),
    ):
        for k, kind in enumerate(kinds):
            means, lows, highs = [], [], []
            for w in workloads:
                values = frame[(frame["membership"] == kind) & (frame["workload"] == w)][metric]
                if values.empty:
                    means.append(math.nan)
                    lows.append(0.0)
                    highs.append(0.0)
                    continue
                mean = float(values.mean())
                means.append(mean)
                lows.append(mean - float(values.min()))
                highs.append(float(values.max()) - mean)
                if metric == "rebalances":
                    sub = frame[(frame["membership"] == kind) & (frame["workload"] == w)]
                    rows.append(
                        [
                            w,
                            kind,
                            len(sub),
                            float(sub["rebalances"].mean()),
                            int(sub["rebalances"].min()),
                            int(sub["rebalances"].max()),
                            float(sub["unavailable_partition_seconds"].mean()),
                            float(sub["unavailable_partition_seconds"].min()),
                            float(sub["unavailable_partition_seconds"].max()),
                        ]
                    )
            xs = [i + (k - (len(kinds) - 1) / 2) * width for i in range(len(workloads))]
            ax.bar(xs, means, width, yerr=[lows, highs], capsize=3, label=kind)
        ax.set_ylabel(unit)
        ax.grid(axis="y", alpha=0.3)
    plots[0].set_title(
        "Rebalances and unavailability by membership protocol (bars: mean, "
        "whiskers: min..max over the runs)"
    )
    plots[0].legend(fontsize=8)
    plots[1].set_xticks(
        range(len(workloads)), [w.replace(", ", "\n") for w in workloads], fontsize=8
    )
    plots[1].set_xlabel("workload (" + (", ".join(workload_axes) or "all runs") + ")")
    report.figure(
        "membership",
        fig,
        "Eager vs cooperative vs static membership per workload: completed rebalances (top) "
        "and unavailable partition-seconds (bottom); whiskers span the runs (seeds and other "
        "setting axes) behind each bar.",
    )
    report.table(
        "membership",
        [
            "workload",
            "membership",
            "runs",
            "rebalances mean",
            "rebalances min",
            "rebalances max",
            "unavailable partition-s mean",
            "min",
            "max",
        ],
        rows,
    )


def _membership_rank(kind: str) -> tuple[int, int, str]:
    # eager, cooperative, then their static forms
    return (int(kind.startswith("static")), int("cooperative" in kind), kind)


def _lag(report: Report, ok: pd.DataFrame, order: dict[str, list[Any]]) -> None:
    report.heading("Lag percentiles")
    axes = list(order)[:6]
    if not axes:
        fig, ax = new_figure(6, 4)
        values = [float(ok[c].mean()) for c in ("p50_lag_ms", "p99_lag_ms", "max_lag_ms")]
        ax.bar(["p50", "p99", "max"], values)
        ax.set_ylabel("end-to-end lag (ms)")
        ax.set_title("Record lag (mean over seeds)")
    else:
        fig, _ = new_figure(6.5 * min(len(axes), 2), 4.2 * math.ceil(len(axes) / 2))
        fig.clf()
        cols = min(len(axes), 2)
        rows = math.ceil(len(axes) / 2)
        for n, axis in enumerate(axes):
            ax = fig.add_subplot(rows, cols, n + 1)
            values = order[axis]
            width = 0.27
            for k, (column, name) in enumerate(
                (("p50_lag_ms", "p50"), ("p99_lag_ms", "p99"), ("max_lag_ms", "max"))
            ):
                means = ok.groupby(axis)[column].mean()
                ys = [max(float(means.get(v, math.nan)), 0.5) for v in values]
                ax.bar([i + (k - 1) * width for i in range(len(values))], ys, width, label=name)
            ax.set_yscale("log")
            ax.set_xticks(range(len(values)), [label(v) for v in values], rotation=20, ha="right")
            ax.set_xlabel(axis)
            ax.set_ylabel("lag (ms, log scale)")
            ax.set_title(f"Record lag by {axis}")
            ax.grid(axis="y", alpha=0.3)
            if n == 0:
                ax.legend(fontsize=8)
        with warnings.catch_warnings():  # long value labels: savefig's tight bbox copes
            warnings.simplefilter("ignore", UserWarning)
            fig.tight_layout()
    report.figure(
        "lag",
        fig,
        "End-to-end record lag (processing finished minus arrival; records never processed "
        "count with their wait until the end): p50, p99 and max, mean over the runs with each "
        "axis value.",
    )


def _recommendations(
    report: Report, ok: pd.DataFrame, frame: pd.DataFrame, order: dict[str, list[Any]]
) -> None:
    import pandas as pd

    report.heading("Recommendations")
    settings = [a for a in order if is_setting(a)]
    workload_axes = [a for a in order if not is_setting(a)]
    if not settings:
        report.text(
            "The grid has no setting axes (consumer.*, coordinator.*, group.assignors, "
            "group.static): nothing to recommend."
        )
        return
    raised = {
        _key(r, settings + workload_axes) for _, r in frame[frame["error"].notna()].iterrows()
    }
    rows = []
    groups = ok.groupby(workload_axes, sort=False) if workload_axes else [((), ok)]
    for workload, runs in groups:
        workload = workload if isinstance(workload, tuple) else (workload,)
        per = runs.groupby(settings, sort=False).agg(
            unwanted_max=("unwanted_rebalances", "max"),
            unavailable=("unavailable_partition_seconds", "mean"),
            p99=("p99_lag_ms", "mean"),
            seeds=("seed", "count"),
        )
        per = per.reset_index()
        excluded = [_key(r, settings) + tuple(workload) in raised for _, r in per.iterrows()]
        clean = per[(per["unwanted_max"] == 0) & ~pd.Series(excluded, index=per.index, dtype=bool)]
        if clean.empty:
            best = per.sort_values(["unwanted_max", "unavailable", "p99"], kind="stable").iloc[0]
            verdict = "none with zero; fewest unwanted:"
        else:
            best = clean.sort_values(["unavailable", "p99"], kind="stable").iloc[0]
            verdict = "best of zero-unwanted:"
        rows.append(
            [
                *(label(v) for v in workload),
                f"{len(clean)} of {len(per)}",
                verdict + " " + ", ".join(f"{s}={label(best[s])}" for s in settings),
                int(best["unwanted_max"]),
                float(best["unavailable"]),
                float(best["p99"]),
            ]
        )
    report.table(
        "recommendations",
        [
            *(workload_axes or []),
            "settings with zero unwanted",
            "recommended settings",
            "unwanted rebalances (max over seeds)",
            "unavailable partition-s (mean)",
            "p99 lag ms (mean)",
        ],
        rows,
        caption="For each workload (a combination of the non-setting axes): how many setting "
        "combinations had zero unwanted rebalances under every seed, and of those the one with "
        "the least unavailable partition-seconds.",
    )


def _key(row: Any, axes: Sequence[str]) -> tuple[Any, ...]:
    return tuple(row[a] for a in axes)


def _combo_labels(frame: pd.DataFrame, axes: Sequence[str]) -> list[str]:
    return [
        ", ".join(
            label(row[a]) if a == "timeline" else f"{a.rsplit('.', 1)[-1]}={label(row[a])}"
            for a in axes
        )
        for _, row in frame[list(axes)].iterrows()
    ]


def _combinations(report: Report, ok: pd.DataFrame, order: dict[str, list[Any]]) -> None:
    report.heading("Every combination")
    axes = list(order)
    metrics = [
        "rebalances",
        "unwanted_rebalances",
        "unwanted_rebalances_per_hour",
        "unavailable_partition_seconds",
        "stop_the_world_ms",
        "p50_lag_ms",
        "p99_lag_ms",
        "members_expired_session",
        "members_expired_poll",
        "duplicates",
        "wall_s",
    ]
    if axes:
        table = ok.groupby(axes, sort=False)[metrics].mean().reset_index()
        counts = ok.groupby(axes, sort=False)["seed"].count().reset_index(drop=True)
    else:
        table = ok[metrics].mean().to_frame().T
        counts = ok["seed"].count()
    rows = []
    for i, (_, r) in enumerate(table.iterrows()):
        seeds = int(counts.iloc[i]) if axes else int(counts)
        rows.append([*(label(r[a]) for a in axes), seeds, *(float(r[m]) for m in metrics)])
    report.table(
        "combinations",
        [*axes, "seeds", *metrics],
        rows,
        caption="Means over seeds of each combination (the whole table is in the CSV; "
        "every run's row is in runs/).",
        max_rows=40,
    )
