"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), v1-v3: kio request in, the
response and the change to persist out. Sans-IO: the server writes :attr:`AclChange.add`
and :attr:`AclChange.remove` to its store, then applies them to the authorizer, then
sends the response (:func:`failed` replaces it when the write fails, so nothing is
acknowledged that is not on disk).

As Kafka answers: without an authorizer every request gets SECURITY_DISABLED; the caller
needs ALTER on the cluster to create or delete (else CLUSTER_AUTHORIZATION_FAILED on each
creation or filter) and DESCRIBE on the cluster to describe; a binding Kafka would refuse
gets INVALID_REQUEST with the reason, the others in the request are still created.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType
from kio.static.primitive import i8

from groupcoord.errors import (
    ClusterAuthorizationFailedError,
    KafkaError,
    SecurityDisabledError,
    UnknownServerError,
)
from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    validate_binding,
)
from groupcoord.security.authorizer import AclAuthorizer

__all__ = [
    "ACL_API_VERSIONS",
    "API_CREATE_ACLS",
    "API_DELETE_ACLS",
    "API_DESCRIBE_ACLS",
    "AclChange",
    "answer",
    "failed",
]

API_DESCRIBE_ACLS = 29
API_CREATE_ACLS = 30
API_DELETE_ACLS = 31
#: the versions served (kio has no v0 schemas; Kafka 4 dropped v0 too)
ACL_API_VERSIONS: dict[int, tuple[int, int]] = {
    API_DESCRIBE_ACLS: (1, 3),
    API_CREATE_ACLS: (1, 3),
    API_DELETE_ACLS: (1, 3),
}

_NO_THROTTLE = datetime.timedelta(0)

#: may the caller do this operation on the cluster?
ClusterCheck = Callable[[AclOperation], bool]


@dataclass(slots=True)
class AclChange:
    """What a request changes: bindings to store and add, bindings to delete."""

    add: list[AclBinding] = field(default_factory=list)
    remove: list[AclBinding] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.add or self.remove)


def _module(request: Any) -> ModuleType:
    return load_payload_module(request.__api_key__, request.__version__, EntityType.response)


def _code(error: KafkaError | None) -> ErrorCode:
    return ErrorCode(0 if error is None else error.code)


def _message(error: KafkaError | None) -> str | None:
    return None if error is None else (str(error) or type(error).__name__)


def answer(
    api_key: int,
    request: Any,
    authorizer: AclAuthorizer | None,
    allowed_on_cluster: ClusterCheck,
) -> tuple[object, AclChange]:
    """The kio response to an ACL request and what it changes (nothing until the shell
    stores and applies it)."""
    if api_key == API_CREATE_ACLS:
        return _create(request, authorizer, allowed_on_cluster)
    if api_key == API_DESCRIBE_ACLS:
        return _describe(request, authorizer, allowed_on_cluster), AclChange()
    if api_key == API_DELETE_ACLS:
        return _delete(request, authorizer, allowed_on_cluster)
    raise ValueError(f"api key {api_key} is not an ACL API")


def failed(api_key: int, request: Any, why: str) -> object:
    """The response when the change could not be stored: UNKNOWN_SERVER_ERROR everywhere,
    with the reason (nothing was applied)."""
    error = UnknownServerError(f"the ACL store failed: {why}")
    mod = _module(request)
    if api_key == API_CREATE_ACLS:
        return _create_response(mod, [error] * len(request.creations))
    assert api_key == API_DELETE_ACLS
    return mod.DeleteAclsResponse(
        throttle_time=_NO_THROTTLE,
        filter_results=tuple(
            mod.DeleteAclsFilterResult(
                error_code=_code(error), error_message=_message(error), matching_acls=()
            )
            for _ in request.filters
        ),
    )


# ------------------------------------------------------------------ CreateAcls


def _create_response(mod: ModuleType, errors: list[KafkaError | None]) -> object:
    return mod.CreateAclsResponse(
        throttle_time=_NO_THROTTLE,
        results=tuple(
            mod.AclCreationResult(error_code=_code(e), error_message=_message(e)) for e in errors
        ),
    )


