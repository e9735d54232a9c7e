"""A simulation scenario: the group, its consumers' settings, the coordinator's, the workload,
the network and a timeline of faults, read from TOML and validated field by field.

Every key has a default except those the README lists as required; consumer and
coordinator keys are Kafka's setting names with ``_`` for ``.``. :meth:`Scenario.replace`
takes dotted keys (``"consumer.max_poll_records"``), as ``groupcoord simulate --set`` does.
Every error is a :class:`ScenarioError` naming the key.
"""

from __future__ import annotations

import copy
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from groupcoord.assignors import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from groupcoord.config import INT32_MAX, ConfigError
from groupcoord.member.protocol_choice import choose_protocol
from groupcoord.sim.distributions import Distribution, DistributionError
from groupcoord.tomlfile import load_toml

__all__ = ["ACTIONS", "Scenario", "ScenarioError", "TimelineEvent", "parse_override"]


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the key and the problem."""


#: Kafka's assignor names -> our classes
ASSIGNORS: Final[Mapping[str, type[Assignor]]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

#: timeline actions -> the keys each takes besides at_s and action
ACTIONS: Final[Mapping[str, frozenset[str]]] = {
    "join": frozenset({"count"}),
    "crash": frozenset({"count", "members"}),
    "leave": frozenset({"count", "members"}),
    "restart": frozenset({"count", "members", "downtime_s"}),
    "pause": frozenset({"count", "members", "duration_s"}),
    "network_partition": frozenset({"count", "members", "duration_s"}),
    "partitions": frozenset({"topic", "count"}),
    "coordinator_failover": frozenset({"downtime_s"}),
}

Checker = Callable[[str, Any], Any]


def _int(low: int, high: int = INT32_MAX) -> Checker:
    def check(key: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{key} must be an integer, got {value!r}")
        if not low <= value <= high:
            raise ScenarioError(f"{key} must be in [{low}, {high}], got {value}")
        return value

    return check


def _number(low: float, high: float, *, open_low: bool = False) -> Checker:
    def check(key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScenarioError(f"{key} must be a number, got {value!r}")
        if not math.isfinite(value) or value < low or (open_low and value == low) or value > high:
            bound = f"> {low:g}" if open_low else f">= {low:g}"
            raise ScenarioError(f"{key} must be a number {bound} and <= {high:g}, got {value!r}")
        return float(value)

    return check


def _bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ScenarioError(f"{key} must be true or false, got {value!r}")
    return value


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{key} must be a non-empty string, got {value!r}")
    return value


def _topics(key: str, value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping) or not value:
        raise ScenarioError(f"{key} must be a non-empty table of topic = partitions")
    check = _int(1, 1_000_000)
    return {_str(f"{key} (topic name)", t): check(f"{key}.{t}", n) for t, n in value.items()}


def _assignors(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ScenarioError(f"{key} must be a non-empty list of assignor names")
    for name in value:
        if name not in ASSIGNORS:
            raise ScenarioError(f"{key}: unknown assignor {name!r} (known: {', '.join(ASSIGNORS)})")
    if len(set(value)) != len(value):
        raise ScenarioError(f"{key} lists an assignor twice: {value}")
    try:
        choose_protocol([ASSIGNORS[n]() for n in value])
    except ConfigError as exc:
        raise ScenarioError(f"{key}: {exc}") from None
    return tuple(value)


def _dist(key: str, value: Any) -> Distribution:
    try:
        return Distribution.from_table(key, value)
    except DistributionError as exc:
        raise ScenarioError(str(exc)) from None


def _choice(*options: str) -> Checker:
    def check(key: str, value: Any) -> str:
        if value not in options:
            raise ScenarioError(f"{key} must be one of {', '.join(options)}, got {value!r}")
        return str(value)

    return check


#: section -> key -> (checker, default); ``...`` marks a required key
_SCHEMA: Final[Mapping[str, Mapping[str, tuple[Checker, Any]]]] = {
    "": {
        # a year of virtual time; beyond it the millisecond clock's arithmetic loses meaning
        "duration_s": (_number(0, 366 * 86_400, open_low=True), ...),
        "seed": (_int(0, 2**63 - 1), 0),
    },
    "group": {
        "members": (_int(1, 100_000), ...),
        "topics": (_topics, ...),
        "assignors": (_assignors, ["cooperative-sticky"]),
        "static": (_bool, False),
        "group_id": (_str, "sim-group"),
    },
    "consumer": {
        "session_timeout_ms": (_int(1), 45_000),
        "heartbeat_interval_ms": (_int(1), 3_000),
        "max_poll_interval_ms": (_int(1), 300_000),
        "max_poll_records": (_int(1), 500),
        "heartbeat_thread": (_bool, True),
        "enable_auto_commit": (_bool, True),
        "auto_commit_interval_ms": (_int(0), 5_000),
        "commit_on_revoke": (_bool, True),
        "auto_offset_reset": (_choice("earliest", "latest"), "earliest"),
        "retry_backoff_ms": (_int(0), 100),
        "metadata_max_age_ms": (_int(1), 300_000),
        "close_timeout_ms": (_int(0), 30_000),
        "scheduled_rebalance_max_delay_ms": (_int(0), 0),
    },
    "coordinator": {
        "group_initial_rebalance_delay_ms": (_int(0), 3_000),
        "group_min_session_timeout_ms": (_int(0), 6_000),
        "group_max_session_timeout_ms": (_int(0), 1_800_000),
        "group_max_size": (_int(1), INT32_MAX),
    },
    "workload": {
        # a million records/s per partition is past any real broker's partition
        "records_per_second_per_partition": (_number(0, 1e6), 10.0),
        "record_time_ms": (_dist, {"dist": "constant", "value": 1}),
    },
    "network": {
        "latency_ms": (_dist, {"dist": "constant", "value": 1}),
    },
}

_TIMELINE_CHECKS: Final[Mapping[str, Checker]] = {
    "at_s": _number(0, 366 * 86_400),
    "count": _int(1, 100_000),
    "downtime_s": _number(0, 366 * 86_400),
    "duration_s": _number(0, 366 * 86_400),
    "topic": _str,
}


def _members_list(key: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise ScenarioError(f"{key} must be a non-empty list of member numbers")
    check = _int(0, 1_000_000)
    out = tuple(check(f"{key}[{i}]", v) for i, v in enumerate(value))
    if len(set(out)) != len(out):
        raise ScenarioError(f"{key} names a member twice")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    """One ``[[timeline]]`` entry.

    ``members`` picks members by number (``member-3`` is 3); without it the action takes the
    ``count`` lowest-numbered members running at ``at_s``. ``restart`` restarts them one at a
    time: each closes (LeaveGroup unless static), stays down ``downtime_s``, starts again with
    the same name and instance id, and the next one follows once it is back. ``pause`` stalls
    the whole process (no poll, no heartbeat) for ``duration_s``; ``network_partition`` cuts
    the member off the coordinator for ``duration_s`` while its application keeps processing.
    ``partitions`` sets ``topic``'s partition count to ``count``. ``coordinator_failover``
    takes the coordinator away for ``downtime_s`` and brings up a new one that loads the
    groups and offsets from the store, as Kafka's new coordinator does.
    """

    at_s: float
    action: str
    count: int = 1
    members: tuple[int, ...] | None = None
    downtime_s: float = 0.0
    duration_s: float = 0.0
    topic: str | None = None

    @property
    def at_ms(self) -> int:
        return round(self.at_s * 1000)

    def to_table(self) -> dict[str, object]:
        out: dict[str, object] = {"at_s": self.at_s, "action": self.action}
        keys = ACTIONS[self.action]
        for key in sorted(keys):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if key == "members" else value
        return out


def _timeline_event(where: str, raw: Any) -> TimelineEvent:
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a table")
    action = raw.get("action")
    if not isinstance(action, str) or action not in ACTIONS:
        raise ScenarioError(f"{where}.action must be one of {', '.join(ACTIONS)}, got {action!r}")
    if "at_s" not in raw:
        raise ScenarioError(f"{where}: at_s is required")
    allowed = ACTIONS[action]
    fields: dict[str, Any] = {"action": action}
    for key, value in raw.items():
        if key == "action":
            continue
        if key != "at_s" and key not in allowed:
            raise ScenarioError(
                f"{where}: unknown key {key!r} for action {action!r} "
                f"(it takes at_s, {', '.join(sorted(allowed))})"
            )
        if key == "members":
            fields[key] = _members_list(f"{where}.{key}", value)
        else:
            fields[key] = _TIMELINE_CHECKS[key](f"{where}.{key}", value)
    if action == "partitions" and ("topic" not in fields or "count" not in fields):
        raise ScenarioError(f"{where}: action 'partitions' needs topic and count")
    if action in ("pause", "network_partition") and "duration_s" not in fields:
        raise ScenarioError(f"{where}: action {action!r} needs duration_s")
    if action in ("restart", "coordinator_failover") and "downtime_s" not in fields:
        raise ScenarioError(f"{where}: action {action!r} needs downtime_s")
    return TimelineEvent(**fields)


@dataclass(frozen=True, slots=True)
class Section:
    """The validated keys of one table, read as attributes (``scenario.consumer.x``)."""

    values: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A validated scenario (build it with :meth:`from_toml`, :meth:`from_dict` or
    :meth:`replace`; the raw tables are kept so overrides re-validate everything)."""

    raw: Mapping[str, Any]
    duration_s: float
    seed: int
    group: Section
    consumer: Section
    coordinator: Section
    workload: Section
    network: Section
    timeline: tuple[TimelineEvent, ...]

    # ------------------------------------------------------------------ building

    @classmethod
    def from_toml(cls, path: str | Path) -> Scenario:
        """Read and validate a scenario file."""
        return cls.from_dict(load_toml(path, "scenario file", ScenarioError))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Scenario:
        """Validate a scenario given as nested dicts (what TOML parses to)."""
        if not isinstance(doc, Mapping):
            raise ScenarioError("a scenario must be a table")
        sections = {name for name in _SCHEMA if name} | {"timeline"}
        for key in doc:
            if key not in sections and key not in _SCHEMA[""]:
                raise ScenarioError(
                    f"unknown key {key!r} (known: {', '.join(sorted(sections | set(_SCHEMA[''])))})"
                )
        values: dict[str, dict[str, Any]] = {}
        for section, schema in _SCHEMA.items():
            raw = doc if section == "" else doc.get(section, {})
            if section and not isinstance(raw, Mapping):
                raise ScenarioError(f"[{section}] must be a table")
            out: dict[str, Any] = {}
            for key in raw:
                if section and key not in schema:
                    raise ScenarioError(
                        f"unknown key {section}.{key} (known: {', '.join(sorted(schema))})"
                    )
            for key, (check, default) in schema.items():
                name = f"{section}.{key}" if section else key
                if key in raw:
                    out[key] = check(name, raw[key])
                elif default is ...:
                    raise ScenarioError(f"{name} is required")
                else:
                    out[key] = check(name, copy.deepcopy(default))
            values[section] = out
        timeline_raw = doc.get("timeline", [])
        if not isinstance(timeline_raw, list):
            raise ScenarioError("timeline must be an array of tables ([[timeline]])")
        timeline = tuple(
            _timeline_event(f"timeline[{i}]", raw) for i, raw in enumerate(timeline_raw)
        )
        scenario = cls(
            raw=copy.deepcopy(dict(doc)),
            duration_s=values[""]["duration_s"],
            seed=values[""]["seed"],
            group=Section(values["group"]),
            consumer=Section(values["consumer"]),
            coordinator=Section(values["coordinator"]),
            workload=Section(values["workload"]),
            network=Section(values["network"]),
            timeline=tuple(sorted(timeline, key=lambda e: e.at_s)),
        )
        scenario._check_consistency()
        return scenario

    def replace(self, **overrides: Any) -> Scenario:
        """A copy with ``overrides`` applied: keys are dotted paths
        (``scenario.replace(**{"consumer.max_poll_records": 100})``) or top-level keys."""
        doc = copy.deepcopy(dict(self.raw))
        for dotted, value in overrides.items():
            set_dotted(doc, dotted, value)
        return Scenario.from_dict(doc)

    def to_dict(self) -> dict[str, Any]:
        """Every key with its effective value (defaults filled in), as TOML would hold it."""
        out: dict[str, Any] = {"duration_s": self.duration_s, "seed": self.seed}
        for name in ("group", "consumer", "coordinator", "workload", "network"):
            section: Section = getattr(self, name)
            out[name] = {
                k: (
                    v.to_table()
                    if isinstance(v, Distribution)
                    else list(v)
                    if isinstance(v, tuple)
                    else v
                )
                for k, v in section.values.items()
            }
        out["timeline"] = [e.to_table() for e in self.timeline]
        return out

    # ------------------------------------------------------------------ checks

    def _check_consistency(self) -> None:
        c, k = self.consumer, self.coordinator
        if c.heartbeat_interval_ms >= c.session_timeout_ms:
            raise ScenarioError(
                f"consumer.heartbeat_interval_ms ({c.heartbeat_interval_ms}) must be lower than "
                f"consumer.session_timeout_ms ({c.session_timeout_ms})"
            )
        if k.group_min_session_timeout_ms > k.group_max_session_timeout_ms:
            raise ScenarioError(
                "coordinator.group_min_session_timeout_ms must be <= "
                "coordinator.group_max_session_timeout_ms"
            )
        if (
            not k.group_min_session_timeout_ms
            <= c.session_timeout_ms
            <= (k.group_max_session_timeout_ms)
        ):
            raise ScenarioError(
                f"consumer.session_timeout_ms ({c.session_timeout_ms}) is outside the "
                f"coordinator's bounds [{k.group_min_session_timeout_ms}, "
                f"{k.group_max_session_timeout_ms}] (group.min/max.session.timeout.ms): "
                "every join would fail with INVALID_SESSION_TIMEOUT"
            )
        if c.scheduled_rebalance_max_delay_ms and "cooperative-sticky" not in self.group.assignors:
            raise ScenarioError(
                "consumer.scheduled_rebalance_max_delay_ms (KIP-415) needs the "
                "cooperative-sticky assignor in group.assignors"
            )
        duration = self.duration_s
        topics = self.group.topics
        for i, event in enumerate(self.timeline):
            if event.at_s > duration:
                raise ScenarioError(
                    f"timeline[{i}].at_s ({event.at_s:g}) is after duration_s ({duration:g})"
                )
            if event.action == "partitions":
                if event.topic not in topics:
                    raise ScenarioError(
                        f"timeline[{i}].topic {event.topic!r} is not in group.topics"
                    )
                if event.count < topics[event.topic]:
                    raise ScenarioError(
                        f"timeline[{i}]: Kafka cannot reduce a topic's partitions "
                        f"({event.topic}: {topics[event.topic]} -> {event.count})"
                    )

    @property
    def duration_ms(self) -> int:
        return round(self.duration_s * 1000)


