"""Consumer-protocol payloads (Subscription/Assignment v0-v3, sticky and cooperative user
data) and the Kafka wire codec (:mod:`~groupcoord.protocol.wire`: frames, headers, kio
payloads; :mod:`~groupcoord.protocol.group_messages`: kio <-> coordinator messages;
:mod:`~groupcoord.protocol.client`: the sans-IO client side of a connection)."""

from groupcoord.protocol.consumer import (
    ASSIGNMENT_MAX_VERSION,
    SUBSCRIPTION_MAX_VERSION,
    BytesLike,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    described_assignment,
    described_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)

__all__ = [
    "ASSIGNMENT_MAX_VERSION",
    "SUBSCRIPTION_MAX_VERSION",
    "BytesLike",
    "decode_assignment",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "decode_subscription",
    "described_assignment",
    "described_subscription",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
]
