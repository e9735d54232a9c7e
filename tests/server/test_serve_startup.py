"""``groupcoord serve`` refusing to start: every message names the flag, file or directory at
fault (and the Kafka error code where a broker has one), and flags are checked before anything
is written to disk. ``--topic`` for an existing topic grows it or refuses, never ignores."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

START_TIMEOUT_S = 30.0
READY_PREFIX = "groupcoord listening on "


def serve_fails(*args: str, cwd: Path | None = None) -> str:
    """Run ``groupcoord serve ARGS``, expect exit status 2 before it listens; its stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        cwd=cwd,
    )
    assert result.returncode == 2, result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    return result.stderr


def serve_and_stop(*args: str) -> str:
    """Start ``groupcoord serve ARGS``, wait for its ready line, SIGTERM it; its stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    line = proc.stdout.readline()
    assert line.startswith(READY_PREFIX) and time.monotonic() < deadline, line
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=START_TIMEOUT_S)
    assert proc.returncode == 0, err
    return err


def test_the_log_says_which_shell_serves_each_listener() -> None:
    # native I/O is the default for PLAINTEXT; --no-native-io keeps it on asyncio
    assert re.search(r"serving PLAINTEXT on 127\.0\.0\.1:\d+ \(native I/O; in memory\)",
                     serve_and_stop("--memory"))  # fmt: skip
    assert re.search(r"serving PLAINTEXT on 127\.0\.0\.1:\d+ \(asyncio I/O; in memory\)",
                     serve_and_stop("--memory", "--no-native-io"))  # fmt: skip


def test_a_data_dir_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a directory")
    err = serve_fails("--data-dir", str(tmp_path / "data"))
    assert f"data directory {tmp_path / 'data'}: exists and is not a directory" in err
    assert "cannot serve" not in err


def test_a_data_dir_that_cannot_be_created_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "data"  # below a file: no one can create it
    err = serve_fails("--data-dir", str(target))
    assert f"data directory {target}: cannot create it: Not a directory" in err
    assert "cannot serve" not in err


def test_a_data_dir_holding_a_foreign_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "groupcoord.db").write_bytes(os.urandom(4096))
    err = serve_fails("--data-dir", str(tmp_path / "data"))
    assert f"data directory {tmp_path / 'data'}:" in err and "not a database" in err


def test_an_event_log_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "events.jsonl"
    err = serve_fails("--memory", "--event-log", str(path))
    assert f"cannot open the event log {path}: No such file or directory" in err


@pytest.mark.parametrize("memory", [True, False])
def test_a_bad_topic_name_is_refused_before_touching_disk(tmp_path: Path, memory: bool) -> None:
    err = serve_fails(*(["--memory"] if memory else []), "--topic", "a b:3", cwd=tmp_path)
    assert "--topic" in err and "[INVALID_TOPIC]" in err and "'a b'" in err
    assert "data directory" not in err
    assert not (tmp_path / "groupcoord-data").exists()


def test_a_repeated_topic_is_refused() -> None:
    err = serve_fails("--memory", "--topic", "orders:3", "--topic", "orders:5")
    assert "topic 'orders' is given twice (orders:3 and orders:5)" in err


def test_topic_flag_grows_an_existing_topic_and_refuses_to_shrink_it(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    err = serve_and_stop("--data-dir", data, "--topic", "orders:12")
    assert "created topic orders with 12 partitions" in err
    err = serve_and_stop("--data-dir", data, "--topic", "orders:24")
    assert "grew topic orders from 12 to 24 partitions" in err
    with sqlite3.connect(Path(data) / "groupcoord.db") as conn:
        rows = conn.execute("SELECT partitions FROM log_topics WHERE name = 'orders'").fetchall()
    assert rows == [(24,)]
    err = serve_and_stop("--data-dir", data, "--topic", "orders:24")  # as it is: nothing to do
    assert "orders" not in err.replace("serving on", "")
    err = serve_fails("--data-dir", data, "--topic", "orders:6")
    assert "topic orders:6: [INVALID_PARTITIONS]" in err
    assert "currently has 24 partitions" in err and "never removed" in err
