"""Certificates for TLS tests, made with ``cryptography``: a CA, the server's (for
127.0.0.1) and clients' (subjects O=acme, CN=NAME). ``make_certs(directory)`` writes
``ca.pem``, ``server.pem``/``server.key`` and ``NAME.pem``/``NAME.key`` per client."""

from __future__ import annotations

import datetime
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


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


def make_certs(directory: Path, clients: tuple[str, ...] = ("alice", "bob")) -> Path:
    ca = _issue(directory, "ca", _name(CN="test-ca"), None, ca=True)
    _issue(directory, "server", _name(CN="127.0.0.1"), ca)
    for who in clients:
        # the usual order, most significant first: RFC 2253 (Kafka's principal) reverses it
        _issue(directory, who, _name(O="acme", CN=who), ca)
    return directory


def tls_flags(certs: Path) -> tuple[str, ...]:
    """``groupcoord serve``'s flags for the server certificate in ``certs``."""
    return (
        "--ssl-certfile", str(certs / "server.pem"), "--ssl-keyfile", str(certs / "server.key"),
    )  # fmt: skip
