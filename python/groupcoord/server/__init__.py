"""The asyncio Kafka-protocol server shell and its topic log.

:class:`Server` / :func:`run` serve the group APIs through the sans-IO coordinator and
the data APIs through the topic log; see :mod:`groupcoord.server.server`.
"""

from groupcoord.server.server import (
    DATABASE_NAME,
    Server,
    ServerConfig,
    StartupError,
    WallClock,
    run,
)

__all__ = ["DATABASE_NAME", "Server", "ServerConfig", "StartupError", "WallClock", "run"]
