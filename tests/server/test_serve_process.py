"""``python -m groupcoord serve`` as a process: the ready line, SIGTERM/SIGINT, restarts."""

from __future__ import annotations

import asyncio
import selectors
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner
from wire_client import WireClient

from groupcoord.cli import app, parse_topic
from groupcoord.coordinator import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
)
from groupcoord.protocol.group_messages import from_kio_response, to_kio_request

READY_PREFIX = "groupcoord listening on "
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


class Serve:
    """One ``groupcoord serve`` subprocess; stdout is the ready line, stderr the log."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        # the server prints the line once it accepts; a server that hangs fails the test
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=START_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith(READY_PREFIX):
            self.proc.kill()
            _, err = self.proc.communicate(timeout=STOP_TIMEOUT_S)
            raise AssertionError(f"no ready line: {line!r}; stderr: {err}")
        host, _, port = line[len(READY_PREFIX) :].strip().rpartition(":")
        self.host, self.port = host, int(port)

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=STOP_TIMEOUT_S)
        return self.proc.returncode, out, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=STOP_TIMEOUT_S)


@pytest.fixture
def started() -> Iterator[list[Serve]]:
    servers: list[Serve] = []
    yield servers
    for server in servers:
        server.kill()


def serve(started: list[Serve], *args: str) -> Serve:
    server = Serve(*args)
    started.append(server)
    return server


async def _commit_and_fetch(port: int, commit: int | None) -> int:
    client = await WireClient.connect("127.0.0.1", port)
    try:
        if commit is not None:
            request = OffsetCommitRequest(
                version=8,
                group_id="durable",
                topics=(
                    OffsetCommitRequestTopic(
                        name="t",
                        partitions=(
                            OffsetCommitRequestPartition(
                                partition_index=1, committed_offset=commit
                            ),
                        ),
                    ),
                ),
            )
            response = from_kio_response(8, 8, await client.call(to_kio_request(request)))
            assert isinstance(response, OffsetCommitResponse)
            assert response.topics[0].partitions[0].error is None
        fetch = OffsetFetchRequest(
            version=7,
            group_id="durable",
            topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(1,)),),
        )
        fetched = from_kio_response(9, 7, await client.call(to_kio_request(fetch)))
        assert isinstance(fetched, OffsetFetchResponse)
        return fetched.topics[0].partitions[0].committed_offset
    finally:
        await client.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_server_cleanly(started: list[Serve], sig: int) -> None:
    server = serve(started, "--port", "0", "--memory")
    assert server.host == "127.0.0.1" and server.port > 0
    code, out, err = server.stop(sig)
    assert code == 0
    assert out == ""  # the ready line was the only stdout output
    assert "shutting down" in err and "stopped" in err
    assert "Traceback" not in err


def test_restart_with_a_data_dir_keeps_committed_offsets(
    started: list[Serve], tmp_path: Path
) -> None:
    data = str(tmp_path / "data")
    first = serve(started, "--port", "0", "--data-dir", data, "--topic", "t:2")
    assert asyncio.run(_commit_and_fetch(first.port, commit=1234)) == 1234
    code, _, err = first.stop()
    assert code == 0, err
    # closed cleanly: the WAL was checkpointed into the database file
    db = tmp_path / "data" / "groupcoord.db"
    assert db.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    second = serve(started, "--port", "0", "--data-dir", data)
    assert asyncio.run(_commit_and_fetch(second.port, commit=None)) == 1234
    assert second.stop()[0] == 0


def test_memory_and_data_dir_exclude_each_other(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--memory", "--data-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert result.returncode == 2
    assert "exclude each other" in result.stderr


@pytest.mark.parametrize("spec", ["noport", "t:0", "t:x", ":3", "x:y:3", "a b:3"])
def test_bad_topic_specs_are_usage_errors(spec: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--memory", "--topic", spec],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert result.returncode == 2
    assert "--topic" in result.stderr


def test_port_in_use_is_reported(started: list[Serve]) -> None:
    first = serve(started, "--port", "0", "--memory")
    result = subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--memory", "--port", str(first.port)],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert result.returncode == 2
    assert "cannot serve" in result.stderr


CONTRACT_FLAGS = (
    "--host",
    "--port",
    "--data-dir",
    "--memory",
    "--topic",
    "--auto-create-partitions",
    "--group-min-session-timeout-ms",
    "--group-max-session-timeout-ms",
    "--group-initial-rebalance-delay-ms",
    "--group-max-size",
    "--max-frame-bytes",
    "--log-level",
)


def test_help_lists_every_contract_flag() -> None:
    result = CliRunner().invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for flag in CONTRACT_FLAGS:
        assert flag in result.output, flag


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [("orders:12", ("orders", 12)), ("a.b-c_d:1", ("a.b-c_d", 1))],
)
def test_topic_specs(spec: str, parsed: tuple[str, int]) -> None:
    assert parse_topic(spec) == parsed


def test_group_settings_reach_the_coordinator_validation() -> None:
    # min > max is refused by the coordinator config, reported as a usage error
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--memory",
            "--group-min-session-timeout-ms",
            "9000",
            "--group-max-session-timeout-ms",
            "8000",
        ],
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
    )
    assert result.returncode == 2
    assert "group.min.session.timeout.ms" in result.stderr
