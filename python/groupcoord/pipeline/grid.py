"""A sweep's grid file: a base scenario, axes of values for scenario keys, and seeds.

    scenario = "base.toml"                 # relative to the grid file
    seeds = [1, 2]                         # or: seeds = 5 (the seeds 1..5)
    [axes]
    "consumer.max_poll_records" = [50, 500]
    "consumer.heartbeat_thread" = [true, false]

Axis keys are the dotted keys of ``groupcoord simulate --set`` (any scenario key, ``timeline``
included); their values are TOML values, as ``--set`` reads them. The grid is the product of
the axes times the seeds: one :class:`Run` per (combination, seed), in a stable order.

Everything is checked before any run starts: every combination is applied to the base
scenario with :meth:`Scenario.replace`, so a typo'd key, a value out of range or a
combination the scenario refuses (heartbeat interval >= session timeout, ...) is a
:class:`GridError` naming the key, before Spark is even started.

``run_id`` is ``"r"`` + the first 16 hex digits of the SHA-256 of the canonical JSON of
``{"overrides": ..., "seed": ...}`` (keys sorted, no spaces): the same run has the same id
in every sweep, so a resumed sweep finds the runs it already wrote. (The leading letter keeps
Spark's partition discovery from reading an all-digit id as a number.)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from groupcoord.pipeline.session import PipelineError
from groupcoord.sim import Scenario, ScenarioError
from groupcoord.tomlfile import load_toml

__all__ = ["RESERVED_COLUMNS", "Grid", "GridError", "Run", "axis_kind", "column_value", "run_id"]

#: columns of runs/ that are not axes or summary keys
RESERVED_COLUMNS: Final = ("run_id", "seed", "error", "wall_s")

_GRID_KEYS: Final = ("scenario", "seeds", "axes")


class GridError(PipelineError):
    """The grid file cannot describe a sweep; the message names the key and says why."""


def canonical_json(value: Any) -> str:
    """The one JSON text of ``value``: sorted keys, no spaces, floats as Python writes them."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def run_id(overrides: Mapping[str, Any], seed: int) -> str:
    """The stable id of the run of ``overrides`` with ``seed`` (see the module's doc)."""
    text = canonical_json({"overrides": dict(overrides), "seed": seed})
    return "r" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def axis_kind(values: tuple[Any, ...]) -> str:
    """How an axis's values are stored in runs/: ``"bool"``, ``"int"`` (int64), ``"float"``
    (float64: numbers, some of them not integers), ``"string"``, or ``"json"`` (a string
    holding the canonical JSON of each value: lists, tables, mixed types)."""
    if all(isinstance(v, bool) for v in values):
        return "bool"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "int"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        return "float"
    if all(isinstance(v, str) for v in values):
        return "string"
    return "json"


