"""AclAuthorizer: Kafka's rules as a table, and a differential test against a plain scan
over every binding (the rules restated without an index or a memo)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.security.authorizer import AclAuthorizer

Op, Perm, RT, PT = AclOperation, AclPermissionType, ResourceType, PatternType
ALICE, BOB = "User:alice", "User:bob"


def acl(
    name: str = "g",
    *,
    rtype: RT = RT.GROUP,
    pattern: PT = PT.LITERAL,
    principal: str = ALICE,
    host: str = "*",
    op: Op = Op.READ,
    perm: Perm = Perm.ALLOW,
) -> AclBinding:
    return AclBinding(
        resource_type=rtype,
        name=name,
        pattern_type=pattern,
        principal=principal,
        host=host,
        operation=op,
        permission=perm,
    )


def check(
    authorizer: AclAuthorizer,
    op: Op = Op.READ,
    name: str = "g",
    *,
    principal: str = ALICE,
    host: str = "10.0.0.1",
    rtype: RT = RT.GROUP,
) -> bool:
    return authorizer.authorize(principal, host, op, rtype, name)


# (bindings, check arguments, expected)
CASES = [
    ("no ACL: denied by default", [], {}, False),
    ("an ALLOW of the operation", [acl()], {}, True),
    ("another principal's ALLOW", [acl(principal=BOB)], {}, False),
    ("User:* allows everyone", [acl(principal="User:*")], {}, True),
    ("another operation", [acl(op=Op.WRITE)], {}, False),
    ("ALL allows every operation", [acl(op=Op.ALL)], {"op": Op.DELETE}, True),
    ("READ implies DESCRIBE", [acl(op=Op.READ)], {"op": Op.DESCRIBE}, True),
    ("DELETE implies DESCRIBE", [acl(op=Op.DELETE)], {"op": Op.DESCRIBE}, True),
    ("DESCRIBE does not imply READ", [acl(op=Op.DESCRIBE)], {"op": Op.READ}, False),
    (
        "ALTER_CONFIGS implies DESCRIBE_CONFIGS",
        [acl(op=Op.ALTER_CONFIGS)],
        {"op": Op.DESCRIBE_CONFIGS},
        True,
    ),
    ("DENY wins over ALLOW", [acl(), acl(perm=Perm.DENY)], {}, False),
    ("a DENY of ALL denies", [acl(), acl(op=Op.ALL, perm=Perm.DENY)], {}, False),
    (
        "a DENY of READ does not deny DESCRIBE",
        [acl(op=Op.DESCRIBE), acl(op=Op.READ, perm=Perm.DENY)],
        {"op": Op.DESCRIBE},
        True,
    ),
    ("a DENY for another host", [acl(), acl(perm=Perm.DENY, host="10.9.9.9")], {}, True),
    ("an ALLOW for another host", [acl(host="10.9.9.9")], {}, False),
    ("an ALLOW for this host", [acl(host="10.0.0.1")], {}, True),
    ("the wildcard resource", [acl("*")], {"name": "anything"}, True),
    ("a prefix", [acl("orders-", pattern=PT.PREFIXED)], {"name": "orders-eu"}, True),
    ("the whole name as prefix", [acl("orders", pattern=PT.PREFIXED)], {"name": "orders"}, True),
    ("not a prefix", [acl("orders-", pattern=PT.PREFIXED)], {"name": "order"}, False),
    ("a literal is not a prefix", [acl("orders")], {"name": "orders-eu"}, False),
    (
        "a prefixed DENY wins over a literal ALLOW",
        [acl("orders-eu"), acl("orders-", pattern=PT.PREFIXED, perm=Perm.DENY)],
        {"name": "orders-eu"},
        False,
    ),
    ("another resource type", [acl(rtype=RT.TOPIC)], {}, False),
    (
        "literal * of TOPIC does not open groups",
        [acl("*", rtype=RT.TOPIC)],
        {},
        False,
    ),
]


@pytest.mark.parametrize(
    ("bindings", "args", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_kafka_rules(bindings: list[AclBinding], args: dict[str, object], expected: bool) -> None:
    assert check(AclAuthorizer(bindings), **args) is expected  # type: ignore[arg-type]


def test_super_user_may_do_everything_even_when_denied() -> None:
    authorizer = AclAuthorizer([acl(op=Op.ALL, perm=Perm.DENY)], super_users=[ALICE])
    assert check(authorizer, Op.DELETE)
    assert not check(authorizer, principal=BOB)


def test_allow_if_no_acl_opens_only_resources_nobody_named() -> None:
    authorizer = AclAuthorizer([acl("g", principal=BOB)], allow_if_no_acl=True)
    assert check(authorizer, name="other")  # no ACL names it: open
    assert not check(authorizer, name="g")  # bob's ACL names it: alice is not allowed


def test_memo_follows_changes() -> None:
    authorizer = AclAuthorizer()
    assert not check(authorizer)
    authorizer.add([acl()])
    assert check(authorizer)
    authorizer.add([acl(perm=Perm.DENY)])
    assert not check(authorizer)
    authorizer.remove([acl(perm=Perm.DENY)])
    assert check(authorizer)
    authorizer.remove([acl()])
    assert not check(authorizer)
    assert len(authorizer) == 0


def test_removing_a_prefix_forgets_its_length() -> None:
    authorizer = AclAuthorizer([acl("ab", pattern=PT.PREFIXED), acl("cd", pattern=PT.PREFIXED)])
    authorizer.remove([acl("ab", pattern=PT.PREFIXED)])
    assert check(authorizer, name="cdx")
    assert not check(authorizer, name="abx")
    authorizer.remove([acl("cd", pattern=PT.PREFIXED)])
    assert not check(authorizer, name="cdx")


def test_bindings_in_creation_order_and_filtered() -> None:
    a, b, c = acl("x"), acl("y", perm=Perm.DENY), acl("x", pattern=PT.PREFIXED)
    authorizer = AclAuthorizer([a, b, c, a])
    assert authorizer.bindings() == [a, b, c]
    assert authorizer.bindings(AclBindingFilter(permission=Perm.DENY)) == [b]
    assert authorizer.bindings(AclBindingFilter(name="x", pattern_type=PT.MATCH)) == [a, c]
    assert authorizer.bindings(AclBindingFilter(name="xy", pattern_type=PT.MATCH)) == [c]
    assert authorizer.bindings(AclBindingFilter(name="x")) == [a, c]
    assert authorizer.bindings(AclBindingFilter(name="x", pattern_type=PT.LITERAL)) == [a]


# ------------------------------------------------------------------ differential


def oracle(
    bindings: list[AclBinding],
    super_users: frozenset[str],
    allow_if_no_acl: bool,
    principal: str,
    host: str,
    op: Op,
    rtype: RT,
    name: str,
) -> bool:
    """The rules of the authorizer's documentation, as a scan over every binding."""
    if principal in super_users:
        return True
    covering = [
        b
        for b in bindings
        if b.resource_type == rtype
        and (
            (b.pattern_type == PT.LITERAL and b.name in (name, "*"))
            or (b.pattern_type == PT.PREFIXED and name.startswith(b.name))
        )
    ]
    if not covering:
        return allow_if_no_acl
    mine = [b for b in covering if b.principal in (principal, "User:*") and b.host in (host, "*")]
    if any(b.permission == Perm.DENY and b.operation in (op, Op.ALL) for b in mine):
        return False
    implied = {op}
    if op == Op.DESCRIBE:
        implied |= {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}
    if op == Op.DESCRIBE_CONFIGS:
        implied.add(Op.ALTER_CONFIGS)
    return any(
        b.permission == Perm.ALLOW and (b.operation == Op.ALL or b.operation in implied)
        for b in mine
    )


