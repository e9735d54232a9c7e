"""Refuse decoded messages with null arrays where the schema does not allow null.

On the wire an array count of -1 means null. kio's reader accepts it for every array and
hands back ``None``, even where the schema says the array is not nullable; Kafka's own
readers refuse such a message ("non-nullable field was serialized as null") and the
request is invalid. :func:`null_arrays` finds those fields, so the codec can refuse the
frame before any handler iterates over ``None``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.serial._introspect import EntityField, EntityTupleField, classify_field, is_optional

__all__ = ["null_arrays"]

# per kio class: (field name, nullable, entity class of its elements or value or None)
_Plan = tuple[tuple[str, bool, bool, type[Any] | None], ...]
_PLANS: dict[type[Any], _Plan] = {}


def _plan(cls: type[Any]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    steps = []
    for f in dataclasses.fields(cls):
        kind = classify_field(f)
        nested = kind.type_ if isinstance(kind, (EntityField, EntityTupleField)) else None
        if kind.is_array or nested is not None:
            steps.append((f.name, kind.is_array, is_optional(f), nested))
    plan = _PLANS[cls] = tuple(steps)
    return plan


def null_arrays(entity: Any, path: str = "") -> list[str]:
    """The dotted paths of non-nullable arrays that are ``None`` in ``entity``."""
    found: list[str] = []
    for name, is_array, nullable, nested in _plan(type(entity)):
        value = getattr(entity, name)
        where = f"{path}{name}"
        if value is None:
            if is_array and not nullable:
                found.append(where)
            continue
        if nested is None:
            continue
        for item in value if is_array else (value,):
            found.extend(null_arrays(item, f"{where}[]."))
    return found
