"""How our messages become kio's and back: the schema introspection every API module uses.

kio has one class per (API, version) and a field exists only in the versions that have
it; our messages have every field with Kafka's default. So building a kio object passes
every field we have and keeps those the version's class declares (:func:`build`), and
reading one takes a field's value or our default when the version lacks it. kio spells
durations as ``timedelta`` (``session_timeout``), our messages as milliseconds
(``session_timeout_ms``), and error codes as its ``ErrorCode`` enum, ours as error classes.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from collections.abc import Callable
from functools import cache
from types import UnionType
from typing import Any, Final

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.schema.index import PayloadEntityType
from kio.static.constants import EntityType

from groupcoord.coordinator.messages import ErrorClass
from groupcoord.errors import KafkaError

__all__ = [
    "ZERO",
    "Converter",
    "build",
    "error_class",
    "hints",
    "item",
    "ms",
    "optional_inner",
    "payload_class",
    "resolve_entity_hints",
    "struct",
]


@cache
def payload_class(api_key: int, version: int, kind: PayloadEntityType) -> type[Any]:
    module = load_payload_module(api_key, version, kind)
    suffix = "Request" if kind is EntityType.request else "Response"
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and getattr(value, "__type__", None) is kind
            and value.__name__.endswith(suffix)
        ):
            return value
    raise LookupError(f"kio module {module.__name__} has no {suffix} class")


_HINTS: dict[type[Any], dict[str, Any]] = {}


def hints(cls: type[Any]) -> dict[str, Any]:
    # resolving a kio class's annotations imports and evaluates them: once per class
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


def optional_inner(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], len(args) < len(typing.get_args(hint))
    return hint, False


def item(cls: type[Any], name: str) -> type[Any]:
    """The entity class of the tuple field ``name`` of ``cls``."""
    hint, _ = optional_inner(hints(cls)[name])
    item = typing.get_args(hint)[0]
    assert isinstance(item, type)
    return item


def struct(cls: type[Any], name: str) -> type[Any]:
    """The entity class of the (possibly nullable) struct field ``name`` of ``cls``."""
    inner, _ = optional_inner(hints(cls)[name])
    assert isinstance(inner, type)
    return inner


def resolve_entity_hints(cls: type[Any]) -> None:
    # every nested entity class the converters ask _item / _hints about
    for hint in hints(cls).values():
        inner, _ = optional_inner(hint)
        for candidate in (inner, *typing.get_args(inner)):
            if isinstance(candidate, type) and hasattr(candidate, "__type__"):
                resolve_entity_hints(candidate)


Converter = Callable[[Any], Any]


def _converter(hint: Any) -> Converter:
    """How a value of ours becomes the kio field typed ``hint``."""
    inner, optional = optional_inner(hint)
    # a field that is nullable only in later versions: Kafka sends "" when absent
    none_as = None if optional or inner is not str else ""
    if inner is ErrorCode:
        return lambda value: none_as if value is None else ErrorCode(value)
    if isinstance(inner, type) and issubclass(inner, datetime.timedelta):
        return _timedelta_converter(inner, none_as)
    return lambda value: none_as if value is None else value


def _timedelta_converter(kind: Any, none_as: Any) -> Converter:
    parse = kind.parse  # kio's range check
    zero = parse(datetime.timedelta(0))  # almost every value is a throttle time of 0

    def convert(value: Any) -> Any:
        if value is None:
            return none_as
        if value == 0:
            return zero
        # microseconds=int is exact; milliseconds= goes through a float
        return parse(datetime.timedelta(microseconds=value * 1000))

    return convert


_PLANS: dict[type[Any], tuple[tuple[str, Converter], ...]] = {}


def _plan(cls: type[Any]) -> tuple[tuple[str, Converter], ...]:
    # per kio class, once: its fields and how to convert into each
    plan = _PLANS.get(cls)
    if plan is None:
        field_hints = hints(cls)
        plan = _PLANS[cls] = tuple(
            (f.name, _converter(field_hints[f.name])) for f in dataclasses.fields(cls)
        )
    return plan


def build(cls: type[Any], **values: Any) -> Any:
    """An instance of the kio class ``cls`` from the ``values`` its version has."""
    return cls(**{name: convert(values[name]) for name, convert in _plan(cls) if name in values})


def ms(value: datetime.timedelta) -> int:
    return value // datetime.timedelta(milliseconds=1)


def error_class(code: Any) -> ErrorClass:
    code = int(code.value if isinstance(code, ErrorCode) else code)
    return None if code == 0 else KafkaError.for_code(code)


ZERO: Final = 0  # throttle_time: this server never throttles