names = st.sampled_from(["", "a", "ab", "abc", "b", "ba", "*"])
principals = st.sampled_from([ALICE, BOB, "User:*"])
hosts = st.sampled_from(["*", "10.0.0.1", "10.0.0.2"])
ops = st.sampled_from(
    [
        Op.ALL,
        Op.READ,
        Op.WRITE,
        Op.DELETE,
        Op.DESCRIBE,
        Op.ALTER,
        Op.ALTER_CONFIGS,
        Op.DESCRIBE_CONFIGS,
    ]
)
rtypes = st.sampled_from([RT.GROUP, RT.TOPIC])
bindings_st = st.builds(
    AclBinding,
    resource_type=rtypes,
    name=names.filter(bool),
    pattern_type=st.sampled_from([PT.LITERAL, PT.PREFIXED]),
    principal=principals,
    host=hosts,
    operation=ops,
    permission=st.sampled_from([Perm.ALLOW, Perm.DENY]),
)
# a step: add some bindings, remove some, or check a request
steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(bindings_st, max_size=3)),
        st.tuples(st.just("remove"), st.integers(0, 10)),
        st.tuples(
            st.just("check"),
            st.tuples(
                st.sampled_from([ALICE, BOB]),
                st.sampled_from(["10.0.0.1", "10.0.0.2"]),
                ops.filter(lambda o: o is not Op.ALL),
                rtypes,
                names.filter(lambda n: n != "*"),
            ),
        ),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    steps=steps,
    super_users=st.frozensets(st.sampled_from([ALICE, BOB]), max_size=1),
    allow_if_no_acl=st.booleans(),
)
def test_matches_a_scan_over_every_binding(
    steps: list[tuple[str, object]], super_users: frozenset[str], allow_if_no_acl: bool
) -> None:
    authorizer = AclAuthorizer(super_users=super_users, allow_if_no_acl=allow_if_no_acl)
    live: list[AclBinding] = []
    for kind, arg in steps:
        if kind == "add":
            assert isinstance(arg, list)
            authorizer.add(arg)
            live += [b for b in dict.fromkeys(arg) if b not in live]
        elif kind == "remove":
            assert isinstance(arg, int)
            gone = live[arg : arg + 2]
            authorizer.remove(gone)
            live = [b for b in live if b not in gone]
        else:
            principal, host, op, rtype, name = arg  # type: ignore[misc]
            expected = oracle(live, super_users, allow_if_no_acl, principal, host, op, rtype, name)
            assert authorizer.authorize(principal, host, op, rtype, name) is expected
        assert authorizer.bindings() == live


def test_the_heartbeat_check_follows_changes_too() -> None:
    authorizer = AclAuthorizer()
    assert not authorizer.may_read_group(ALICE, "/10.0.0.1", "g")
    authorizer.add([acl(host="10.0.0.1")])
    assert authorizer.may_read_group(ALICE, "/10.0.0.1", "g")
    assert not authorizer.may_read_group(ALICE, "/10.0.0.2", "g")
    authorizer.add([acl(perm=Perm.DENY)])
    assert not authorizer.may_read_group(ALICE, "/10.0.0.1", "g")
