"""pytest-benchmark: what security costs (issue 15): the ACL check per request with 10,000
ACLs (target: no measurable change in heartbeat throughput), and SASL logins per second.

- ``test_bench_acl_check``: ``AclAuthorizer.authorize`` with 10,000 bindings (literal and
  prefixed, many principals, DENYs among them): ``memo`` is a repeated check (what every
  heartbeat of a member does), ``evaluate`` the indexed evaluation of a check not seen
  before, ``scan`` the same rules as a loop over every binding (what an unindexed
  authorizer would do), for the ratio.
- ``test_bench_wire_heartbeats_acl``: ``bench_wire``'s heartbeat load (5,000 members over
  50 connections with ``--benchmark-only`` / ``GROUPCOORD_BENCH_SCALE=full``; a smoke
  size otherwise) against ``groupcoord serve`` without an authorizer, then with
  ``--authorizer acl`` and the 10,000 bindings on disk, in the same run.
- ``test_bench_sasl_login``: the server's side of one SASL login (``SaslSession``
  handshake and every ``authenticate`` step; the client's messages are made outside the
  timing by kafka-python's SCRAM client): SCRAM-SHA-512 and SCRAM-SHA-256 (the server
  only does HMACs with the stored keys) and PLAIN (the server runs PBKDF2 with the stored
  salt and 4,096 iterations: the cost that makes guessing slow).
"""

from __future__ import annotations

