"""The listener scenarios, run again over the asyncio shell (``native_io=False``,
``groupcoord serve --no-native-io``; SSL and SASL listeners are always served there): the
same clients must see the same server, whichever shell reads their sockets.
(``GROUPCOORD_TEST_NATIVE_IO=0`` runs every ``server_harness`` scenario that way.)"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import test_connection_order
import test_consumer_groups_wire
import test_group_gateway
import test_limits
import test_server

SCENARIOS: list[Callable[[], None]] = [
    test_server.test_api_versions_advertises_exactly_what_is_served,
    test_server.test_pipelined_replies_come_back_in_request_order,
    test_server.test_parked_join_does_not_block_other_connections,
    test_server.test_find_coordinator_batched_keys_all_map_to_this_node,
    test_server.test_offset_commit_to_unknown_topics_or_partitions_is_refused_per_partition,
    test_server.test_long_poll_fetch_is_woken_by_a_produce,
    test_server.test_a_group_request_our_messages_refuse_gets_invalid_request,
    test_server.test_a_flood_of_pipelined_requests_is_answered_in_full_and_in_order,
    test_connection_order.test_pipelined_replies_keep_request_order,
    test_consumer_groups_wire.test_heartbeats_assign_by_the_topic_ids_metadata_gives,
    test_consumer_groups_wire.test_classic_admin_apis_answer_for_a_consumer_group_as_kafka,
    test_group_gateway.test_parked_join_is_answered_by_the_timer,
    test_limits.test_connections_beyond_max_connections_are_closed_at_accept,
    test_limits.test_max_connections_per_ip_leaves_other_addresses_served,
    test_limits.test_a_connection_with_no_request_for_the_idle_timeout_is_closed,
    test_limits.test_a_parked_join_group_is_not_idle,
]


@pytest.fixture
def asyncio_io(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROUPCOORD_TEST_NATIVE_IO", "0")


@pytest.mark.usefixtures("asyncio_io")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_over_the_asyncio_shell(scenario: Callable[[], None]) -> None:
    scenario()


@pytest.mark.usefixtures("asyncio_io")
@pytest.mark.parametrize("raw", test_server.MALFORMED_FRAMES, ids=test_server.MALFORMED_IDS)
def test_a_malformed_frame_closes_only_that_connection(
    raw: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    test_server.test_malformed_frame_closes_only_that_connection(raw, caplog)


@pytest.mark.usefixtures("asyncio_io")
def test_offset_delete_over_the_wire_is_durable(tmp_path: object) -> None:
    test_server.test_offset_delete_over_the_wire_is_durable(tmp_path)  # type: ignore[arg-type]
