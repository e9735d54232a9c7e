"""How ``groupcoord serve`` writes its log to stderr: ``--log-format text`` (the default,
one human line per record) or ``--log-format json`` (one JSON object per line, for a log
shipper: Loki, Elasticsearch, CloudWatch parse it without a pattern).

A JSON line has ``timestamp`` (ISO 8601, UTC, milliseconds), ``level``, ``logger`` and
``message`` (the text line's message, arguments filled in), then the structured fields the
call passed with ``extra=`` (``group``, ``member``, ``client``, ``principal``, ...), and
``exception`` with the traceback when there is one. The ``--event-log`` file is a
different stream with its own fixed schema (:mod:`.event_log`); this changes nothing there.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

from groupcoord.server.event_log import iso_ms

__all__ = ["LOG_FORMATS", "JsonFormatter", "configure_logging"]

#: the values of ``--log-format``
LOG_FORMATS = ("text", "json")

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: what every LogRecord carries; anything else on a record came from ``extra=``
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line (a message's newlines are escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "timestamp": iso_ms(int(record.created * 1000)),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # default=str: a field that is not JSON (an enum, an address tuple) is still logged
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: str, log_format: str) -> None:
    """The root logger writes to stderr at ``level`` in ``log_format`` (text or json)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"unknown log format {log_format!r} (text or json)")
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    logging.basicConfig(level=level.upper(), handlers=[handler])
