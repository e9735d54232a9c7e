"""The ACL model: what a broker refuses to create, and what filters select."""

from __future__ import annotations

import dataclasses

import pytest

from groupcoord.errors import InvalidRequestError
from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    validate_binding,
)

GOOD = AclBinding(
    resource_type=ResourceType.TOPIC,
    name="orders",
    pattern_type=PatternType.LITERAL,
    principal="User:alice",
    host="*",
    operation=AclOperation.READ,
    permission=AclPermissionType.ALLOW,
)


def test_a_concrete_binding_is_valid() -> None:
    assert validate_binding(GOOD) is None


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"resource_type": ResourceType.ANY}, "Invalid resourceType ANY"),
        ({"resource_type": ResourceType.UNKNOWN}, "Invalid resourceType UNKNOWN"),
        ({"pattern_type": PatternType.MATCH}, "Invalid patternType MATCH"),
        ({"pattern_type": PatternType.ANY}, "Invalid patternType ANY"),
        ({"operation": AclOperation.ANY}, "Invalid operation ANY"),
        ({"permission": AclPermissionType.ANY}, "Invalid permissionType ANY"),
        ({"name": ""}, "Resource name should not be empty"),
        (
            {"resource_type": ResourceType.CLUSTER, "name": "c"},
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        ({"principal": "alice"}, "Could not parse principal from `alice`"),
        ({"principal": "User:"}, "Could not parse principal"),
        ({"host": ""}, "Host should not be empty"),
    ],
)
def test_refusals_name_the_field(change: dict[str, object], reason: str) -> None:
    error = validate_binding(dataclasses.replace(GOOD, **change))  # type: ignore[arg-type]
    assert isinstance(error, InvalidRequestError)
    assert reason in str(error)


def test_unknown_codes_from_the_wire_become_unknown_and_are_refused() -> None:
    binding = AclBinding.from_codes(
        resource_type=99,
        name="x",
        pattern_type=3,
        principal="User:a",
        host="*",
        operation=3,
        permission=3,
    )
    assert binding.resource_type is ResourceType.UNKNOWN
    assert validate_binding(binding) is not None


def b(name: str, pattern: PatternType, **kw: object) -> AclBinding:
    return dataclasses.replace(GOOD, name=name, pattern_type=pattern, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("flt", "binding", "expected"),
    [
        (AclBindingFilter(), GOOD, True),
        (AclBindingFilter(resource_type=ResourceType.GROUP), GOOD, False),
        (AclBindingFilter(name="orders"), GOOD, True),
        (AclBindingFilter(name="order"), GOOD, False),
        (AclBindingFilter(pattern_type=PatternType.PREFIXED), GOOD, False),
        (AclBindingFilter(pattern_type=PatternType.LITERAL, name="orders"), GOOD, True),
        (
            AclBindingFilter(pattern_type=PatternType.MATCH, name="orders"),
            b("*", PatternType.LITERAL),
            True,
        ),
        (
            AclBindingFilter(pattern_type=PatternType.MATCH, name="orders"),
            b("ord", PatternType.PREFIXED),
            True,
        ),
        (
            AclBindingFilter(pattern_type=PatternType.MATCH, name="orders"),
            b("ordersx", PatternType.PREFIXED),
            False,
        ),
        (
            AclBindingFilter(pattern_type=PatternType.MATCH, name="orders"),
            b("order", PatternType.LITERAL),
            False,
        ),
        (AclBindingFilter(pattern_type=PatternType.MATCH), b("x", PatternType.PREFIXED), True),
        (AclBindingFilter(principal="User:bob"), GOOD, False),
        (AclBindingFilter(host="10.0.0.1"), GOOD, False),
        (AclBindingFilter(operation=AclOperation.WRITE), GOOD, False),
        (AclBindingFilter(permission=AclPermissionType.DENY), GOOD, False),
        (
            AclBindingFilter(operation=AclOperation.READ, permission=AclPermissionType.ALLOW),
            GOOD,
            True,
        ),
    ],
)
def test_filters(flt: AclBindingFilter, binding: AclBinding, expected: bool) -> None:
    assert flt.matches(binding) is expected


def test_a_filter_with_an_unknown_element_is_invalid() -> None:
    flt = AclBindingFilter.from_codes(
        resource_type=1,
        name=None,
        pattern_type=77,
        principal=None,
        host=None,
        operation=1,
        permission=1,
    )
    error = flt.invalid()
    assert isinstance(error, InvalidRequestError) and "pattern type" in str(error)
    assert AclBindingFilter().invalid() is None
