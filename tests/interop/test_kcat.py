"""kcat (librdkafka's command-line client) against ``groupcoord serve``: metadata,
produce, balanced consumers (``-G``) sharing a topic, and committed offsets."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import scenarios
from helpers import FAST_GROUP_FLAGS, Server, committed_offsets

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")

#: every record as "key partition offset"
FORMAT = "%k %p %o\\n"
KCAT_TIMEOUT_S = 60


def kcat(*args: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, text=True, timeout=KCAT_TIMEOUT_S
    )
    assert done.returncode == 0, f"kcat {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def kcat_produce(bootstrap: str, topic: str, records: list[tuple[str, str]]) -> None:
    lines = "".join(f"{k}:{v}\n" for k, v in records)
    kcat("-b", bootstrap, "-P", "-t", topic, "-K", ":", stdin=lines)


def balanced_consumer(bootstrap: str, group: str) -> subprocess.Popen[str]:
    """``kcat -G``: a librdkafka group member reading until every partition it owns is at
    its end (-e), committing as it goes and when it leaves."""
    return subprocess.Popen(
        # no -o: in -G mode kcat would start every assigned partition there, ignoring
        # the group's commits; a new group starts at the beginning through the reset policy
        ["kcat", "-b", bootstrap, "-G", group, "-X", "auto.offset.reset=earliest", "-e",
         "-f", FORMAT,
         "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
         scenarios.TOPIC],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> list[tuple[str, int, int]]:
    try:
        out, err = proc.communicate(timeout=KCAT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"kcat -G did not finish:\n{err[-3000:]}") from None
    assert proc.returncode == 0, err
    return [(k, int(p), int(o)) for k, p, o in (line.split() for line in out.splitlines())]


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS))


def test_metadata_lists_the_topic_and_this_broker(server: Server) -> None:
    listing = kcat("-b", server.bootstrap, "-L", "-t", scenarios.TOPIC)
    assert "1 brokers:" in listing
    assert f'topic "{scenarios.TOPIC}" with {scenarios.PARTITIONS} partitions' in listing


def test_balanced_consumers_read_everything_once_and_commit(server: Server) -> None:
    records = scenarios.keyed_records(0, 2000)
    kcat_produce(server.bootstrap, scenarios.TOPIC, records)

    # two members of one group share the partitions; between them they read every record
    first = balanced_consumer(server.bootstrap, "kcat-group")
    second = balanced_consumer(server.bootstrap, "kcat-group")
    seen = finish(first) + finish(second)
    assert {k for k, _p, _o in seen} == {k for k, _v in records}
    ends: dict[int, int] = {}
    for _k, p, o in seen:
        ends[p] = max(ends.get(p, 0), o + 1)
    assert sum(ends.values()) == len(records)

    # what they committed is the end of every partition ...
    committed = committed_offsets(server.bootstrap, "kcat-group")
    assert {p: o for (_t, p), o in committed.items()} == ends
    # ... so the group's next member starts there: it reads only what came since
    kcat_produce(server.bootstrap, scenarios.TOPIC, scenarios.keyed_records(2000, 2100))
    later = finish(balanced_consumer(server.bootstrap, "kcat-group"))
    assert sorted(k for k, _p, _o in later) == sorted(f"k{i}" for i in range(2000, 2100))
    for _k, p, o in later:
        assert o >= ends.get(p, 0)


def test_committed_offsets_survive_a_server_restart(
    serve_factory: Callable[..., Server], tmp_path: Path
) -> None:
    server = serve_factory(
        *scenarios.topic_flags(*FAST_GROUP_FLAGS, "--data-dir", str(tmp_path / "data"))
    )
    kcat_produce(server.bootstrap, scenarios.TOPIC, scenarios.keyed_records(0, 300))
    assert len(finish(balanced_consumer(server.bootstrap, "kcat-durable"))) == 300
    before = committed_offsets(server.bootstrap, "kcat-durable")
    assert sum(before.values()) == 300

    server.restart()
    assert committed_offsets(server.bootstrap, "kcat-durable") == before
    assert finish(balanced_consumer(server.bootstrap, "kcat-durable")) == []
