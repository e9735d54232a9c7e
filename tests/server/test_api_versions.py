"""ApiVersions answers, every version, through the wire codec: the table the dispatcher serves."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from groupcoord.broker.data_apis import DATA_API_VERSIONS
from groupcoord.protocol.wire import RequestHeader, decode_response, encode_response
from groupcoord.server.api_versions import (
    API_VERSIONS_VERSIONS,
    api_versions_response,
    served_versions,
)

TABLE = served_versions(DATA_API_VERSIONS)


def round_trip(api_key: int, version: int, response: object) -> object:
    header = RequestHeader(api_key=api_key, api_version=version, correlation_id=9)
    correlation_id, decoded = decode_response(
        api_key, version, encode_response(header, response)[4:]
    )
    assert correlation_id == 9
    return decoded


@pytest.mark.parametrize("version", range(API_VERSIONS_VERSIONS[0], API_VERSIONS_VERSIONS[1] + 1))
def test_api_versions_every_version_lists_the_table(version: int) -> None:
    decoded = round_trip(18, version, api_versions_response(version, TABLE))
    assert decoded.error_code == ErrorCode.none  # type: ignore[attr-defined]
    listed = {k.api_key: (k.min_version, k.max_version) for k in decoded.api_keys}  # type: ignore[attr-defined]
    assert listed == TABLE


def test_unsupported_answer_is_v0_with_the_api_versions_range_only() -> None:
    response = api_versions_response(3, TABLE, unsupported=True)
    assert type(response).__version__ == 0
    decoded = round_trip(18, 0, response)
    assert decoded.error_code == ErrorCode.unsupported_version  # type: ignore[attr-defined]
    listed = [(k.api_key, k.min_version, k.max_version) for k in decoded.api_keys]  # type: ignore[attr-defined]
    assert listed == [(18, *API_VERSIONS_VERSIONS)]


def test_the_table_has_the_group_and_data_apis_and_nothing_else() -> None:
    group = {8, 9, 11, 12, 13, 14, 15, 16, 42, 47}
    kip848 = {68, 69}  # ConsumerGroupHeartbeat, ConsumerGroupDescribe
    assert set(TABLE) == group | kip848 | set(DATA_API_VERSIONS) | {10, 18}
    assert list(TABLE) == sorted(TABLE)
    assert TABLE[68] == TABLE[69] == (0, 1)
