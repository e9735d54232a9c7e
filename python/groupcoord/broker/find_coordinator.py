"""FindCoordinator (API 10, v0-v6): this single node coordinates every group and
transactional id.

v0-v3 ask for one key and answer one coordinator; v4+ batch keys and answer one entry per
key. Key types are Kafka's ``CoordinatorType``: 0 GROUP and 1 TRANSACTION map to this
node; 2 SHARE (KIP-932 share groups, not served here) and unknown types get
INVALID_REQUEST, as Kafka answers a type it cannot resolve.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any, Final

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType

from groupcoord.broker.data_apis import BrokerInfo
from groupcoord.errors import KafkaError
from groupcoord.protocol.wire import kio_versions_within

__all__ = [
    "FIND_COORDINATOR_KEY",
    "FIND_COORDINATOR_VERSIONS",
    "GROUP_KEY_TYPE",
    "TRANSACTION_KEY_TYPE",
    "find_coordinator",
]

FIND_COORDINATOR_KEY: Final = 10
#: v0-v6 (v4+ batched)
FIND_COORDINATOR_VERSIONS: Final = kio_versions_within(FIND_COORDINATOR_KEY, 0, 6)

GROUP_KEY_TYPE: Final = 0
TRANSACTION_KEY_TYPE: Final = 1
_SERVED_KEY_TYPES: Final = frozenset({GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE})
_BATCHED_SINCE: Final = 4


#: why a key may not be looked up by this caller (authorization), or ``None``
Refusal = Callable[[int, str], KafkaError | None]


def _answer(
    key_type: int, key: str, broker: BrokerInfo, refuse: Refusal | None
) -> tuple[ErrorCode, str | None, int, str, int]:
    if key_type in _SERVED_KEY_TYPES:
        refused = None if refuse is None else refuse(key_type, key)
        if refused is not None:
            return ErrorCode(refused.code), str(refused) or None, -1, "", -1
        # Kafka's success message is Errors.NONE.message(), "NONE" (v4+ sets "" per key)
        return ErrorCode.none, "NONE", broker.node_id, broker.host, broker.port
    # Kafka answers an unresolvable coordinator with node -1, host "" and port -1
    return ErrorCode.invalid_request, f"key type {key_type} is not served", -1, "", -1


def find_coordinator(request: Any, broker: BrokerInfo, refuse: Refusal | None = None) -> Any:
    """The FindCoordinator response (same version) to a kio FindCoordinator request;
    ``refuse(key_type, key)`` names the error of a key the caller may not look up."""
    version = request.__version__
    module = load_payload_module(FIND_COORDINATOR_KEY, version, EntityType.response)
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    no_throttle = datetime.timedelta(0)
    if version >= _BATCHED_SINCE:
        coordinators = []
        for key in request.coordinator_keys:
            error, message, node_id, host, port = _answer(key_type, key, broker, refuse)
            coordinators.append(
                module.Coordinator(
                    key=key,
                    node_id=node_id,
                    host=host,
                    port=port,
                    error_code=error,
                    error_message="" if error == ErrorCode.none else message,
                )
            )
        return module.FindCoordinatorResponse(
            throttle_time=no_throttle, coordinators=tuple(coordinators)
        )
    error, message, node_id, host, port = _answer(key_type, request.key, broker, refuse)
    fields: dict[str, Any] = {
        "error_code": error,
        "node_id": node_id,
        "host": host,
        "port": port,
    }
    if version >= 1:
        fields["throttle_time"] = no_throttle
        fields["error_message"] = message
    return module.FindCoordinatorResponse(**fields)
