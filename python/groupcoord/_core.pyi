"""Type stubs of the Rust extension ``groupcoord._core`` (hand-written; checked by stubtest).

Each component keeps its entries in its own delimited section below.
"""

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Literal, Self, SupportsIndex, TypeAlias, final, overload

from typing_extensions import Buffer

__version__: str

# ==============================================================================
# =====================================================================================
# BEGIN assignors  (rust/src/bindings/assign.rs)
# =====================================================================================

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

# =====================================================================================
# END assignors
# =====================================================================================
