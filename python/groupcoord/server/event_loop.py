"""The event loop ``groupcoord serve`` runs on (``--event-loop``).

``uvloop`` (the default; libuv, a dependency on Linux and macOS) runs the same asyncio
code with its transports, timers and polling in C: the server's connections are
:class:`asyncio.Protocol` s, so every read and write of a request goes through them. In
benches/bench_durable.py it cut the server's CPU per heartbeat by about a fifth.
``asyncio`` is the standard library's loop, for a platform without uvloop or to rule it
out when looking into a problem.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

__all__ = ["DEFAULT_EVENT_LOOP", "EVENT_LOOPS", "loop_factory"]

EVENT_LOOPS: Final = ("uvloop", "asyncio")
DEFAULT_EVENT_LOOP: Final = "uvloop"


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes the event loop called ``name`` (one of :data:`EVENT_LOOPS`);
    ValueError naming ``--event-loop`` when it is unknown or uvloop is not installed."""
    if name == "asyncio":
        return asyncio.new_event_loop
    if name == "uvloop":
        try:
            import uvloop
        except ImportError as exc:
            raise ValueError(
                "--event-loop uvloop: uvloop is not installed (pip install uvloop; it has no "
                "Windows build); use --event-loop asyncio for the standard library's loop"
            ) from exc
        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        return factory
    raise ValueError(f"--event-loop {name!r}: unknown (one of {', '.join(EVENT_LOOPS)})")
