"""The four assignors of the Java client, under the protocol names Java members announce."""

from __future__ import annotations

from typing import ClassVar

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.reference.assign import OwnershipSource


class RangeAssignor(Assignor):
    """Per topic, contiguous ranges over its subscribers; the first ``P % M`` get one more."""

    name: ClassVar[str] = "range"
    kind: ClassVar[str] = "range"


class RoundRobinAssignor(Assignor):
    """All partitions in (topic, partition) order dealt in turn to the members subscribed."""

    name: ClassVar[str] = "roundrobin"
    kind: ClassVar[str] = "roundrobin"


class StickyAssignor(Assignor):
    """KIP-54: balanced, and moving as few previously owned partitions as possible (eager)."""

    name: ClassVar[str] = "sticky"
    kind: ClassVar[str] = "sticky"
    ownership: ClassVar[OwnershipSource] = OwnershipSource.STICKY


class CooperativeStickyAssignor(Assignor):
    """KIP-429: the sticky target, minus partitions that must be revoked first."""

    name: ClassVar[str] = "cooperative-sticky"
    kind: ClassVar[str] = "cooperative-sticky"
    ownership: ClassVar[OwnershipSource] = OwnershipSource.COOPERATIVE
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )
