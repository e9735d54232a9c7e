"""The ACL admin APIs' shell: answer, store the change, apply it, respond.

The store write happens on the event loop, in the request's turn: ACL changes are rare
admin operations (the group APIs' writes go through the writer thread instead), and the
response must not exist before the change is on disk. A failed write applies nothing and
answers UNKNOWN_SERVER_ERROR with the store's reason.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.coordinator.offsets import StoreError
from groupcoord.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from groupcoord.security.acl_apis import answer, failed
from groupcoord.security.authorizer import AclAuthorizer
from groupcoord.storage.acl_store import AclStore

__all__ = ["AclAdmin"]

log = logging.getLogger("groupcoord.server")


class AclAdmin:
    """The server's authorizer (``None``: none configured) and where its bindings live."""

    __slots__ = ("authorizer", "store")

    def __init__(self, authorizer: AclAuthorizer | None, store: AclStore | None) -> None:
        self.authorizer = authorizer
        self.store = store

    def handle(self, api_key: int, request: Any, principal: str, host: str) -> object:
        """The kio response to CreateAcls / DescribeAcls / DeleteAcls from ``principal``."""
        authorizer = self.authorizer

        def on_cluster(operation: AclOperation) -> bool:
            assert authorizer is not None
            return authorizer.authorize(
                principal, host, operation, ResourceType.CLUSTER, CLUSTER_NAME
            )

        response, change = answer(api_key, request, authorizer, on_cluster)
        if not change:
            return response
        assert authorizer is not None and self.store is not None
        try:
            self.store.change(change.add, change.remove)
        except StoreError as e:
            log.error(
                "ACL change by %s not stored: %s", principal, e, extra={"principal": principal}
            )
            return failed(api_key, request, str(e))
        authorizer.remove(change.remove)
        added = authorizer.add(change.add)
        for b in added:
            log.info("ACL added by %s: %s", principal, b, extra={"principal": principal})
        for b in change.remove:
            log.info("ACL removed by %s: %s", principal, b, extra={"principal": principal})
        return response
