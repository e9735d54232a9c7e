"""groupcoord: Kafka consumer-group coordination for Python, with its hot path in Rust."""

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
    "Assignment",
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
    "Subscription",
    "TopicPartition",
]
