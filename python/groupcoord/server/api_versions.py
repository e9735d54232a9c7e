"""ApiVersions (API 18): the version table this server advertises, and its responses.

The table is exactly what the handlers serve: the group APIs (versions both kio and the
coordinator have), FindCoordinator and the data APIs (:mod:`groupcoord.broker`) and
ApiVersions itself. A request of a version we do not serve gets the v0 response
with UNSUPPORTED_VERSION listing the ApiVersions versions we have, exactly as Kafka
answers (KIP-511), so the client can retry with one of them.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType

from groupcoord.broker.find_coordinator import FIND_COORDINATOR_KEY, FIND_COORDINATOR_VERSIONS
from groupcoord.protocol.group_messages import GROUP_API_VERSIONS
from groupcoord.protocol.wire import API_VERSIONS_KEY, kio_versions_within

__all__ = [
    "API_VERSIONS_VERSIONS",
    "api_versions_response",
    "served_versions",
]

#: ApiVersions v0-v4.
API_VERSIONS_VERSIONS: Final = kio_versions_within(API_VERSIONS_KEY, 0, 4)


def served_versions(data_api_versions: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """api_key -> (min, max) for everything this server answers, in key order."""
    table: dict[int, tuple[int, int]] = {
        **GROUP_API_VERSIONS,
        **data_api_versions,
        FIND_COORDINATOR_KEY: FIND_COORDINATOR_VERSIONS,
        API_VERSIONS_KEY: API_VERSIONS_VERSIONS,
    }
    return dict(sorted(table.items()))


def api_versions_response(
    version: int, table: Mapping[int, tuple[int, int]], *, unsupported: bool = False
) -> Any:
    """The ApiVersions response of ``version`` listing ``table``; with ``unsupported``, the
    v0 UNSUPPORTED_VERSION answer listing only ApiVersions' own range from ``table``."""
    if unsupported:
        version = 0
        table = {API_VERSIONS_KEY: table[API_VERSIONS_KEY]}
    module = load_payload_module(API_VERSIONS_KEY, version, EntityType.response)
    entry = module.ApiVersion
    fields: dict[str, Any] = {
        "error_code": ErrorCode.unsupported_version if unsupported else ErrorCode.none,
        "api_keys": tuple(
            entry(api_key=key, min_version=lo, max_version=hi) for key, (lo, hi) in table.items()
        ),
    }
    if version >= 1:
        fields["throttle_time"] = datetime.timedelta(0)
    return module.ApiVersionsResponse(**fields)