def parse_override(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` as ``--set`` takes it: VALUE is read as a TOML value (``100``, ``true``,
    ``["range"]``, ``{ dist = "constant", value = 5 }``), or else taken as a plain string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ScenarioError(f"--set takes KEY=VALUE, got {text!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def set_dotted(doc: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``doc["a"]["b"] = value`` for ``dotted == "a.b"`` (creating tables on the way);
    a key that no scenario has is refused, so a typo in ``--set`` is an error."""
    parts = dotted.split(".")
    if len(parts) == 1:
        if parts[0] not in _SCHEMA[""] and parts[0] != "timeline":
            raise ScenarioError(f"unknown key {dotted!r}")
        doc[parts[0]] = value
        return
    section, key = parts[0], ".".join(parts[1:])
    schema = _SCHEMA.get(section)
    if schema is None or not section:
        raise ScenarioError(f"unknown key {dotted!r}: no section [{section}]")
    if key in schema:
        table = doc.setdefault(section, {})
        if not isinstance(table, dict):
            raise ScenarioError(f"[{section}] must be a table")
        table[key] = value
        return
    # into a nested table: group.topics.orders = 12, workload.record_time_ms.value = 5
    head, rest = parts[1], parts[2:]
    if head not in schema or not rest:
        raise ScenarioError(
            f"unknown key {dotted} (known in [{section}]: {', '.join(sorted(schema))})"
        )
    table = doc.setdefault(section, {})
    inner = table.get(head)
    if inner is None:
        default = schema[head][1]
        inner = copy.deepcopy(default) if isinstance(default, dict) else {}
        table[head] = inner
    if not isinstance(inner, dict):
        raise ScenarioError(f"{section}.{head} is not a table, cannot set {dotted}")
    for part in rest[:-1]:
        inner = inner.setdefault(part, {})
    inner[rest[-1]] = value