def column_value(kind: str, value: Any) -> Any:
    """``value`` as the runs/ column of an axis of ``kind`` holds it."""
    if kind == "float":
        return float(value)
    if kind == "json":
        return canonical_json(value)
    return value


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation of the sweep: the base scenario with ``overrides``, run with ``seed``."""

    run_id: str
    seed: int
    overrides: Mapping[str, Any]

    @property
    def overrides_json(self) -> str:
        return canonical_json(dict(self.overrides))


@dataclass(frozen=True, slots=True)
class Grid:
    """A validated grid (build it with :meth:`from_toml` or :meth:`from_dict`)."""

    path: Path | None
    scenario_path: Path
    scenario: Scenario
    seeds: tuple[int, ...]
    axes: Mapping[str, tuple[Any, ...]]

    @classmethod
    def from_toml(cls, path: str | Path) -> Grid:
        """Read and validate a grid file (``scenario`` is relative to it)."""
        path = Path(path)
        doc = load_toml(path, "grid file", GridError)
        return cls.from_dict(doc, base_dir=path.parent, path=path)

    @classmethod
    def from_dict(
        cls, doc: Mapping[str, Any], *, base_dir: str | Path = ".", path: Path | None = None
    ) -> Grid:
        """Validate a grid given as nested dicts (what TOML parses to)."""
        where = f"{path}: " if path is not None else ""
        try:
            return cls._build(doc, Path(base_dir), path)
        except GridError as exc:
            raise GridError(f"{where}{exc}") from None

    @classmethod
    def _build(cls, doc: Mapping[str, Any], base_dir: Path, path: Path | None) -> Grid:
        for key in doc:
            if key not in _GRID_KEYS:
                raise GridError(f"unknown key {key!r} (a grid has {', '.join(_GRID_KEYS)})")
        raw_scenario = doc.get("scenario")
        if not isinstance(raw_scenario, str) or not raw_scenario:
            raise GridError('"scenario" is required: the base scenario file, relative to the grid')
        scenario_path = (base_dir / raw_scenario).resolve()
        try:
            scenario = Scenario.from_toml(scenario_path)
        except ScenarioError as exc:
            raise GridError(f"scenario {raw_scenario!r}: {exc}") from None
        seeds = _seeds(doc.get("seeds", [scenario.seed]))
        raw_axes = doc.get("axes", {})
        if not isinstance(raw_axes, Mapping):
            raise GridError("[axes] must be a table of dotted scenario key -> list of values")
        axes: dict[str, tuple[Any, ...]] = {}
        for key, values in raw_axes.items():
            axes[key] = _axis(key, values)
        grid = cls(path, scenario_path, scenario, seeds, axes)
        grid._check_combinations()
        return grid

    # ------------------------------------------------------------------ checks

    def _check_combinations(self) -> None:
        # each value alone first, so the error names the one value at fault
        for key, values in self.axes.items():
            for value in values:
                try:
                    self.scenario.replace(**{key: value})
                except ScenarioError as exc:
                    raise GridError(f"axes.{key!r} = {_show(value)}: {exc}") from None
        for overrides in self.combinations():
            try:
                self.scenario.replace(**overrides)
            except ScenarioError as exc:
                shown = ", ".join(f"{k} = {_show(v)}" for k, v in overrides.items())
                raise GridError(f"the combination {shown}: {exc}") from None

    # ------------------------------------------------------------------ expansion

    def combinations(self) -> Iterator[dict[str, Any]]:
        """Every combination of the axes' values, the first axis varying slowest."""
        keys = list(self.axes)
        for values in itertools.product(*(self.axes[k] for k in keys)):
            yield dict(zip(keys, values, strict=True))

    def runs(self) -> list[Run]:
        """One run per (combination, seed), in order (combinations, then seeds)."""
        out = [
            Run(run_id(overrides, seed), seed, overrides)
            for overrides in self.combinations()
            for seed in self.seeds
        ]
        if len({r.run_id for r in out}) != len(out):  # pragma: no cover - 64-bit hash
            raise GridError("two runs of the grid have the same run_id (hash collision)")
        return out

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.axes.values()) * len(self.seeds)

    def axis_kinds(self) -> dict[str, str]:
        """Each axis's column kind (:func:`axis_kind`)."""
        return {key: axis_kind(values) for key, values in self.axes.items()}

    def fingerprint(self) -> str:
        """The canonical JSON of the base scenario with every default filled in: a resumed
        sweep must have the same base (its run ids name overrides of it, not the base)."""
        return canonical_json(self.scenario.to_dict())


def _seeds(raw: Any) -> tuple[int, ...]:
    if isinstance(raw, int) and not isinstance(raw, bool):
        if raw < 1:
            raise GridError(f"seeds = {raw}: a count of seeds must be >= 1")
        return tuple(range(1, raw + 1))
    if not isinstance(raw, list) or not raw:
        raise GridError("seeds must be a non-empty list of ints >= 0 (or a count: seeds = 5)")
    for i, seed in enumerate(raw):
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise GridError(f"seeds[{i}] must be an int >= 0, got {seed!r}")
    if len(set(raw)) != len(raw):
        raise GridError("seeds names a seed twice")
    return tuple(raw)


def _axis(key: Any, values: Any) -> tuple[Any, ...]:
    if not isinstance(key, str) or not key:
        raise GridError(f"axes: bad key {key!r}")
    if key == "seed":
        raise GridError('axes."seed": give the seeds with the top-level "seeds" list')
    if key in RESERVED_COLUMNS:
        raise GridError(f"axes.{key!r}: the name is taken by a column of runs/")
    if not isinstance(values, list) or not values:
        raise GridError(f"axes.{key!r} must be a non-empty list of values")
    seen: set[str] = set()
    for value in values:
        text = canonical_json(value)
        if text in seen:
            raise GridError(f"axes.{key!r} lists {_show(value)} twice")
        seen.add(text)
    return tuple(values)


def _show(value: Any) -> str:
    text = canonical_json(value)
    return text if len(text) <= 80 else text[:77] + "..."
