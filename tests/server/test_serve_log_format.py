"""``groupcoord serve --log-format json``: every line of the log is one JSON object with
timestamp, level, logger and message, and the structured fields (group, member, client);
a real client's join shows as such a line. Text stays the default, and the
``--event-log`` file keeps its own schema."""

from __future__ import annotations

import datetime
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from groupcoord.server.log_format import JsonFormatter
from serve_process import ServerProcess


def join_and_leave(server: ServerProcess, group: str) -> None:
    """A confluent-kafka consumer joins ``group``, gets its partitions, and leaves."""
    consumer = Consumer(
        {"bootstrap.servers": server.bootstrap, "group.id": group, "client.id": "json-test"}
    )
    try:
        consumer.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(0.2)
    finally:
        consumer.close()


def test_json_lines_from_a_real_join(
    serve_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    log_file, events = tmp_path / "serve.log", tmp_path / "events.jsonl"
    server = serve_factory(
        "--topic", "orders:2", "--group-initial-rebalance-delay-ms", "0",
        "--log-format", "json", "--log-level", "debug", "--event-log", str(events),
        log_file=log_file,
    )  # fmt: skip
    join_and_leave(server, "g1")
    assert server.stop() == 0
    lines = log_file.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 5
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    for r in records:
        assert {"timestamp", "level", "logger", "message"} <= r.keys(), r
        assert r["level"] in {"DEBUG", "INFO", "WARNING", "ERROR"}
        stamp = datetime.datetime.fromisoformat(r["timestamp"])
        assert stamp.utcoffset() == datetime.timedelta(0)
    joins = [r for r in records if " joins in state " in r["message"]]
    assert len(joins) == 1, joins
    join = joins[0]
    assert join["logger"] == "groupcoord.coordinator" and join["level"] == "INFO"
    assert join["group"] == "g1"
    assert join["member"].startswith("json-test-")
    assert join["client_id"] == "json-test"
    assert join["client"] == "/127.0.0.1"
    assert join["member"] in join["message"]
    stable = [r for r in records if "stabilized generation" in r["message"]]
    assert stable and stable[0]["group"] == "g1" and stable[0]["members"] == 1
    left = [r for r in records if r.get("cause") == "left"]
    assert left and left[0]["member"] == join["member"]
    # the connection lines name the client's address and port
    connected = [r for r in records if r["message"].startswith("connection from")]
    assert connected and all(re.fullmatch(r"127\.0\.0\.1:\d+", r["client"]) for r in connected)
    # the event log is another stream: its lines keep their schema ('groupcoord analyze')
    kinds = [json.loads(line)["event"] for line in events.read_text().splitlines()]
    assert "rebalance_completed" in kinds


def test_text_stays_the_default(
    serve_factory: Callable[..., ServerProcess], tmp_path: Path
) -> None:
    log_file = tmp_path / "serve.log"
    server = serve_factory(
        "--topic", "orders:1", "--group-initial-rebalance-delay-ms", "0", log_file=log_file
    )  # fmt: skip
    join_and_leave(server, "g2")
    assert server.stop() == 0
    lines = log_file.read_text(encoding="utf-8").splitlines()
    text = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING) groupcoord\.\w+: .+")
    assert lines and all(text.fullmatch(line) for line in lines), lines
    assert any("group g2: member json-test-" in line for line in lines)


def _format(**record: Any) -> dict[str, Any]:
    formatted = JsonFormatter().format(logging.makeLogRecord(record))
    assert "\n" not in formatted
    parsed: dict[str, Any] = json.loads(formatted)
    return parsed


def test_the_formatter_keeps_one_line_per_record() -> None:
    line = _format(
        name="groupcoord.x", levelno=logging.WARNING, levelname="WARNING",
        msg="two\nlines: %s", args=("é",), created=0.25, group="g", peer=("h", 1),
    )  # fmt: skip
    assert line == {
        "timestamp": "1970-01-01T00:00:00.250Z",
        "level": "WARNING",
        "logger": "groupcoord.x",
        "message": "two\nlines: é",
        "group": "g",
        "peer": ["h", 1],
    }
    try:
        raise ValueError("boom")
    except ValueError:
        failed = _format(msg="failed", exc_info=sys.exc_info())
    assert failed["message"] == "failed"
    assert failed["exception"].startswith("Traceback") and "ValueError: boom" in failed["exception"]
    # a field that is not JSON is logged as its str()
    assert _format(msg="m", principal=object())["principal"].startswith("<object object")