import itertools
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from bench_wire import _full, heartbeat_args, measure_heartbeats
from groupcoord.security import (
    AclAuthorizer,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.storage.acl_store import SqliteAclStore

N_ACLS = 10_000
CALLER = "User:ANONYMOUS"


def ten_thousand_acls() -> list[AclBinding]:
    """10,000 bindings: per principal, READ on its groups (literal) and a prefix of its
    topics, a few DENYs; and the caller's own grant on the heartbeat groups (prefixed
    ``hb-``, bench_wire's group names) among them."""
    out = [
        AclBinding(
            resource_type=ResourceType.GROUP,
            name="hb-",
            pattern_type=PatternType.PREFIXED,
            principal=CALLER,
            host="*",
            operation=AclOperation.READ,
            permission=AclPermissionType.ALLOW,
        )
    ]
    for i in itertools.count():
        if len(out) >= N_ACLS:
            break
        principal = f"User:app-{i % 500}"
        kind = i % 4
        out.append(
            AclBinding(
                resource_type=ResourceType.TOPIC if kind == 1 else ResourceType.GROUP,
                name=f"hb-{i}" if kind != 1 else f"events-{i % 97}-",
                pattern_type=PatternType.PREFIXED if kind == 1 else PatternType.LITERAL,
                principal=principal,
                host="*" if kind != 3 else f"10.0.{i % 250}.{i % 7}",
                operation=AclOperation.READ if kind != 2 else AclOperation.DESCRIBE,
                permission=AclPermissionType.DENY if kind == 3 else AclPermissionType.ALLOW,
            )
        )
    return out[:N_ACLS]


def scan(bindings: list[AclBinding], principal: str, host: str, name: str) -> bool:
    """The authorizer's rules for a READ on a group, as a loop over every binding."""
    allowed = False
    for b in bindings:
        if b.resource_type is not ResourceType.GROUP:
            continue
        if b.pattern_type is PatternType.LITERAL:
            if b.name != name and b.name != "*":
                continue
        elif not name.startswith(b.name):
            continue
        if b.principal not in (principal, "User:*") or b.host not in (host, "*"):
            continue
        if b.permission is AclPermissionType.DENY:
            if b.operation in (AclOperation.READ, AclOperation.ALL):
                return False
        elif b.operation in (AclOperation.READ, AclOperation.ALL):
            allowed = True
    return allowed


@pytest.mark.parametrize("how", ["memo", "evaluate", "scan"])
def test_bench_acl_check(benchmark: Any, how: str) -> None:
    bindings = ten_thousand_acls()
    authorizer = AclAuthorizer(bindings)
    groups = [f"hb-{i}" for i in range(1000)]
    checks = [(CALLER, "127.0.0.1", g) for g in groups]
    for principal, host, group in checks:  # the two ways agree
        expected = scan(bindings, principal, host, group)
        assert (
            authorizer.authorize(principal, host, AclOperation.READ, ResourceType.GROUP, group)
            is expected
        )
    read, group_type = AclOperation.READ, ResourceType.GROUP
    if how == "memo":

        def run() -> None:
            authorize = authorizer.authorize
            for principal, host, group in checks:
                authorize(principal, host, read, group_type, group)

    elif how == "evaluate":

        def run() -> None:
            evaluate = authorizer._evaluate
            for principal, host, group in checks:
                evaluate(principal, host, read, group_type, group)

    else:
        some = checks[:20]  # a scan is slow: fewer checks, scaled below

        def run() -> None:
            for principal, host, group in some:
                scan(bindings, principal, host, group)

    benchmark(run)
    if benchmark.stats is None:  # --benchmark-disable (the CI smoke run): ran once, untimed
        return
    per_check = len(checks) if how != "scan" else 20
    ns = benchmark.stats.stats.median / per_check * 1e9
    benchmark.extra_info.update({"acls": N_ACLS, "ns_per_check": ns})
    print(f"\nACL check with {N_ACLS:,} ACLs, {how}: {ns:,.0f} ns per check")


def test_bench_wire_heartbeats_acl(benchmark: Any, request: Any) -> None:
    args = heartbeat_args(_full(request.config))
    results: dict[str, dict[str, Any]] = {}
    # both servers on a data directory, so the authorizer is the only difference
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryDirectory() as plain:
        with SqliteAclStore(Path(data) / "groupcoord.db") as store:
            store.change(ten_thousand_acls(), [])
        results["no authorizer"] = measure_heartbeats(
            args, ("--data-dir", plain), benchmark=benchmark
        )
        results["10,000 ACLs"] = measure_heartbeats(
            args, ("--data-dir", data), ("--authorizer", "acl")
        )
    for label, result in results.items():
        assert result["errors"] == 0, (label, result)
    benchmark.extra_info.update(
        {k: {"per_server_cpu_s": v["per_cpu"], "p99_ms": v["p99_ms"]} for k, v in results.items()}
    )
    base, acl = results["no authorizer"], results["10,000 ACLs"]
    print(
        f"\nwire heartbeats, {args['members']} members: no authorizer "
        f"{base['per_cpu']:,.0f} per server CPU-s (p99 {base['p99_ms']:.1f} ms); "
        f"10,000 ACLs {acl['per_cpu']:,.0f} (p99 {acl['p99_ms']:.1f} ms): "
        f"ratio {acl['per_cpu'] / base['per_cpu']:.2f}"
    )


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_bench_sasl_login(benchmark: Any, mechanism: str) -> None:
    from kafka.net.sasl.scram import ScramClient

    from groupcoord.security.sasl import SaslSession
    from groupcoord.security.scram import make_credential
    from groupcoord.storage.credential_store import MemoryCredentialStore

    store = MemoryCredentialStore()
    hash_name = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    store.put("alice", make_credential(hash_name, "s3cret"))
    server_seconds: list[float] = []

    def login() -> None:
        session = SaslSession([mechanism], store.lookup)
        if mechanism == "PLAIN":
            start = time.perf_counter()
            assert session.handshake(mechanism) is None
            assert session.authenticate(b"\0alice\0s3cret").principal == "User:alice"
            server_seconds.append(time.perf_counter() - start)
            return
        client = ScramClient("alice", "s3cret", mechanism)
        first = client.first_message()
        start = time.perf_counter()
        assert session.handshake(mechanism) is None
        step = session.authenticate(first)
        spent = time.perf_counter() - start
        client.process_server_first_message(step.token)  # the client's PBKDF2: not timed
        final = client.final_message()
        start = time.perf_counter()
        assert session.authenticate(final).principal == "User:alice"
        server_seconds.append(spent + time.perf_counter() - start)

    benchmark.pedantic(login, rounds=200, iterations=1, warmup_rounds=5)
    server_seconds.sort()
    median = server_seconds[len(server_seconds) // 2]
    benchmark.extra_info.update({"server_us_per_login": median * 1e6, "logins_per_s": 1 / median})
    print(
        f"\nSASL {mechanism}: server side {median * 1e6:,.0f} µs per login "
        f"({1 / median:,.0f} logins per second per core)"
    )
