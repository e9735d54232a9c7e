"""Kafka's ACL model: resource patterns, access control entries, bindings and filters.

The numeric codes are Kafka's own (``org.apache.kafka.common.acl`` and
``org.apache.kafka.common.resource``): they travel as int8 in CreateAcls, DescribeAcls and
DeleteAcls, and they are what the SQLite store keeps. A binding that is created must be
concrete (no ANY, MATCH or UNKNOWN anywhere); a filter may use ANY (and MATCH for the
pattern type) to select bindings. :func:`validate_binding` gives the reason a broker
refuses a binding, as Kafka's ``AclControlManager.validateNewAcl`` does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from groupcoord.errors import InvalidRequestError

__all__ = [
    "ANONYMOUS",
    "CLUSTER_NAME",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourceType",
    "validate_binding",
]

#: the principal of a connection that did not authenticate (a PLAINTEXT or SSL listener
#: without a client certificate), as Kafka names it
ANONYMOUS = "User:ANONYMOUS"
#: matches every principal of an ACL check
WILDCARD_PRINCIPAL = "User:*"
#: matches every host
WILDCARD_HOST = "*"
#: a LITERAL resource name matching every resource of its type
WILDCARD_RESOURCE = "*"
#: the one name of the CLUSTER resource
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    #: filters only: any pattern type
    ANY = 1
    #: filters only: every pattern that would apply to the named resource (literal name,
    #: the wildcard, and prefixes of it)
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _enum_or_unknown(cls: type[enum.IntEnum], code: int) -> enum.IntEnum:
    try:
        return cls(code)
    except ValueError:
        return cls(0)  # UNKNOWN: a code this version does not know


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBinding:
    """One ACL: who (``principal``, ``host``) may or may not (``permission``) do what
    (``operation``) on which resources (``resource_type``, ``pattern_type``, ``name``)."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        # Kafka's form: (pattern=ResourcePattern(...), entry=(principal=..., ...))
        return (
            f"(pattern=ResourcePattern(resourceType={self.resource_type.name}, "
            f"name={self.name}, patternType={self.pattern_type.name}), "
            f"entry=(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission.name}))"
        )

    @classmethod
    def from_codes(
        cls,
        *,
        resource_type: int,
        name: str,
        pattern_type: int,
        principal: str,
        host: str,
        operation: int,
        permission: int,
    ) -> AclBinding:
        """A binding from the wire's int8 codes (an unknown code becomes UNKNOWN, which
        :func:`validate_binding` refuses)."""
        return cls(
            resource_type=_enum_or_unknown(ResourceType, resource_type),  # type: ignore[arg-type]
            name=name,
            pattern_type=_enum_or_unknown(PatternType, pattern_type),  # type: ignore[arg-type]
            principal=principal,
            host=host,
            operation=_enum_or_unknown(AclOperation, operation),  # type: ignore[arg-type]
            permission=_enum_or_unknown(AclPermissionType, permission),  # type: ignore[arg-type]
        )


def _parse_principal(principal: str) -> tuple[str, str] | None:
    kind, sep, name = principal.partition(":")
    if not sep or not kind or not name:
        return None
    return kind, name


def validate_binding(binding: AclBinding) -> InvalidRequestError | None:
    """Why a broker refuses to create ``binding`` (Kafka's INVALID_REQUEST and message),
    or ``None``."""
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return InvalidRequestError(f"Invalid resourceType {binding.resource_type.name}")
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return InvalidRequestError(f"Invalid patternType {binding.pattern_type.name}")
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return InvalidRequestError(f"Invalid operation {binding.operation.name}")
    if binding.permission in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
        return InvalidRequestError(f"Invalid permissionType {binding.permission.name}")
    if not binding.name:
        return InvalidRequestError("Resource name should not be empty")
    if binding.resource_type is ResourceType.CLUSTER and binding.name != CLUSTER_NAME:
        return InvalidRequestError(
            f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )
    if _parse_principal(binding.principal) is None:
        return InvalidRequestError(
            f"Could not parse principal from `{binding.principal}` (no colon is found "
            "or the type or name is empty)"
        )
    if not binding.host:
        return InvalidRequestError("Host should not be empty (use * for every host)")
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AclBindingFilter:
    """Selects bindings (DescribeAcls, DeleteAcls). ``None`` for ``name``, ``principal``
    or ``host`` matches anything; ANY for an enum matches anything; pattern type MATCH
    selects every binding that applies to the resource ``name``."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermissionType = AclPermissionType.ANY

    @classmethod
    def from_codes(
        cls,
        *,
        resource_type: int,
        name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> AclBindingFilter:
        return cls(
            resource_type=_enum_or_unknown(ResourceType, resource_type),  # type: ignore[arg-type]
            name=name,
            pattern_type=_enum_or_unknown(PatternType, pattern_type),  # type: ignore[arg-type]
            principal=principal,
            host=host,
            operation=_enum_or_unknown(AclOperation, operation),  # type: ignore[arg-type]
            permission=_enum_or_unknown(AclPermissionType, permission),  # type: ignore[arg-type]
        )

    def invalid(self) -> InvalidRequestError | None:
        """A filter with an UNKNOWN element matches nothing sensible: Kafka refuses it."""
        unknown = [
            field
            for field, value in (
                ("resource type", self.resource_type),
                ("pattern type", self.pattern_type),
                ("operation", self.operation),
                ("permission type", self.permission),
            )
            if value == 0
        ]
        if unknown:
            return InvalidRequestError(f"The filter has an unknown {', '.join(unknown)}")
        return None

    def matches(self, binding: AclBinding) -> bool:
        return self._matches_pattern(binding) and self._matches_entry(binding)

    def _matches_pattern(self, b: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and self.resource_type is not (
            b.resource_type
        ):
            return False
        pattern = self.pattern_type
        if pattern is PatternType.ANY:
            return self.name is None or self.name == b.name
        if pattern is PatternType.MATCH:
            if self.name is None:
                return True
            if b.pattern_type is PatternType.LITERAL:
                return b.name == self.name or b.name == WILDCARD_RESOURCE
            return self.name.startswith(b.name)
        return pattern is b.pattern_type and (self.name is None or self.name == b.name)

    def _matches_entry(self, b: AclBinding) -> bool:
        return (
            (self.principal is None or self.principal == b.principal)
            and (self.host is None or self.host == b.host)
            and (self.operation is AclOperation.ANY or self.operation is b.operation)
            and (self.permission is AclPermissionType.ANY or self.permission is b.permission)
        )