def _create(
    request: Any, authorizer: AclAuthorizer | None, allowed_on_cluster: ClusterCheck
) -> tuple[object, AclChange]:
    mod = _module(request)
    creations = request.creations
    if authorizer is None:
        disabled = SecurityDisabledError("No Authorizer is configured")
        return _create_response(mod, [disabled] * len(creations)), AclChange()
    if not allowed_on_cluster(AclOperation.ALTER):
        denied = ClusterAuthorizationFailedError("needs ALTER on the cluster")
        return _create_response(mod, [denied] * len(creations)), AclChange()
    errors: list[KafkaError | None] = []
    change = AclChange()
    for c in creations:
        binding = AclBinding.from_codes(
            resource_type=c.resource_type,
            name=c.resource_name,
            pattern_type=c.resource_pattern_type,
            principal=c.principal,
            host=c.host,
            operation=c.operation,
            permission=c.permission_type,
        )
        error = validate_binding(binding)
        errors.append(error)
        if error is None and binding not in change.add:
            change.add.append(binding)
    return _create_response(mod, errors), change


# ------------------------------------------------------------------ DescribeAcls


def _filter(f: Any) -> AclBindingFilter:
    return AclBindingFilter.from_codes(
        resource_type=f.resource_type_filter,
        name=f.resource_name_filter,
        pattern_type=f.pattern_type_filter,
        principal=f.principal_filter,
        host=f.host_filter,
        operation=f.operation,
        permission=f.permission_type,
    )


def _describe(
    request: Any, authorizer: AclAuthorizer | None, allowed_on_cluster: ClusterCheck
) -> object:
    mod = _module(request)

    def response(error: KafkaError | None, found: list[AclBinding]) -> object:
        # one resource entry per pattern, its bindings in creation order
        by_pattern: dict[tuple[int, str, int], list[AclBinding]] = {}
        for b in found:
            by_pattern.setdefault((b.resource_type, b.name, b.pattern_type), []).append(b)
        return mod.DescribeAclsResponse(
            throttle_time=_NO_THROTTLE,
            error_code=_code(error),
            error_message=_message(error),
            resources=tuple(
                mod.DescribeAclsResource(
                    resource_type=i8(rtype),
                    resource_name=name,
                    pattern_type=i8(ptype),
                    acls=tuple(
                        mod.AclDescription(
                            principal=b.principal,
                            host=b.host,
                            operation=i8(b.operation),
                            permission_type=i8(b.permission),
                        )
                        for b in bindings
                    ),
                )
                for (rtype, name, ptype), bindings in by_pattern.items()
            ),
        )

    if authorizer is None:
        return response(SecurityDisabledError("No Authorizer is configured"), [])
    if not allowed_on_cluster(AclOperation.DESCRIBE):
        return response(ClusterAuthorizationFailedError("needs DESCRIBE on the cluster"), [])
    flt = _filter(request)
    invalid = flt.invalid()
    if invalid is not None:
        return response(invalid, [])
    return response(None, authorizer.bindings(flt))


# ------------------------------------------------------------------ DeleteAcls


def _delete(
    request: Any, authorizer: AclAuthorizer | None, allowed_on_cluster: ClusterCheck
) -> tuple[object, AclChange]:
    mod = _module(request)
    change = AclChange()

    def result(error: KafkaError | None, matched: list[AclBinding]) -> object:
        return mod.DeleteAclsFilterResult(
            error_code=_code(error),
            error_message=_message(error),
            matching_acls=tuple(
                mod.DeleteAclsMatchingAcl(
                    error_code=ErrorCode(0),
                    error_message=None,
                    resource_type=i8(b.resource_type),
                    resource_name=b.name,
                    pattern_type=i8(b.pattern_type),
                    principal=b.principal,
                    host=b.host,
                    operation=i8(b.operation),
                    permission_type=i8(b.permission),
                )
                for b in matched
            ),
        )

    results = []
    if authorizer is None:
        error: KafkaError = SecurityDisabledError("No Authorizer is configured")
        results = [result(error, []) for _ in request.filters]
    elif not allowed_on_cluster(AclOperation.ALTER):
        error = ClusterAuthorizationFailedError("needs ALTER on the cluster")
        results = [result(error, []) for _ in request.filters]
    else:
        gone: set[AclBinding] = set()
        for f in request.filters:
            flt = _filter(f)
            invalid = flt.invalid()
            if invalid is not None:
                results.append(result(invalid, []))
                continue
            # a binding two filters match is reported (and deleted) by the first
            matched = [b for b in authorizer.bindings(flt) if b not in gone]
            gone.update(matched)
            change.remove += matched
            results.append(result(None, matched))
    return (
        mod.DeleteAclsResponse(throttle_time=_NO_THROTTLE, filter_results=tuple(results)),
        change,
    )
