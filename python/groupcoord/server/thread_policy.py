"""Which of the server's threads the kernel should favour when they want the same CPU.

With native I/O (the default) the latency of heartbeats and taken commits is the native
shells' I/O threads' (``rust/src/net/io_loop.rs``); the event loop and the store writer do the
throughput work behind them (group changes, batches of commits, fsyncs). Under the default
policy every wake-up of those two (a transaction written, a batch to take) may preempt an
I/O thread in the middle of its turn, and the heartbeats it was about to answer wait for
them. :func:`favour_io_threads` moves every thread of the process but the I/O threads to
``SCHED_BATCH``: they still get their fair share of the CPU (it is not a lower priority),
but their wake-ups no longer preempt a running thread. Threads started later by the
event loop's thread (the writer is started on first use) inherit the policy.

Measured in ``benches/results/durable.md`` (2026-12-07 04:45 UTC): with 1,000 of 5,000
members committing every 100 ms, on one core, the heartbeat p99 was lower in each of seven
alternated pairs (1.1-3.6x, 2.6x at the median), and commits were no slower.

Linux only (elsewhere, and where a thread's policy is not the default one, e.g. set by
``chrt``, nothing is changed). Only ``groupcoord serve`` calls it: a server embedded in
another program leaves that program's threads as they are.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["IO_THREAD_NAME", "favour_io_threads"]

log = logging.getLogger("groupcoord.server")

#: the name ``rust/src/net/io_loop.rs`` gives a native shell's I/O thread
IO_THREAD_NAME = "groupcoord-net"

_TASKS = Path("/proc/self/task")


def favour_io_threads() -> int:
    """Every thread of this process but the native I/O threads to ``SCHED_BATCH``, if it
    runs under the default policy; returns how many were moved."""
    if not hasattr(os, "SCHED_BATCH") or not _TASKS.is_dir():
        return 0
    moved = 0
    for task in _TASKS.iterdir():
        tid = int(task.name)
        try:
            if (task / "comm").read_text().strip() == IO_THREAD_NAME:
                continue
            if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                continue
            os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended meanwhile
        except PermissionError as e:  # a sandbox may refuse it: serve as before
            log.debug("thread %d stays under the default policy: %s", tid, e)
            continue
        moved += 1
    return moved
