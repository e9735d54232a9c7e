"""``subscribed_topic_regex``: RE2 syntax (Kafka compiles it with re2j), matched in full.

Python's :mod:`re` is a backtracking engine with a larger syntax than RE2. A pattern is
accepted only if RE2 accepts it too: what RE2 lacks (backreferences, lookaround,
conditionals, atomic groups, possessive quantifiers) is refused with
:class:`~groupcoord.errors.InvalidRegularExpressionError`, as Kafka refuses a pattern re2j
cannot compile. The RE2 spellings Python lacks are translated: ``\\z`` (end of text) and
the ASCII POSIX classes inside brackets (``[[:alpha:]]``). Unicode classes (``\\pL``) and
negated POSIX classes are refused: Python's ``re`` cannot express them, so accepting them
would match other topics than Kafka does (a documented gap). A topic matches when the whole
name matches (re2j's ``matches()``).
"""

from __future__ import annotations

import functools
import re
from typing import Final

from groupcoord.errors import InvalidRegularExpressionError

__all__ = ["compile_topic_regex"]

_POSIX: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}

_GROUP_REFUSED: Final = {
    "(?=": "lookahead",
    "(?!": "negative lookahead",
    "(?<=": "lookbehind",
    "(?<!": "negative lookbehind",
    "(?(": "conditional",
    "(?>": "atomic group",
    "(?P=": "named backreference",
    "(?#": "comment group",
}


def _refuse(pattern: str, what: str) -> InvalidRegularExpressionError:
    return InvalidRegularExpressionError(f"{pattern!r}: RE2 does not support {what}")


def _translate(pattern: str) -> str:
    """The Python spelling of RE2 ``pattern``; raises for what RE2 would not compile."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    prev_quantifier = False
    while i < n:
        c = pattern[i]
        quantifier = False
        if c == "\\":
            if i + 1 >= n:
                raise _refuse(pattern, "a trailing backslash")
            e = pattern[i + 1]
            if e.isdigit() and e != "0":
                raise _refuse(pattern, "backreferences")
            if e in "pP":
                raise _refuse(pattern, "Unicode classes here (groupcoord matches with Python re)")
            if e == "g":
                raise _refuse(pattern, "backreferences")
            if e == "Z":
                raise _refuse(pattern, "\\Z (RE2 spells end of text \\z)")
            out.append("\\Z" if e == "z" and not in_class else pattern[i : i + 2])
            i += 2
        elif in_class:
            if pattern.startswith("[:", i):
                end = pattern.find(":]", i + 2)
                name = pattern[i + 2 : end] if end != -1 else ""
                if name.startswith("^"):
                    raise _refuse(pattern, "negated POSIX classes here")
                if name not in _POSIX:
                    raise _refuse(pattern, f"the POSIX class [:{name}:]")
                out.append(_POSIX[name])
                i = end + 2
                continue
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            # a leading ']' (or '^]') is a literal in both syntaxes
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):
                out.append("\\]")
                i += 1
        elif c == "(":
            for prefix, what in _GROUP_REFUSED.items():
                if pattern.startswith(prefix, i):
                    raise _refuse(pattern, what)
            out.append(c)
            i += 1
        elif c in "*+?":
            if c == "+" and prev_quantifier:
                raise _refuse(pattern, "possessive quantifiers")
            quantifier = c != "?" or not prev_quantifier  # a lazy '?' ends the quantifier
            out.append(c)
            i += 1
        elif c == "}":
            quantifier = True
            out.append(c)
            i += 1
        else:
            out.append(c)
            i += 1
        prev_quantifier = quantifier
    if in_class:
        raise _refuse(pattern, "an unterminated character class")
    return "".join(out)


@functools.lru_cache(maxsize=1024)
def compile_topic_regex(pattern: str) -> re.Pattern[str]:
    """The compiled pattern (use ``fullmatch``); raises
    :class:`~groupcoord.errors.InvalidRegularExpressionError` for what RE2 would not compile."""
    translated = _translate(pattern)
    try:
        return re.compile(translated)
    except re.error as e:
        raise InvalidRegularExpressionError(f"{pattern!r}: {e}") from None
