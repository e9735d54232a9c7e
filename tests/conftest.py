"""Fixtures shared by every test directory: ``serve_factory``, a real ``groupcoord serve``
subprocess for tests that drive it with real clients (interop, member runner, fuzz, server).

``serve_factory(*extra_args)`` starts ``python -m groupcoord serve --port 0 ...`` (plus
``--memory`` unless the arguments name ``--data-dir`` or ``--memory``), waits for its
``groupcoord listening on HOST:PORT`` line and returns a
:class:`~serve_process.ServerProcess` (``.host .port .bootstrap .stop() .kill()
.restart()``). Every server a test started is stopped when the test ends.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator

import pytest

from serve_process import ServerProcess, serve_args

__all__ = ["ServerProcess", "serve_factory"]


@pytest.fixture
def serve_factory() -> Iterator[Callable[..., ServerProcess]]:
    started: list[ServerProcess] = []

    def start(*extra_args: str) -> ServerProcess:
        server = ServerProcess(serve_args(extra_args))
        started.append(server)
        return server

    yield start
    for server in started:
        if server.running:
            # a stop that times out has already killed the process
            with contextlib.suppress(subprocess.TimeoutExpired):
                server.stop()
