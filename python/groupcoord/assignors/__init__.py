"""Python-facing assignors (Rust or reference backend) and client adapters."""

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.assignors.builtin import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)

__all__ = [
    "Assignor",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RebalanceProtocol",
    "RoundRobinAssignor",
    "StickyAssignor",
]
