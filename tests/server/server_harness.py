"""Run an in-process :class:`~groupcoord.server.Server` around an async test scenario.

Not a test module. ``run_scenario(scenario, **config)`` starts a server on a free port
(memory stores unless ``data_dir`` is given), awaits ``scenario(server)`` and always
closes the server, all inside one ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from groupcoord.config import CoordinatorConfig
from groupcoord.server import Server, ServerConfig

T = TypeVar("T")

#: a scenario that hangs fails instead of hanging the suite
SCENARIO_TIMEOUT_S = 60.0


def server_config(**overrides: Any) -> ServerConfig:
    fields: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "data_dir": None,
        "coordinator": CoordinatorConfig(group_initial_rebalance_delay_ms=0),
        # GROUPCOORD_TEST_NATIVE_IO=0: the same scenarios over the asyncio shell
        "native_io": os.environ.get("GROUPCOORD_TEST_NATIVE_IO", "1") != "0",
    }
    fields.update(overrides)
    return ServerConfig(**fields)


def run_scenario(scenario: Callable[[Server], Awaitable[T]], **overrides: Any) -> T:
    async def main() -> T:
        server = Server(server_config(**overrides))
        await server.start()
        try:
            async with asyncio.timeout(SCENARIO_TIMEOUT_S):
                return await scenario(server)
        finally:
            await server.close()

    return asyncio.run(main())
