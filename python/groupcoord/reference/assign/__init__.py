"""Reference assignors: the same algorithms as ``rust/src/assign``, in pure Python.

Each algorithm works on a :class:`GroupModel` (topics interned to dense ids,
partitions numbered densely in (topic, partition) order, members sorted by id)
and returns, per member index, the sorted dense partition ids it is assigned.
"""

from groupcoord.reference.assign.cooperative import assign_cooperative_sticky
from groupcoord.reference.assign.model import (
    GroupModel,
    MemberInput,
    build_model,
    owned_claim,
)
from groupcoord.reference.assign.rack import Racks, read_partition_racks
from groupcoord.reference.assign.range import assign_range
from groupcoord.reference.assign.roundrobin import assign_roundrobin
from groupcoord.reference.assign.sticky import assign_sticky
from groupcoord.reference.assign.uniform import assign_uniform

__all__ = [
    "GroupModel",
    "MemberInput",
    "Racks",
    "assign_cooperative_sticky",
    "assign_range",
    "assign_roundrobin",
    "assign_sticky",
    "assign_uniform",
    "build_model",
    "owned_claim",
    "read_partition_racks",
]
