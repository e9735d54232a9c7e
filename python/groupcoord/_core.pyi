# Hand-written stubs of the Rust extension `groupcoord._core`, kept honest by
# `python -m mypy.stubtest groupcoord._core` in CI.

from collections.abc import Mapping
from typing import Any

__all__ = ["__version__", "assign", "assign_encoded"]

__version__: str

# --- assignors (rust/src/bindings/assign.rs) ---------------------------------

def assign(
    kind: str,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Any],
    topic_partition_type: type,
    assignment_type: Any,
) -> dict[str, Any]:
    """Run assignor ``kind`` on Subscription objects; build results with the given types."""

def assign_encoded(
    kind: str,
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, bytes],
    group_instance_ids: Mapping[str, str | None] | None = None,
) -> dict[str, bytes]:
    """Run assignor ``kind`` on ConsumerProtocolSubscription bytes; return assignment bytes."""
