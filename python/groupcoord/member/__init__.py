"""The group member: a sans-IO state machine (:class:`MemberMachine`) for the client side of
Kafka's classic group protocol, the listener interface the application implements, and the
member's settings. The threaded runner ``GroupMember`` drives the machine over the wire.
"""

from groupcoord.member.config import MemberConfig
from groupcoord.member.handles import (
    CommitFailedError,
    CommitHandle,
    FetchHandle,
    MemberClosedError,
)
from groupcoord.member.listener import CallbackKind, ListenerCall, RebalanceListener
from groupcoord.member.machine import MemberMachine
from groupcoord.member.protocol_choice import choose_protocol
from groupcoord.member.runner import GroupMember
from groupcoord.member.states import (
    IllegalMemberTransition,
    IllegalPhaseTransition,
    JoinPhase,
    MemberState,
)

__all__ = [
    "CallbackKind",
    "CommitFailedError",
    "CommitHandle",
    "FetchHandle",
    "GroupMember",
    "IllegalMemberTransition",
    "IllegalPhaseTransition",
    "JoinPhase",
    "ListenerCall",
    "MemberClosedError",
    "MemberConfig",
    "MemberMachine",
    "MemberState",
    "RebalanceListener",
    "choose_protocol",
]
