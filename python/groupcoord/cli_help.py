"""How ``groupcoord`` renders its help and usage errors: plain text readable at 80 columns.

Typer's rich panels truncate long option names at 80 columns (``--auto-create-partiti…``),
show a type column (``<bool>``, ``<str>``), take ``[default: ...]`` in help text for markup
and swallow it, and print the usage line's arguments as ``{file}``. The CLI uses Typer's
plain (click-style) rendering instead, every option carries a metavar naming its value
(``--port PORT``), and :class:`PlainHelpCommand` prints arguments by their metavar alone.
Choices are parsed by :func:`choice`, so a bad one reads ``'bogus' is not one of ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

import typer
from typer.core import TyperCommand

E = TypeVar("E", bound=StrEnum)


class PlainHelpCommand(TyperCommand):
    """A command whose usage line and Arguments section name each argument by its metavar
    (``FILE``, ``PATH...``), without a type column or braces."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                arguments.append((_argument_name(param), getattr(param, "help", None) or ""))
                continue
            record = param.get_help_record(ctx)
            if record is not None:
                options.append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)


def _argument_name(param: Any) -> str:
    name = str(param.metavar or param.name.upper())
    return f"{name}..." if param.nargs != 1 and not name.endswith("...") else name


def choice(enum: type[E]) -> Callable[[str], E]:
    """A ``parser=`` for an option taking one of ``enum``'s values."""
    values = ", ".join(member.value for member in enum)

    def parse(text: str | E) -> E:
        if isinstance(text, enum):
            return text
        try:
            return enum(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not one of {values}") from None

    return parse


def choice_metavar(enum: type[StrEnum]) -> str:
    """``[a|b|c]``: the metavar that lists a choice option's values."""
    return "[" + "|".join(member.value for member in enum) + "]"
