"""Group API calls over the wire for the server tests: a request and its decoded answer,
and a member that joined and synced (its group Stable)."""

from __future__ import annotations

from wire_client import WireClient

from groupcoord.coordinator import (
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.errors import MemberIdRequiredError
from groupcoord.protocol.group_messages import from_kio_response, to_kio_request


async def call(client: WireClient, request: object) -> object:
    response = await client.call(to_kio_request(request))  # type: ignore[arg-type]
    return from_kio_response(request.API_KEY, request.version, response)  # type: ignore[attr-defined]


def join(member_id: str = "", group: str = "g", session_ms: int = 10_000) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=5,
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=(("range", b""),),
    )


async def synced_member(
    client: WireClient, group: str = "g", session_ms: int = 10_000
) -> JoinGroupResponse:
    """A lone member that joined and synced: its group is Stable."""
    first = await call(client, join(group=group, session_ms=session_ms))
    assert isinstance(first, JoinGroupResponse) and first.error is MemberIdRequiredError
    joined = await call(client, join(first.member_id, group, session_ms))
    assert isinstance(joined, JoinGroupResponse) and joined.error is None
    synced = await call(
        client,
        SyncGroupRequest(
            version=5,
            group_id=group,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=((joined.member_id, b""),),
        ),
    )
    assert isinstance(synced, SyncGroupResponse) and synced.error is None
    return joined
