"""The group member: sans-IO state machines for the client side of Kafka's classic group
protocol (:class:`MemberMachine`) and of KIP-848's consumer protocol
(:class:`ConsumerMemberMachine`), the listener interface the application implements, and the
members' settings. The threaded runner ``GroupMember`` drives either machine over the wire.
"""

from groupcoord.member.config import ConsumerMemberConfig, MemberConfig
from groupcoord.member.consumer_machine import ConsumerMemberMachine
from groupcoord.member.consumer_states import ConsumerMemberState, IllegalConsumerTransition
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
    "ConsumerMemberConfig",
    "ConsumerMemberMachine",
    "ConsumerMemberState",
    "FetchHandle",
    "GroupMember",
    "IllegalConsumerTransition",
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
