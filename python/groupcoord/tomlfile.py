"""Reading a TOML file the user named, with errors that name the file and the problem."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

__all__ = ["load_toml"]


def load_toml(path: str | Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """Parse ``path``; an unreadable file or bad TOML raises ``error`` with a one-line
    message naming ``what`` the file is ("scenario file", "grid file") and the path."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path} is not valid TOML: {exc}") from None
