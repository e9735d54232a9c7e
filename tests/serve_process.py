"""A ``groupcoord serve`` subprocess (see :class:`ServerProcess`), for interop tests."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

#: how long a server may take to print its listening line
START_TIMEOUT_S = 30.0
#: how long a graceful stop may take before the test fails
STOP_TIMEOUT_S = 15.0

LISTENING_PREFIX = "groupcoord listening on "


class ServerProcess:
    """One ``groupcoord serve`` subprocess. ``restart()`` keeps the same port, so clients
    bootstrapped to it reconnect to the new process. Its log (stderr) goes to the test's
    stderr, or is appended to ``log_file``."""

    def __init__(self, args: tuple[str, ...], log_file: Path | None = None) -> None:
        self.args = args
        self.log_file = log_file
        self.host = ""
        self.port = 0
        self.proc: subprocess.Popen[str] | None = None
        self.returncode: int | None = None
        self._start(args)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def _start(self, args: tuple[str, ...]) -> None:
        cmd = [sys.executable, "-m", "groupcoord", "serve", *args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        if self.log_file is None:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        else:
            with self.log_file.open("a", encoding="utf-8") as log:
                self.proc = subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env
                )
        self.returncode = None
        line = self._read_line(START_TIMEOUT_S)
        if not line.startswith(LISTENING_PREFIX):
            self.kill()
            raise RuntimeError(f"groupcoord serve did not start: first line was {line!r}")
        host, _, port = line[len(LISTENING_PREFIX) :].strip().rpartition(":")
        self.host, self.port = host, int(port)

    def _read_line(self, timeout_s: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if sel.select(timeout=0.1):
                    return self.proc.stdout.readline()
                if self.proc.poll() is not None:
                    return self.proc.stdout.readline()
            return ""
        finally:
            sel.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Graceful stop (SIGTERM by default); returns the exit status."""
        if self.proc is None:
            return -1 if self.returncode is None else self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.returncode = self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self._close_pipe()
        return self.returncode

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown (a crash)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
        self.returncode = self.proc.wait()
        self._close_pipe()

    def restart(self) -> None:
        """Stop gracefully (if running) and start again on the same port."""
        if self.running:
            self.stop()
        args = _with_port(self.args, self.port)
        self._start(args)

    def _close_pipe(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()


def _with_port(args: tuple[str, ...], port: int) -> tuple[str, ...]:
    out = list(args)
    i = out.index("--port")
    out[i + 1] = str(port)
    return tuple(out)


def serve_args(extra_args: tuple[str, ...]) -> tuple[str, ...]:
    """The full argument list: ``--port 0`` and ``--memory`` unless given otherwise."""
    args = list(extra_args)
    if "--port" not in args:
        args = ["--port", "0", *args]
    if "--data-dir" not in args and "--memory" not in args:
        args.append("--memory")
    return tuple(args)
