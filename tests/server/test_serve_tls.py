"""``groupcoord serve`` with SSL and SASL_SSL listeners: TLS 1.2+, client certificates
naming the principal (mTLS), SCRAM over TLS. Certificates are made here with
``cryptography``: a CA, the server's (for 127.0.0.1) and two clients'."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from serve_process import ServerProcess


def _name(**parts: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "O": NameOID.ORGANIZATION_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in parts.items()])


def _issue(
    directory: Path,
    stem: str,
    subject: x509.Name,
    issuer: tuple[x509.Name, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
) -> tuple[x509.Name, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    issuer_name, issuer_key = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
    cert = builder.sign(issuer_key, hashes.SHA256())
    (directory / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (directory / f"{stem}.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return subject, key


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("certs")
    ca = _issue(d, "ca", _name(CN="test-ca"), None, ca=True)
    _issue(d, "server", _name(CN="127.0.0.1"), ca)
    # the usual order, most significant first: RFC 2253 (Kafka's principal) reverses it
    _issue(d, "alice", _name(O="acme", CN="alice"), ca)
    _issue(d, "bob", _name(O="acme", CN="bob"), ca)
    return d


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


def tls_flags(certs: Path) -> tuple[str, ...]:
    return (
        "--ssl-certfile", str(certs / "server.pem"), "--ssl-keyfile", str(certs / "server.key"),
    )  # fmt: skip


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
