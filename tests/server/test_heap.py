"""``groupcoord.server.heap``: the server keeps the heap pages it frees.

Each check runs in its own interpreter: ``mallopt`` changes the whole process, and the
test process must stay as Python starts it. The measure is the process's minor page
faults (``ru_minflt``) while it builds a second 64 MiB of dict-sized blocks after freeing
the first: with the heap kept, the freed pages serve the second and it faults (almost)
nothing; by default glibc has handed them back and each page is faulted in again.
"""

from __future__ import annotations

import ctypes.util
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="the setting is glibc's mallopt",
)

_PROBE = """
import resource, sys
from groupcoord.server.heap import keep_freed_heap
if sys.argv[1] == "kept":
    assert keep_freed_heap()
def build():
    # 2,600 blocks of 26 KiB: a 1,000-key dict's table each, below the 128 KiB mmap limit
    return [bytearray(26 * 1024) for _ in range(2_600)]
first = build()
del first
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
second = build()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults_rebuilding(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, mode], check=True, capture_output=True, text=True
    )
    return int(out.stdout)


def test_a_freed_heap_is_reused_without_faulting_its_pages_in_again() -> None:
    pages = 64 * 1024 * 1024 // 4096
    assert faults_rebuilding("default") > pages // 2  # handed back, faulted in again
    assert faults_rebuilding("kept") < pages // 20


def test_keep_freed_heap_reports_whether_the_c_library_took_it() -> None:
    assert ctypes.util.find_library("c") is not None
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "from groupcoord.server.heap import keep_freed_heap; print(keep_freed_heap())",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    assert out.stdout.strip() == "True"
