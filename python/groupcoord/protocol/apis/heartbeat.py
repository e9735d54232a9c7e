"""Heartbeat (API 12): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    HeartbeatRequest,
    HeartbeatResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return HeartbeatRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
    )


#: (kio class, error code) -> response: a heartbeat answer is one of a few immutable values
_HEARTBEAT_RESPONSES: dict[tuple[type[Any], int], Any] = {}


def write_response(cls: type[Any], r: Any) -> Any:
    key = (cls, r.error_code)
    response = _HEARTBEAT_RESPONSES.get(key)
    if response is None:
        response = _HEARTBEAT_RESPONSES[key] = build(
            cls, throttle_time=ZERO, error_code=r.error_code
        )
    return response


def write_request(cls: type[Any], r: Any) -> Any:
    return build(
        cls,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return HeartbeatResponse(version=v, correlation=corr, error=error_class(r.error_code))


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return HeartbeatResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=HeartbeatRequest,
    response=HeartbeatResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
