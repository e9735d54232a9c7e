"""kio group-API messages <-> :mod:`groupcoord.coordinator.messages`, both directions.

Server side: :func:`to_coordinator_request` (a decoded kio request -> our request) and
:func:`to_kio_response` (our response -> the kio response of the same version). Client
side: :func:`to_kio_request` and :func:`from_kio_response`. Either side:
:func:`error_response`. Each API's mappings live in its own module of
:mod:`groupcoord.protocol.apis`; this module checks versions and dispatches.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kio.static.constants import EntityType

from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse
from groupcoord.errors import KafkaError, UnsupportedVersionError
from groupcoord.protocol import wire
from groupcoord.protocol.apis import GROUP_APIS
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import payload_class, resolve_entity_hints
from groupcoord.protocol.wire import kio_version_range

__all__ = [
    "GROUP_API_KEYS",
    "GROUP_API_VERSIONS",
    "error_response",
    "from_kio_response",
    "prepare",
    "response_api_key",
    "to_coordinator_request",
    "to_kio_request",
    "to_kio_response",
]

#: The API keys the coordinator serves.
GROUP_API_KEYS: Final = frozenset(GROUP_APIS)

_BY_RESPONSE: Final[Mapping[type[CoordinatorResponse], GroupApi]] = {
    api.response: api for api in GROUP_APIS.values()
}


def _intersect(api: GroupApi) -> tuple[int, int]:
    known = kio_version_range(api.api_key)
    assert known is not None, f"kio has no API {api.api_key}"
    lo, hi = max(known[0], api.request.MIN_VERSION), min(known[1], api.request.MAX_VERSION)
    assert lo <= hi, f"no version of API {api.api_key} both kio and the coordinator have"
    return lo, hi


#: api_key -> (min, max): the versions both kio and the coordinator implement.
GROUP_API_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    key: _intersect(GROUP_APIS[key]) for key in sorted(GROUP_APIS)
}


def _api(api_key: int, version: int) -> GroupApi:
    lo, hi = GROUP_API_VERSIONS.get(api_key, (0, -1))
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"group API {api_key} v{version} is not mapped")
    return GROUP_APIS[api_key]


def prepare(api_key: int, version: int) -> None:
    """Do now, for group API ``api_key`` at ``version``, the one-time work its first request
    and response would do: load kio's schema classes, build their readers and writers and
    resolve the type hints the converters read.

    A client calls it for the versions it will speak as soon as it knows them. Done lazily,
    this costs 2-15 ms per API on the first message (SyncGroup is the slowest), long enough
    for a new member's first SyncGroup to reach the coordinator after the leader has
    already rejoined in a cooperative rebalance, which costs the group another round.
    """
    _api(api_key, version)
    wire.prepare_codec(api_key, version)
    for kind in (EntityType.request, EntityType.response):
        resolve_entity_hints(payload_class(api_key, version, kind))


# --------------------------------------------------------------------------------------
# server side
# --------------------------------------------------------------------------------------


def to_coordinator_request(
    api_key: int,
    version: int,
    request: Any,
    *,
    correlation: object = None,
    client_id: str = "",
    client_host: str = "",
) -> CoordinatorRequest:
    """The coordinator request for a decoded kio group request.

    Our request validates itself: a value a broker rejects raises ``ValueError`` /
    ``TypeError`` / :class:`~groupcoord.errors.UnsupportedVersionError`.
    """
    api = _api(api_key, version)
    return api.read_request(request, version, correlation, client_id, client_host)


def response_api_key(response: CoordinatorResponse) -> int:
    """The API key of one of our responses."""
    return _BY_RESPONSE[type(response)].api_key


def to_kio_response(response: CoordinatorResponse) -> Any:
    """The kio response (of ``response.version``) for one of the coordinator's responses."""
    api = _api(response_api_key(response), response.version)
    cls = payload_class(api.api_key, response.version, EntityType.response)
    return api.write_response(cls, response)


# --------------------------------------------------------------------------------------
# client side
# --------------------------------------------------------------------------------------


def to_kio_request(request: CoordinatorRequest) -> Any:
    """The kio request (of ``request.version``) for one of our requests."""
    api = _api(request.API_KEY, request.version)
    cls = payload_class(api.api_key, request.version, EntityType.request)
    return api.write_request(cls, request)


def from_kio_response(
    api_key: int, version: int, response: Any, *, correlation: object = None
) -> CoordinatorResponse:
    """Our response for a decoded kio group response of (api_key, version)."""
    return _api(api_key, version).read_response(response, version, correlation)


# --------------------------------------------------------------------------------------
# either side
# --------------------------------------------------------------------------------------


def error_response(
    api_key: int, version: int, request: Any, error: type[KafkaError], *, correlation: object = None
) -> CoordinatorResponse:
    """Our response of API ``api_key`` at ``version`` answering ``request`` with ``error``
    everywhere it can be (top level, or on every item the request named: each topic and
    partition of an OffsetCommit, each group of a batched OffsetFetch, DescribeGroups or
    DeleteGroups). ``request`` is ours or the decoded kio request (a server answers requests
    it could not turn into ours): the fields read have the same names in both."""
    return _api(api_key, version).error_response(version, request, error, correlation)
