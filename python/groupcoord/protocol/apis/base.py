"""What every group API module provides (:class:`GroupApi`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse
from groupcoord.errors import KafkaError

__all__ = ["GroupApi"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupApi:
    """One group API: its request class (whose ``API_KEY`` and versions are the API's) and
    the functions that map its messages between kio's classes and ours."""

    request: type[CoordinatorRequest]
    response: type[CoordinatorResponse]
    #: server side: (kio request, version, correlation, client id, client host) -> ours
    read_request: Callable[[Any, int, object, str, str], CoordinatorRequest]
    #: server side: (kio response class, our response) -> kio response
    write_response: Callable[[type[Any], Any], Any]
    #: client side: (kio request class, our request) -> kio request
    write_request: Callable[[type[Any], Any], Any]
    #: client side: (kio response, version, correlation) -> ours
    read_response: Callable[[Any, int, object], CoordinatorResponse]
    #: (version, request (ours or kio's), error, correlation) -> our response carrying the
    #: error everywhere it can be
    error_response: Callable[[int, Any, type[KafkaError], object], CoordinatorResponse]

    @property
    def api_key(self) -> int:
        return self.request.API_KEY
