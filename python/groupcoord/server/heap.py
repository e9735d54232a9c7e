"""The server process keeps the heap pages it frees, as a JVM keeps its heap.

A coordinator recomputes a group's target assignment whenever the group changes; at
10,000 members it is tens of megabytes of dicts and tuples, and the previous one is freed
as the new one replaces it. glibc's malloc hands freed memory at the top of its heap back to
the kernel once more than ``M_TRIM_THRESHOLD`` (128 KiB by default) is free there, and
serves allocations of 128 KiB and more with their own ``mmap``; either way the next
computation gets fresh pages, and the kernel faults and zeroes each one again. Measured: a
server-side range assignment of 10,000 members x 1M partitions took 42 ms in a default
process and 32 ms with these settings, a quarter of it page faults and unmaps. So
``groupcoord serve`` raises both limits: up to :data:`TRIM_THRESHOLD_BYTES` of free heap
stays mapped, and blocks below :data:`MMAP_THRESHOLD_BYTES` come from the heap. The price
is that the process's resident size stays near its peak, as a JVM's committed heap does.

Only the server does this: ``mallopt`` changes the whole process, which a library imported
into someone else's program must not do. On a C library without ``mallopt`` (musl, macOS)
nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Final

__all__ = ["MMAP_THRESHOLD_BYTES", "TRIM_THRESHOLD_BYTES", "keep_freed_heap"]

#: glibc's ``M_TRIM_THRESHOLD`` and ``M_MMAP_THRESHOLD`` (malloc.h)
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3
#: Free heap kept mapped at the top of the heap (setting it also stops glibc from moving
#: both thresholds by itself).
TRIM_THRESHOLD_BYTES: Final = 256 * 1024 * 1024
#: Allocations from this size on get their own mapping; 32 MiB is glibc's largest on
#: 64-bit systems (``DEFAULT_MMAP_THRESHOLD_MAX``).
MMAP_THRESHOLD_BYTES: Final = 32 * 1024 * 1024


def keep_freed_heap() -> bool:
    """Apply both limits to this process; ``False`` if its C library has no ``mallopt``
    (nothing changed) or refused one of them."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success, 0 on error
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
