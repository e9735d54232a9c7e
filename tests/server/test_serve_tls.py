"""``groupcoord serve`` with SSL and SASL_SSL listeners: TLS 1.2+, client certificates
naming the principal (mTLS), SCRAM over TLS. Certificates: :mod:`tls_certs` (a CA, the
server's for 127.0.0.1, alice's and bob's)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from serve_process import ServerProcess
from tls_certs import make_certs, tls_flags


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certs(tmp_path_factory.mktemp("certs"))


def tls_client(server: ServerProcess, certs: Path, who: str | None, **extra: str) -> AdminClient:
    settings = {
        "bootstrap.servers": server.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(certs / "ca.pem"),
        **extra,
    }
    if who is not None:
        settings["ssl.certificate.location"] = str(certs / f"{who}.pem")
        settings["ssl.key.location"] = str(certs / f"{who}.key")
    return AdminClient(settings)


def test_mtls_names_the_principal(serve_factory: Callable[..., ServerProcess], certs: Path) -> None:
    server = serve_factory(
        "--listener", "SSL://127.0.0.1:0", *tls_flags(certs), "--ssl-cafile",
        str(certs / "ca.pem"), "--authorizer", "acl", "--super-user", "User:CN=alice,O=acme",
        "--topic", "orders:3",
    )  # fmt: skip
    # alice's certificate makes her the super user: she sees the topic
    alice = tls_client(server, certs, "alice")
    assert set(alice.list_topics(timeout=20).topics) == {"orders"}
    # bob is someone else, with no ACL: Metadata shows him nothing
    bob = tls_client(server, certs, "bob")
    assert set(bob.list_topics(timeout=20).topics) == set()
    # no certificate: the TLS handshake fails
    anonymous = tls_client(server, certs, None)
    with pytest.raises(Exception, match=r"Timed out|SSL|transport|Local"):
        anonymous.list_topics(timeout=5)


def test_scram_over_tls(
    serve_factory: Callable[..., ServerProcess], certs: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "groupcoord", "users", "add", "carol", "--password", "pw-carol",
         "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    server = serve_factory(
        "--data-dir", str(data), "--listener", "SASL_SSL://127.0.0.1:0", *tls_flags(certs),
        "--topic", "orders:1",
    )  # fmt: skip
    carol = tls_client(
        server,
        certs,
        None,
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "carol",
            "sasl.password": "pw-carol",
        },
    )
    assert set(carol.list_topics(timeout=20).topics) == {"orders"}
    shutil.rmtree(data)
