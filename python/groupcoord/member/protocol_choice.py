"""Which rebalance protocol a member follows, chosen from its assignors as Kafka does.

Kafka's ``ConsumerCoordinator`` keeps only the protocols that *every* configured assignor
supports and, of those, takes the most advanced one (EAGER < COOPERATIVE). So a member listing
``[CooperativeStickyAssignor(), RangeAssignor()]`` behaves eagerly (range supports only EAGER)
while already announcing cooperative-sticky first: that is the first bounce of KIP-429's
two-bounce upgrade. The second bounce drops range and the member becomes cooperative; the
coordinator has been choosing cooperative-sticky since every member announced it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.config import ConfigError

__all__ = ["PROTOCOL_RANK", "choose_protocol"]

#: How advanced a protocol is (Kafka's RebalanceProtocol ids): the higher, the preferred.
PROTOCOL_RANK: Final = {RebalanceProtocol.EAGER: 0, RebalanceProtocol.COOPERATIVE: 1}


def choose_protocol(assignors: Sequence[Assignor]) -> RebalanceProtocol:
    """The most advanced protocol supported by all ``assignors``.

    Raises :class:`~groupcoord.config.ConfigError` for an empty list or when the assignors
    share no protocol (Kafka throws ``IllegalArgumentException`` at consumer construction).
    """
    if not assignors:
        raise ConfigError("at least one partition assignor is required")
    common = set(PROTOCOL_RANK)
    for assignor in assignors:
        common &= set(assignor.supported_protocols)
    if not common:
        names = ", ".join(a.name for a in assignors)
        raise ConfigError(f"assignors [{names}] have no rebalance protocol in common")
    return max(common, key=PROTOCOL_RANK.__getitem__)
