"""``groupcoord serve`` (native I/O, the default) leaves its I/O threads the CPU when its
other threads wake (``server/thread_policy.py``): every thread but the native shells' I/O
threads runs ``SCHED_BATCH``, threads started later too; with ``--no-native-io`` nothing
changes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from group_calls import synced_member
from wire_client import WireClient

from groupcoord.server.thread_policy import IO_THREAD_NAME

pytestmark = pytest.mark.skipif(
    not hasattr(os, "SCHED_BATCH") or not Path("/proc/self/task").is_dir(),
    reason="Linux scheduling policies",
)

READY_PREFIX = "groupcoord listening on "


def policies(pid: int) -> list[tuple[str, int]]:
    """Each thread's name and policy."""
    return [
        ((task / "comm").read_text().strip(), os.sched_getscheduler(int(task.name)))
        for task in Path(f"/proc/{pid}/task").iterdir()
    ]


def serve_and_sync(tmp_path: Path, *flags: str) -> list[tuple[str, int]]:
    """A ``groupcoord serve`` with a data directory, one member synced (its group written
    by the store's writer thread), then the policies of its threads."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--port", "0",
         "--data-dir", str(tmp_path), "--group-initial-rebalance-delay-ms", "0", *flags],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith(READY_PREFIX), line
        port = int(line.rsplit(":", 1)[1])

        async def sync() -> None:
            client = await WireClient.connect("127.0.0.1", port)
            await synced_member(client)
            await client.close()

        asyncio.run(sync())
        return policies(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_native_io_runs_every_thread_but_the_io_thread_as_batch(tmp_path: Path) -> None:
    threads = serve_and_sync(tmp_path)  # native I/O is the default
    assert [p for name, p in threads if name == IO_THREAD_NAME] == [os.SCHED_OTHER]
    others = [p for name, p in threads if name != IO_THREAD_NAME]
    # the event loop's and the writer's (started after the policy was set; CPython before
    # 3.14 does not name its threads for the kernel, so they are told apart by count)
    assert len(others) >= 2
    assert set(others) == {os.SCHED_BATCH}, threads


def test_without_native_io_the_threads_keep_the_default_policy(tmp_path: Path) -> None:
    threads = serve_and_sync(tmp_path, "--no-native-io")
    assert len(threads) >= 2 and IO_THREAD_NAME not in dict(threads)
    assert {p for _, p in threads} == {os.SCHED_OTHER}, threads


PROGRAM = """
import os, threading
from groupcoord.server.thread_policy import favour_io_threads

def idle():
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    done.wait()

def io_thread():
    done.wait()

done = threading.Event()
chosen = threading.Thread(target=idle)
chosen.start()
io = threading.Thread(target=io_thread, name="io")
io.start()
import ctypes  # name it as the native shell names its thread (comm, 15 bytes)
libc = ctypes.CDLL(None)
libc.pthread_setname_np(ctypes.c_ulong(io.ident), b"groupcoord-net")
while os.sched_getscheduler(chosen.native_id) != os.SCHED_IDLE:
    pass
moved = favour_io_threads()
later = threading.Thread(target=done.wait)
later.start()
print(moved, os.sched_getscheduler(0), os.sched_getscheduler(chosen.native_id),
      os.sched_getscheduler(io.native_id), os.sched_getscheduler(later.native_id))
done.set()
"""


def test_a_policy_chosen_elsewhere_and_the_io_threads_are_left_as_they_are() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True, timeout=30
    ).stdout.split()
    moved, main, chosen, io, later = map(int, out)
    assert moved == 1  # the main thread alone
    assert main == os.SCHED_BATCH
    assert chosen == os.SCHED_IDLE  # as `chrt --idle` or the program itself set it
    assert io == os.SCHED_OTHER
    assert later == os.SCHED_BATCH  # inherited from the thread that started it
