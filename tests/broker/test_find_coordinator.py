"""FindCoordinator answers, every version, through the wire codec."""

from __future__ import annotations

import importlib

from hypothesis import given
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from groupcoord.broker.data_apis import BrokerInfo
from groupcoord.broker.find_coordinator import FIND_COORDINATOR_VERSIONS, find_coordinator
from groupcoord.protocol.wire import RequestHeader, decode_response, encode_response

BROKER = BrokerInfo(node_id=0, host="broker.test", port=19092, cluster_id="c")


def round_trip(api_key: int, version: int, response: object) -> object:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=9)
    correlation_id, decoded = decode_response(
        api_key, version, encode_response(header, response)[4:]
    )
    assert correlation_id == 9
    return decoded


def request_class(version: int) -> type:
    module = importlib.import_module(f"kio.schema.find_coordinator.v{version}.request")
    return module.FindCoordinatorRequest  # type: ignore[no-any-return]


@given(
    version=st.integers(FIND_COORDINATOR_VERSIONS[0], FIND_COORDINATOR_VERSIONS[1]),
    keys=st.lists(st.text(max_size=10), min_size=1, max_size=5),
    key_type=st.sampled_from([0, 1, 2, 7]),
)
def test_find_coordinator_answers_this_node_for_groups_and_transactions(
    version: int, keys: list[str], key_type: int
) -> None:
    cls = request_class(version)
    if version >= 4:
        request = cls(key_type=i8(key_type), coordinator_keys=tuple(keys))
    elif version >= 1:
        request = cls(key=keys[0], key_type=i8(key_type))
    else:
        request = cls(key=keys[0])
        key_type = 0
    decoded = round_trip(10, version, find_coordinator(request, BROKER))
    served = key_type in (0, 1)
    entries = (
        [(c.key, c.node_id, c.host, c.port, c.error_code) for c in decoded.coordinators]  # type: ignore[attr-defined]
        if version >= 4
        else [(keys[0], decoded.node_id, decoded.host, decoded.port, decoded.error_code)]  # type: ignore[attr-defined]
    )
    expected_keys = keys if version >= 4 else keys[:1]
    assert [e[0] for e in entries] == expected_keys
    for _, node_id, host, port, error in entries:
        if served:
            assert (node_id, host, port, error) == (0, "broker.test", 19092, ErrorCode.none)
        else:
            assert error == ErrorCode.invalid_request and node_id == -1
