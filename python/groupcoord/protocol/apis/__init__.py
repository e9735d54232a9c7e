"""The group APIs, one module each: the mappings of their messages between kio and
:mod:`groupcoord.coordinator.messages`, both directions, and their error responses.

:data:`GROUP_APIS` maps each API key (taken from the request classes, never written as a
literal) to its :class:`~groupcoord.protocol.apis.base.GroupApi`;
:mod:`groupcoord.protocol.group_messages` is the entry point the server and the member use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from groupcoord.protocol.apis import (
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
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
    )
}
