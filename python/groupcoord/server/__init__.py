"""The asyncio Kafka-protocol server: the network shell of ``groupcoord serve``.

Accepting connections, frames, per-connection ordering (:mod:`.connection`), the dispatch
table (:mod:`.dispatch`, :mod:`.api_versions`), the asyncio side of the sans-IO coordinator
(:mod:`.group_gateway`, its store writer :mod:`.persistence`, :mod:`.event_log`), Fetch
long polls (:mod:`.fetch_wait`), start-up and shutdown (:mod:`.server`). What is answered
lives elsewhere: the group APIs in :mod:`groupcoord.coordinator`, the topic log and the
data APIs in :mod:`groupcoord.broker`. :class:`Server` / :func:`run` put them together.
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
