"""The README's code blocks run as written and print what they promise.

The test does what a reader does: it starts the server of set-up command 1 (``groupcoord
serve --topic orders:6``, on its default port 9092, in a scratch directory holding the
repository's ``examples/``), then runs every fenced ``python`` and ``sh`` block on its own, in
README order, each in a fresh process. ``.venv/bin/groupcoord`` and ``.venv/bin/python`` are
this interpreter's (the test environment is what set-up command 1 installs). A ``groupcoord
serve`` line in a block is started, checked for the listening line its comment promises, and
stopped. A block preceded by ``<!-- readme-test: skip (why) -->`` is not run; the skipped
blocks must be exactly :data:`SKIPPED`, so an exception cannot be added without this file
saying why.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
READY = "groupcoord listening on "
TIMEOUT_S = 120

#: blocks not run (first line of the block -> why); the README marks each one
SKIPPED: dict[str, str] = {
    ".venv/bin/pip install 'maturin>=1.7,<2'": "building and installing the wheel: .ci/run's"
    " wheel step runs these commands (maturin build --compatibility pypi, a fresh venv without"
    " cargo, .ci/wheel_smoke.py) on every CI run",
}


@dataclass(frozen=True)
class Block:
    language: str
    code: str
    marker: str | None  # the readme-test marker before it, if any
    line: int

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0]


def blocks() -> list[Block]:
    found = []
    marker: str | None = None
    lines = README.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        tag = re.match(r"<!-- readme-test: (\w+)", line)
        if tag:
            marker = tag.group(1)
        fence = re.match(r"```(\w+)$", line)
        if fence:
            end = lines.index("```", i + 1)
            found.append(Block(fence.group(1), "\n".join(lines[i + 1 : end]) + "\n", marker, i + 1))
            marker = None
            i = end
        elif line.strip() and not tag:
            marker = None  # a marker applies only to the block right after it
        i += 1
    return found


def runnable(language: str) -> list[Block]:
    return [b for b in blocks() if b.language == language and b.marker not in ("skip", "setup")]


def _argv(words: list[str]) -> list[str]:
    """A README command as this test environment runs it."""
    head = {".venv/bin/groupcoord": [sys.executable, "-m", "groupcoord"]}
    if words[0] in head:
        return head[words[0]] + words[1:]
    if words[0] == ".venv/bin/python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"README command does not use .venv/bin/...: {shlex.join(words)}")


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Served:
    """A ``groupcoord serve`` started as a README line says; ``stop()`` checks a clean exit."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.ready = self.proc.stdout.readline()

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return err


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch clone root: the examples the blocks name, nothing else."""
    path = tmp_path_factory.mktemp("readme")
    (path / "examples").symlink_to(ROOT / "examples")
    (path / "tests").symlink_to(ROOT / "tests")  # the analytics block reads a fixture there
    return path


@pytest.fixture(scope="module")
def setup_server(workdir: Path) -> Iterator[Served]:
    """Set-up command 1's server, started as the README says."""
    (setup,) = [b for b in blocks() if b.marker == "setup"]
    command = next(line for line in setup.code.splitlines() if line.startswith("python3 -m venv"))
    serve = command.split(" && ")[-1]
    assert serve.startswith(".venv/bin/groupcoord serve"), serve
    if not _port_free(9092):
        pytest.fail("port 9092, the README's, is taken: stop what listens there to run this test")
    server = Served(_argv(shlex.split(serve)), workdir)
    assert server.ready == "groupcoord listening on 127.0.0.1:9092\n", server.proc.stderr
    yield server
    server.stop()


def test_blocks_are_found_and_only_the_listed_ones_are_skipped() -> None:
    languages = {b.language for b in blocks()}
    assert {"python", "sh"} <= languages
    skipped = {b.first_line for b in blocks() if b.marker == "skip"}
    assert skipped == set(SKIPPED)
    assert [b.marker for b in blocks() if b.marker not in (None, "skip")] == ["setup"]


def test_links_stay_inside_the_repository() -> None:
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if target.startswith("https://"):
            continue
        assert not target.startswith(("/", "..")), target
        assert (ROOT / target).exists(), target
    assert (ROOT / "docs" / "architecture.md").is_file()


# --------------------------------------------------------------------------- python blocks


def _quick_example(out: str) -> None:
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["consumer-a", "consumer-b"]
    # consumer-a keeps orders-0, which it owned in generation 4 (sticky)
    assert "TopicPartition(topic='orders', partition=0)" in lines[0]
    assert out.count("TopicPartition(") == 9


def _encoded(out: str) -> None:
    assert out.startswith("Assignment(partitions=(TopicPartition(topic='orders', partition=0),")
    assert out.count("TopicPartition(topic='orders'") == 6


def _coordinator(out: str) -> None:
    first, deadline = out.splitlines()
    assert "MEMBER_ID_REQUIRED" in first or "MemberIdRequired" in first, first
    assert int(deadline) > 0


def _group_member(out: str) -> None:
    parts = ", ".join(f"TopicPartition(topic='orders', partition={p})" for p in range(6))
    everything = "[" + parts
    assigned, committed, revoked = out.splitlines()
    assert assigned == f"assigned {everything}]"
    generation, _, offsets = committed.partition(" ")
    assert int(generation) >= 1
    assert offsets.count(": 42") == 6, offsets
    assert revoked == f"revoked {everything}]"  # leaving the block: close() gives them up


