"""Normalizing recorded answers, comparing them field by field, and the differences file.

Not a test module (``test_conformance.py`` and ``tools/conformance_goldens.py`` use it).

:func:`normalize` replaces what legitimately differs between two servers by placeholders,
the same way on both sides: member ids and topic ids by order of first appearance within
a case (so "the leader is the member that joined first" still compares), node ids, ports,
the cluster id and fetch session ids by a constant, and drops throttle times. Everything
else is compared as Kafka answered it. The rules are listed in ``differences.toml``
(``[[normalized]]``) with their reasons; :data:`NORMALIZED_FIELDS` is checked against it.

:func:`compare` gives every remaining difference as a path (``step.field[key=value]...``);
each must be accepted by an entry of ``differences.toml`` (``[[difference]]``: case and
path globs, the Kafka versions, the reason), and each entry must still accept something.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DIFFERENCES_FILE = HERE / "differences.toml"
GOLDEN_DIR = HERE / "goldens"

Records = list[dict[str, Any]]

#: fields replaced by a placeholder (or dropped), and how
NORMALIZED_FIELDS = {
    "throttle_time": "dropped",
    "member_id": "renamed by first appearance",
    "leader": "renamed by first appearance",
    "topic_id": "renamed by first appearance",
    "node_id": "<node>",
    "leader_id": "<node>",
    "controller_id": "<node>",
    "replica_nodes": "<node>",
    "isr_nodes": "<node>",
    "offline_replicas": "<node>",
    "port": "<port>",
    "cluster_id": "<cluster>",
    "session_id": "<fetch-session>",
    "finalized_features_epoch": "<epoch>",
}

_RENAMED = {"member_id", "leader", "topic_id"}
_NODE_FIELDS = {"node_id", "leader_id", "controller_id"}
_NODE_LISTS = {"replica_nodes", "isr_nodes", "offline_replicas"}
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"

#: fields that identify an item of a list of entities (first one present wins)
_KEY_FIELDS = (
    "api_key", "member_id", "group_id", "partition_index", "partition", "index", "name",
    "topic", "topic_id", "key", "node_id",
)  # fmt: skip


class _Names:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        if value not in self.seen:
            self.seen[value] = f"<{self.prefix}-{len(self.seen) + 1}>"
        return self.seen[value]


def normalize(records: Records) -> Records:
    """A copy of one case's records with the placeholders in (see the module docstring)."""
    members, topic_ids = _Names("member"), _Names("topic-id")

    def walk(value: Any) -> Any:
        if isinstance(value, list):
            # Order is not compared (Kafka's comes from hash maps). Items keyed by a stable
            # field are walked in that order, so that the ids first seen in them are
            # numbered alike in every run; items keyed by a renamed id are sorted after.
            raw_key = _list_key(value)
            if raw_key is not None and raw_key not in _RENAMED:
                value = sorted(value, key=lambda item: str(item[raw_key]))
            items = [walk(v) for v in value]
            key = _list_key(items)
            if key is not None:
                items.sort(key=lambda item: str(item[key]))
            return items
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "throttle_time":
                continue
            if k in ("member_id", "leader") and isinstance(v, str) and v:
                out[k] = members(v)
            elif k == "topic_id" and isinstance(v, str) and v != _ZERO_UUID:
                out[k] = topic_ids(v)
            elif k in _NODE_FIELDS and isinstance(v, int) and v >= 0:
                out[k] = "<node>"
            elif k in _NODE_LISTS and isinstance(v, list):
                out[k] = ["<node>" for _ in v]
            elif k == "port" and isinstance(v, int) and v > 0:
                out[k] = "<port>"
            elif k == "cluster_id" and v is not None:
                out[k] = "<cluster>"
            elif k == "session_id" and isinstance(v, int) and v != 0:
                out[k] = "<fetch-session>"
            elif k == "finalized_features_epoch" and isinstance(v, int) and v >= 0:
                out[k] = "<epoch>"
            else:
                out[k] = walk(v)
        return out

    # member ids are numbered in the order the case saw them: walk records in order
    return [walk(r) for r in records]


def _list_key(items: Sequence[Any]) -> str | None:
    if not items or not all(isinstance(i, dict) for i in items):
        return None
    for key in _KEY_FIELDS:
        if all(key in i for i in items):
            values = [str(i[key]) for i in items]
            if len(set(values)) == len(values):
                return key
    return None


# --------------------------------------------------------------------------------------
# comparing
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Difference:
    case: str
    path: str
    kafka: Any
    ours: Any

    def __str__(self) -> str:
        return f"{self.case}: {self.path}: kafka {_short(self.kafka)} / ours {_short(self.ours)}"


ABSENT = "<absent>"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 160 else text[:157] + "..."


