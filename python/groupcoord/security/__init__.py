"""Authorization: Kafka's ACL model (:mod:`.acl`), the authorizer that checks requests
against it (:mod:`.authorizer`), and the ACL admin APIs (:mod:`.acl_apis`). Sans-IO: the
server persists bindings (``groupcoord.storage.acl_store``) and enforces the answers
(``groupcoord.server.access``)."""

from groupcoord.security.acl import (
    ANONYMOUS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.security.authorizer import AclAuthorizer

__all__ = [
    "ANONYMOUS",
    "AclAuthorizer",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
]
