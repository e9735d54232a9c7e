"""Distributions of durations (processing time per record, network latency), in milliseconds.

A scenario writes one as a TOML table, ``{ dist = "constant", value = 100 }``:

- ``constant``: ``value``
- ``uniform``: ``low``, ``high`` (``low <= high``)
- ``lognormal``: ``median`` and ``p99`` (``p99 >= median > 0``): the shape of service times,
  named by the two numbers people measure instead of mu and sigma
- ``empirical``: ``values``, a non-empty list drawn from uniformly (measured samples)

Every value is >= 0. Sampling takes a :class:`random.Random`, so the caller decides which
stream a draw consumes (the simulator keeps one stream per member and purpose, so the draws
of one member do not depend on what other members did).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["Distribution", "DistributionError"]

#: the standard normal quantile of 0.99: p99 = median * exp(sigma * Z99)
_Z99: Final = 2.3263478740408408

#: a day, in ms: no record or network hop takes longer in a meaningful scenario
_MAX_MS: Final = 86_400_000.0

_FIELDS: Final[Mapping[str, tuple[str, ...]]] = {
    "constant": ("value",),
    "uniform": ("low", "high"),
    "lognormal": ("median", "p99"),
    "empirical": ("values",),
}


class DistributionError(ValueError):
    """A distribution table that cannot be used; the message names the field."""


def _number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DistributionError(f"{where} must be a number, got {value!r}")
    if not math.isfinite(value) or not 0 <= value <= _MAX_MS:
        raise DistributionError(f"{where} must be a number in [0, {_MAX_MS:g}] ms, got {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class Distribution:
    """One distribution of non-negative durations in ms (see the module documentation)."""

    dist: str
    params: tuple[float, ...]

    @classmethod
    def constant(cls, value: float) -> Distribution:
        return cls("constant", (float(value),))

    @classmethod
    def from_table(cls, where: str, table: object) -> Distribution:
        """Parse ``{dist = ..., ...}``; a bare number means a constant. ``where`` is the
        scenario key, for the error message."""
        if isinstance(table, int | float) and not isinstance(table, bool):
            return cls.constant(_number(where, table))
        if not isinstance(table, Mapping):
            raise DistributionError(
                f'{where} must be a number or a table like {{ dist = "constant", value = 10 }}'
            )
        kind = table.get("dist")
        if not isinstance(kind, str) or kind not in _FIELDS:
            raise DistributionError(
                f"{where}.dist must be one of {', '.join(_FIELDS)}, got {kind!r}"
            )
        fields = _FIELDS[kind]
        unknown = sorted(set(table) - {"dist", *fields})
        if unknown:
            raise DistributionError(
                f"{where}: unknown key {unknown[0]!r} for dist = {kind!r} "
                f"(it takes {', '.join(fields)})"
            )
        missing = [f for f in fields if f not in table]
        if missing:
            raise DistributionError(f"{where}: dist = {kind!r} needs {missing[0]!r}")
        if kind == "empirical":
            values = table["values"]
            if not isinstance(values, list) or not values:
                raise DistributionError(f"{where}.values must be a non-empty list of numbers")
            params = tuple(_number(f"{where}.values[{i}]", v) for i, v in enumerate(values))
            return cls(kind, params)
        params = tuple(_number(f"{where}.{f}", table[f]) for f in fields)
        if kind == "uniform" and params[0] > params[1]:
            raise DistributionError(f"{where}: low ({params[0]:g}) must be <= high ({params[1]:g})")
        if kind == "lognormal":
            median, p99 = params
            if median <= 0:
                raise DistributionError(f"{where}.median must be > 0")
            if p99 < median:
                raise DistributionError(f"{where}: p99 ({p99:g}) must be >= median ({median:g})")
        return cls(kind, params)

    def to_table(self) -> dict[str, object]:
        """The TOML table this distribution was read from."""
        if self.dist == "empirical":
            return {"dist": "empirical", "values": list(self.params)}
        return {"dist": self.dist, **dict(zip(_FIELDS[self.dist], self.params, strict=True))}

    @property
    def mean(self) -> float:
        p = self.params
        if self.dist == "constant":
            return p[0]
        if self.dist == "uniform":
            return (p[0] + p[1]) / 2
        if self.dist == "lognormal":
            sigma = math.log(p[1] / p[0]) / _Z99
            return p[0] * math.exp(sigma * sigma / 2)
        return sum(p) / len(p)

    @property
    def maximum(self) -> float | None:
        """The largest value a draw can take, or ``None`` (lognormal: unbounded)."""
        p = self.params
        if self.dist == "constant":
            return p[0]
        if self.dist == "uniform":
            return max(p[0], p[1])
        if self.dist == "lognormal":
            return None
        return max(p)

    def sampler(self, rng: random.Random) -> Callable[[], float]:
        """A zero-argument callable drawing from this distribution with ``rng``."""
        p = self.params
        if self.dist == "constant":
            value = p[0]
            return lambda: value
        if self.dist == "uniform":
            low, high = p
            return lambda: rng.uniform(low, high)
        if self.dist == "lognormal":
            mu = math.log(p[0])
            sigma = math.log(p[1] / p[0]) / _Z99
            return lambda: rng.lognormvariate(mu, sigma)
        values = p
        return lambda: rng.choice(values)
