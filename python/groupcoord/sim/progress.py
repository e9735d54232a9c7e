"""The progress bar of ``groupcoord simulate``: virtual time reached, on stderr.

It stays hidden for runs that finish within :data:`SHOW_AFTER_S` of wall time (most do), so
short runs print only their summary.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Final

from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

__all__ = ["SHOW_AFTER_S", "ProgressBar"]

#: wall seconds before the bar appears
SHOW_AFTER_S: Final = 2.0


class ProgressBar:
    def __init__(self, *, enabled: bool = True) -> None:
        self._enabled = enabled and sys.stderr.isatty()
        self._started = time.monotonic()
        self._progress: Progress | None = None
        self._task = TaskID(0)

    def __enter__(self) -> ProgressBar:
        self._started = time.monotonic()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def update(self, now_ms: int, end_ms: int) -> None:
        """Called by the engine with the virtual time reached."""
        if not self._enabled:
            return
        if self._progress is None:
            if time.monotonic() - self._started < SHOW_AFTER_S:
                return
            self._progress = Progress(
                TextColumn("simulating"),
                BarColumn(),
                TextColumn("{task.completed:.0f}/{task.total:.0f} s virtual"),
                TimeRemainingColumn(),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("sim", total=end_ms / 1000)
        self._progress.update(self._task, completed=now_ms / 1000)
