"""Property: whatever mix of parked and immediate requests a client pipelines on one
connection, the replies come back in request order, one each."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest as FindCoordinatorV4
from kio.static.primitive import i8
from server_harness import run_scenario
from wire_client import WireClient

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import HeartbeatRequest, JoinGroupRequest
from groupcoord.protocol.group_messages import to_kio_request
from groupcoord.server import Server

KINDS = ("join", "api_versions", "heartbeat", "find_coordinator")


def request_of(kind: str, group: str) -> object:
    if kind == "join":
        # v3: no MEMBER_ID_REQUIRED round trip, the join parks for the initial delay
        return to_kio_request(
            JoinGroupRequest(
                version=3,
                group_id=group,
                session_timeout_ms=10_000,
                rebalance_timeout_ms=10_000,
                protocol_type="consumer",
                protocols=(("range", b""),),
            )
        )
    if kind == "heartbeat":
        return to_kio_request(
            HeartbeatRequest(version=4, group_id=group, generation_id=1, member_id="nobody")
        )
    if kind == "find_coordinator":
        return FindCoordinatorV4(key_type=i8(0), coordinator_keys=(group,))
    return ApiVersionsV0()


@settings(max_examples=12, deadline=None)
@given(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=12))
def test_pipelined_replies_keep_request_order(kinds: list[str]) -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        sent = [await client.send(request_of(kind, "g")) for kind in kinds]
        received = [await client.receive() for _ in sent]
        assert [r.correlation_id for r in received] == sent
        expected_api = {"join": 11, "api_versions": 18, "heartbeat": 12, "find_coordinator": 10}
        assert [r.api_key for r in received] == [expected_api[k] for k in kinds]
        assert client.codec.in_flight == 0
        await client.close()

    run_scenario(scenario, coordinator=CoordinatorConfig(group_initial_rebalance_delay_ms=150))