def compare(case: str, kafka: Records, ours: Records) -> list[Difference]:
    """Every field where the normalized records differ."""
    out: list[Difference] = []
    k_steps = {r["step"]: r for r in kafka}
    o_steps = {r["step"]: r for r in ours}
    for step in [*k_steps, *(s for s in o_steps if s not in k_steps)]:
        k = {x: y for x, y in k_steps.get(step, {}).items() if x != "step"}
        o = {x: y for x, y in o_steps.get(step, {}).items() if x != "step"}
        if step not in k_steps or step not in o_steps:
            out.append(Difference(case, step, k or ABSENT, o or ABSENT))
            continue
        out.extend(Difference(case, f"{step}.{p}", a, b) for p, a, b in _diff(k, o, ""))
    return out


def _diff(a: Any, b: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(a, list) and isinstance(b, list):
        key = _list_key(a) if a and b else None
        if key is not None and _list_key(b) == key:
            a_map = {f"[{key}={i[key]}]": i for i in a}
            b_map = {f"[{key}={i[key]}]": i for i in b}
            for k in [*a_map, *(k for k in b_map if k not in a_map)]:
                yield from _diff(a_map.get(k, ABSENT), b_map.get(k, ABSENT), path + k)
            return
        if len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                yield from _diff(x, y, f"{path}[{i}]")
            return
        yield path, a, b
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in [*a, *(k for k in b if k not in a)]:
            sub = f"{path}.{k}" if path else k
            yield from _diff(a.get(k, ABSENT), b.get(k, ABSENT), sub)
        return
    if a != b:
        yield path, a, b


# --------------------------------------------------------------------------------------
# the differences file
# --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Accepted:
    """One ``[[difference]]`` entry."""

    id: str
    title: str
    reason: str
    cases: list[str]
    paths: list[str]
    kafka: list[str]
    bug: bool = False
    used: int = field(default=0)

    def accepts(self, version: str, d: Difference) -> bool:
        return (
            version in self.kafka
            and any(fnmatch.fnmatchcase(d.case, c) for c in self.cases)
            and any(fnmatch.fnmatchcase(d.path, p) for p in self.paths)
        )


@dataclass(frozen=True, slots=True)
class DifferencesFile:
    accepted: list[Accepted]
    normalized: dict[str, str]


def load_differences(path: Path = DIFFERENCES_FILE) -> DifferencesFile:
    data = tomllib.loads(path.read_text())
    accepted = []
    for entry in data.get("difference", []):
        unknown = set(entry) - {"id", "title", "reason", "cases", "paths", "kafka", "bug"}
        if unknown:
            raise ValueError(f"{path.name}: difference {entry.get('id')}: unknown {unknown}")
        accepted.append(
            Accepted(
                id=entry["id"],
                title=entry["title"],
                reason=entry["reason"],
                cases=list(entry["cases"]),
                paths=list(entry["paths"]),
                kafka=list(entry["kafka"]),
                bug=bool(entry.get("bug", False)),
            )
        )
    ids = [a.id for a in accepted]
    if len(ids) != len(set(ids)):
        raise ValueError(f"{path.name}: duplicate difference ids")
    normalized = {n["field"]: n["reason"] for n in data.get("normalized", [])}
    return DifferencesFile(accepted, normalized)


def unaccepted(
    version: str, differences: Sequence[Difference], accepted: Sequence[Accepted]
) -> list[Difference]:
    """The differences no entry accepts (counting each entry's uses)."""
    left = []
    for d in differences:
        matching = [a for a in accepted if a.accepts(version, d)]
        for a in matching:
            a.used += 1
        if not matching:
            left.append(d)
    return left


def compare_all(
    version: str, golden: Mapping[str, Records], ours: Mapping[str, Records]
) -> list[Difference]:
    out: list[Difference] = []
    for case in sorted(set(golden) | set(ours)):
        if case not in golden or case not in ours:
            out.append(Difference(case, "", case in golden, case in ours))
            continue
        out.extend(compare(case, golden[case], normalize(ours[case])))
    return out


# --------------------------------------------------------------------------------------
# the README section
# --------------------------------------------------------------------------------------

README_START = "<!-- conformance-differences: generated from tests/conformance/differences.toml -->"
README_END = "<!-- /conformance-differences -->"


def readme_section(diffs: DifferencesFile, versions: Sequence[str]) -> str:
    """The README's "Where we answer differently from Kafka" list, from the file."""
    lines = [README_START]
    for a in diffs.accepted:
        which = (
            "all compared versions"
            if sorted(a.kafka) == sorted(versions)
            else "Kafka " + ", ".join(a.kafka)
        )
        bug = " **(a bug of ours, not fixed yet)**" if a.bug else ""
        reason = a.reason[:1].upper() + a.reason[1:]
        lines.append(f"- {a.title}{bug} ({which}). {reason}.")
    lines.append(README_END)
    return "\n".join(lines)