def _member_machine(out: str) -> None:
    assert "JoinGroupRequest(" in out or "FindCoordinator" in out, out


def _simulator(out: str) -> None:
    big, small = (line.split() for line in out.splitlines()[:2])
    assert big[0] == "500" and int(big[1]) > 1 and int(big[2]) > 0
    assert small == ["50", "1", "0"]


def _rack_awareness(out: str) -> None:
    # each member gets the partitions with a replica in its own rack
    assert out.splitlines() == [
        "range {'consumer-a': [1, 3], 'consumer-b': [0, 2]}",
        "sticky {'consumer-a': [1, 3], 'consumer-b': [0, 2]}",
    ]


def _server_assignors(out: str) -> None:
    fresh, after_leave, ranges = out.splitlines()
    assert fresh == (
        "{'m0': {'orders': (0, 1, 2)}, 'm1': {'orders': (3,), 'payments': (0,)},"
        " 'm2': {'payments': (1, 2)}}"
    )
    # sticky: m0 and m2 keep everything they held and share m1's two partitions
    assert after_leave == "{'m0': {'orders': (0, 1, 2, 3)}, 'm2': {'payments': (0, 1, 2)}}"
    assert ranges == (
        "{'m0': {'orders': (0, 1), 'payments': (0, 1)}, 'm2': {'orders': (2, 3), 'payments': (2,)}}"
    )


def _kip848_consumer(out: str) -> None:
    assigned, committed = out.splitlines()
    assert assigned == "[0, 1, 2, 3, 4, 5]"
    assert committed == "{" + ", ".join(f"{p}: 42" for p in range(6)) + "}"


def _kip848_member(out: str) -> None:
    # one member alone: every partition, member epoch 1 (the group's first epoch)
    assert out.splitlines() == ["[0, 1, 2, 3, 4, 5] 1", "7"]


def _silent(out: str) -> None:
    assert out == ""


#: what each Python block promises, by a line that is in that block only
PROMISES: dict[str, Callable[[str], None]] = {
    "for member, assignment in sorted(result.items()):": _quick_example,
    'print(decode_assignment(encoded["consumer-a"]))': _encoded,
    "table.heartbeat_handles(handles, 3_000, 45_000)": _silent,
    "print(shell.next_deadline())": _coordinator,
    "assignors=[CooperativeStickyAssignor()], listener=Progress(),": _group_member,
    "machine = MemberMachine(": _member_machine,
    'scenario = Scenario.from_toml("examples/scenarios/max-poll-records.toml")': _simulator,
    "consumer = KafkaConsumer(": _silent,
    "for assignor in (RangeAssignor(), StickyAssignor()):": _rack_awareness,
    "target = UniformAssignor().assign(members, topics)": _server_assignors,
    # the KIP-848 walk-through checks itself with asserts; it must print nothing
    "def heartbeat(member, epoch, now, **fields):": _silent,
    '"group.protocol": "consumer"})': _kip848_consumer,
    'topics=["orders"], group_protocol="consumer") as member:': _kip848_member,
    # the ACL rules check themselves with asserts
    "authorizer = AclAuthorizer([": _silent,
    # offsets retention on a virtual clock checks itself with asserts
    "shell.tick(10 * MINUTE)": _silent,
}


def test_every_python_block_has_a_promise_checked() -> None:
    for block in runnable("python"):
        keys = [k for k in PROMISES if k in block.code]
        assert len(keys) == 1, (block.line, keys)


@pytest.mark.parametrize("block", runnable("python"), ids=lambda b: f"line{b.line}")
def test_python_block_runs_on_its_own(block: Block, workdir: Path, setup_server: Served) -> None:
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning"},
    )
    assert done.returncode == 0, done.stderr
    (check,) = [check for key, check in PROMISES.items() if key in block.code]
    check(done.stdout)


# --------------------------------------------------------------------------- shell blocks


def commands(block: Block) -> list[tuple[list[str], str | None]]:
    """Each command of a shell block, and the ``# ...`` line after it (its promise), if any."""
    text = block.code.replace("\\\n", " ")
    out: list[tuple[list[str], str | None]] = []
    for line in text.splitlines():
        if line.startswith("#"):
            if out and out[-1][1] is None:
                out[-1] = (out[-1][0], line)
            continue
        if line.strip():
            out.append((shlex.split(line, comments=True), None))
    return out


@pytest.mark.parametrize("block", runnable("sh"), ids=lambda b: f"line{b.line}")
def test_shell_block_runs_as_written(block: Block, workdir: Path, setup_server: Served) -> None:
    for words, promise in commands(block):
        argv = _argv(words)
        if words[1:2] == ["serve"] or words[1:4] == ["-m", "groupcoord", "serve"]:
            server = Served(argv, workdir)
            try:
                assert server.ready.startswith(READY), server.ready
                if promise is not None and READY in promise:
                    promised = promise.split(READY)[1].split()[0]
                    assert server.ready == f"{READY}{promised}\n"
            finally:
                server.stop()
            continue
        # a Spark job takes longer than a Python block (the JVM's start-up, on a loaded CI)
        done = subprocess.run(
            argv, cwd=workdir, capture_output=True, text=True, timeout=3 * TIMEOUT_S
        )
        assert done.returncode == 0, (shlex.join(words), done.stderr)
        if words[1:2] in (["sweep"], ["analyze"]):  # they promise a report in --out
            out = workdir / words[words.index("--out") + 1]
            assert (out / "report" / "index.html").is_file(), done.stdout
