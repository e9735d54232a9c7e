"""groupcoord: Kafka consumer-group coordination for Python, with its hot path in Rust."""

from groupcoord._core import JOIN, SESSION, SYNC, Expired, MemberExpiry, TimerWheel
from groupcoord._version import __version__
from groupcoord.assignors import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
)
from groupcoord.types import Assignment, Subscription, TopicPartition

__all__ = [
    "JOIN",
    "SESSION",
    "SYNC",
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "Expired",
    "MemberExpiry",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TimerWheel",
    "TopicPartition",
    "__version__",
]
