"""ApiVersions (API 18): the version table this server advertises, and its responses.

The table is exactly what the handlers serve: the group APIs (versions both kio and the
coordinator have), FindCoordinator and ApiVersions (this package) and the data APIs
(``DATA_API_VERSIONS``). A request of a version we do not serve gets the v0 response
with UNSUPPORTED_VERSION and the table, as Kafka answers (KIP-511), so the client can
retry with a version we have.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Final

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType

from groupcoord.protocol.group_messages import GROUP_API_VERSIONS
from groupcoord.protocol.wire import API_VERSIONS_KEY, kio_version_range

__all__ = [
    "API_VERSIONS_VERSIONS",
    "FIND_COORDINATOR_KEY",
    "FIND_COORDINATOR_VERSIONS",
    "api_versions_response",
    "served_versions",
]

FIND_COORDINATOR_KEY: Final = 10


def _with_kio(api_key: int, lo: int, hi: int) -> tuple[int, int]:
    known = kio_version_range(api_key)
    assert known is not None
    return max(lo, known[0]), min(hi, known[1])


#: FindCoordinator v0-v6 (v4+ batched); ApiVersions v0-v4.
FIND_COORDINATOR_VERSIONS: Final = _with_kio(FIND_COORDINATOR_KEY, 0, 6)
API_VERSIONS_VERSIONS: Final = _with_kio(API_VERSIONS_KEY, 0, 4)


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
    """The ApiVersions response of ``version`` (v0 with UNSUPPORTED_VERSION if
    ``unsupported``) listing ``table``."""
    if unsupported:
        version = 0
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
