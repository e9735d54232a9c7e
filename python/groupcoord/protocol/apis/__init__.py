"""The group APIs, one module each: the mappings of their messages between kio and
:mod:`groupcoord.coordinator.messages`, both directions, and their error responses.

Every API module has the same five functions, gathered in its ``API``
(:class:`~groupcoord.protocol.apis.base.GroupApi`):

- ``read_request``: a decoded kio request -> ours (server side);
- ``write_response``: our response -> the kio response class given (server side);
- ``write_request``: our request -> the kio request class given (client side);
- ``read_response``: a decoded kio response -> ours (client side);
- ``error_response``: the response to a request (ours or kio's: they share the field names
  it reads) carrying ``error`` everywhere it can be.

:data:`GROUP_APIS` maps each API key (taken from the request classes, never written as a
literal) to its :class:`~groupcoord.protocol.apis.base.GroupApi`;
:mod:`groupcoord.protocol.group_messages` is the entry point the server and the member use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from groupcoord.protocol.apis import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from groupcoord.protocol.apis.base import GroupApi

__all__ = ["GROUP_APIS", "GroupApi"]

GROUP_APIS: Final[Mapping[int, GroupApi]] = {
    module.API.api_key: module.API
    for module in (
        join_group,
        sync_group,
        heartbeat,
        leave_group,
        offset_commit,
        offset_fetch,
        describe_groups,
        list_groups,
        delete_groups,
        offset_delete,
        consumer_group_heartbeat,
        consumer_group_describe,
    )
}
