"""The ACL authorizer: may this principal, from this host, do this operation on this
resource? Sans-IO: it holds the bindings in memory; the server persists them.

Kafka's rules (``StandardAuthorizer`` of Kafka 3.x/4.x):

- A super user may do everything.
- The bindings that apply to a resource are those of its type whose pattern is the
  resource's name (LITERAL), the wildcard ``*`` (LITERAL), or a prefix of the name
  (PREFIXED); of those, the ones whose principal is the caller's or ``User:*`` and whose
  host is the caller's or ``*``.
- A DENY of the operation (or of ALL) wins over any ALLOW.
- An ALLOW of the operation or of ALL allows it; DESCRIBE is also allowed by an ALLOW of
  READ, WRITE, DELETE or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS.
- Otherwise: denied. With ``allow_if_no_acl`` (Kafka's ``allow.everyone.if.no.acl.found``)
  a resource that no binding applies to at all (for any principal) is open to everyone.

The lookup is indexed, not a scan: literal bindings by (type, name); prefixed ones by
(type, prefix) with the set of prefix lengths in use per type, so a check costs one dict
lookup per distinct prefix length, whatever the number of bindings. Answers are memoised
per (principal, host, operation, type, name) until the bindings change, so the check on a
heartbeat is one dict lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from groupcoord.security.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["AclAuthorizer", "Allowed"]

#: may the caller (a principal from a host, bound in) do the operation on the resource
#: (type, name)? What the request handlers are given.
Allowed = Callable[[AclOperation, ResourceType, str], bool]

#: an ALLOW of any of these also allows the key (Kafka's implied operations)
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {
            AclOperation.DESCRIBE,
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.DELETE,
            AclOperation.ALTER,
        }
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset(
        {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
}

#: memoised answers kept before the memo starts over (a bound on memory with many
#: principals or resources; a miss costs one indexed evaluation)
_MEMO_LIMIT = 100_000


class AclAuthorizer:
    """The bindings and the checks over them (see the module documentation)."""

    __slots__ = (
        "_allow_if_no_acl",
        "_bindings",
        "_group_reads",
        "_literal",
        "_memo",
        "_prefix_lengths",
        "_prefixed",
        "super_users",
    )

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        super_users: Iterable[str] = (),
        allow_if_no_acl: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self._allow_if_no_acl = allow_if_no_acl
        #: every binding, in creation order (DescribeAcls answers in it)
        self._bindings: dict[AclBinding, None] = {}
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        #: per resource type, the lengths of its PREFIXED names, longest first
        self._prefix_lengths: dict[ResourceType, list[int]] = {}
        self._memo: dict[tuple[str, str, AclOperation, ResourceType, str], bool] = {}
        #: READ on a group by (principal, client host as the connection has it, group): the
        #: check on every heartbeat, kept apart so it is one small-tuple dict lookup
        self._group_reads: dict[tuple[str, str, str], bool] = {}
        self.add(bindings)

    # ------------------------------------------------------------------ changes

    def add(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        """Add ``bindings`` (already validated); returns those that were new."""
        added = []
        for b in bindings:
            if b in self._bindings:
                continue
            self._bindings[b] = None
            added.append(b)
            if b.pattern_type is PatternType.PREFIXED:
                self._prefixed.setdefault((b.resource_type, b.name), []).append(b)
                lengths = self._prefix_lengths.setdefault(b.resource_type, [])
                if len(b.name) not in lengths:
                    lengths.append(len(b.name))
                    lengths.sort(reverse=True)
            else:
                self._literal.setdefault((b.resource_type, b.name), []).append(b)
        if added:
            self._memo.clear()
            self._group_reads.clear()
        return added

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        """Remove ``bindings`` (those not present are ignored)."""
        changed = False
        for b in bindings:
            if b not in self._bindings:
                continue
            del self._bindings[b]
            changed = True
            index = self._prefixed if b.pattern_type is PatternType.PREFIXED else self._literal
            key = (b.resource_type, b.name)
            entries = index[key]
            entries.remove(b)
            if not entries:
                del index[key]
                if b.pattern_type is PatternType.PREFIXED and not any(
                    t == b.resource_type and len(n) == len(b.name) for t, n in self._prefixed
                ):
                    self._prefix_lengths[b.resource_type].remove(len(b.name))
        if changed:
            self._memo.clear()
            self._group_reads.clear()

    # ------------------------------------------------------------------ queries

    def bindings(self, flt: AclBindingFilter | None = None) -> list[AclBinding]:
        """The bindings ``flt`` selects (all of them without one), in creation order."""
        if flt is None:
            return list(self._bindings)
        return [b for b in self._bindings if flt.matches(b)]

    def __len__(self) -> int:
        return len(self._bindings)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """May ``principal`` connected from ``host`` do ``operation`` on the resource?"""
        key = (principal, host, operation, resource_type, name)
        answer = self._memo.get(key)
        if answer is None:
            answer = self._evaluate(principal, host, operation, resource_type, name)
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = answer
        return answer

    def may_read_group(self, principal: str, client_host: str, group: str) -> bool:
        """READ on ``group`` (what a heartbeat needs); ``client_host`` as the connection
        reports it (``/address``)."""
        key = (principal, client_host, group)
        answer = self._group_reads.get(key)
        if answer is None:
            answer = self.authorize(
                principal, client_host.lstrip("/"), AclOperation.READ, ResourceType.GROUP, group
            )
            if len(self._group_reads) >= _MEMO_LIMIT:
                self._group_reads.clear()
            self._group_reads[key] = answer
        return answer

    def _applicable(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern covers the resource (any principal or host)."""
        found: list[AclBinding] = []
        literal = self._literal
        found += literal.get((resource_type, name), ())
        if name != WILDCARD_RESOURCE:
            found += literal.get((resource_type, WILDCARD_RESOURCE), ())
        prefixed = self._prefixed
        for length in self._prefix_lengths.get(resource_type, ()):
            if length <= len(name):
                found += prefixed.get((resource_type, name[:length]), ())
        return found

    def _evaluate(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if principal in self.super_users:
            return True
        applicable = self._applicable(resource_type, name)
        if not applicable:
            return self._allow_if_no_acl
        allowing = _IMPLIED_BY.get(operation, frozenset((operation,)))
        allowed = False
        for b in applicable:
            if b.principal != principal and b.principal != WILDCARD_PRINCIPAL:
                continue
            if b.host != host and b.host != WILDCARD_HOST:
                continue
            if b.permission is AclPermissionType.DENY:
                if b.operation is operation or b.operation is AclOperation.ALL:
                    return False
            elif b.operation is AclOperation.ALL or b.operation in allowing:
                allowed = True
        return allowed
