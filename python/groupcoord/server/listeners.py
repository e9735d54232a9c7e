"""Listeners as Kafka names them (``--listener SASL_SSL://0.0.0.0:9094``): the security
protocol of each endpoint, its TLS context, and the principal of a TLS client.

PLAINTEXT: no TLS, no authentication (principal ``User:ANONYMOUS``). SSL: TLS 1.2+ from
``--ssl-certfile``/``--ssl-keyfile``; with ``--ssl-cafile`` clients must present a
certificate signed by it (mTLS) and their principal is ``User:`` + the certificate's
subject as Kafka's default principal builder writes it (RFC 2253: ``CN=alice,O=acme``).
SASL_PLAINTEXT and SASL_SSL: the client authenticates with SASL first (its principal is
``User:<name>``), over plain TCP or TLS.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SECURITY_PROTOCOLS",
    "Endpoint",
    "parse_listener",
    "tls_context",
    "tls_principal",
]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: OpenSSL's attribute names -> the short names of an RFC 2253 distinguished name
_DN_NAMES = {
    "commonName": "CN",
    "organizationalUnitName": "OU",
    "organizationName": "O",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "countryName": "C",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener: ``protocol`` is one of :data:`SECURITY_PROTOCOLS`."""

    protocol: str
    host: str
    port: int

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def __str__(self) -> str:
        return f"{self.protocol}://{self.host}:{self.port}"


def parse_listener(spec: str) -> Endpoint:
    """``PROTOCOL://HOST:PORT`` (HOST may be empty: every address); ValueError naming
    what is wrong."""
    protocol, sep, address = spec.partition("://")
    if not sep:
        raise ValueError(f"listener {spec!r}: expected PROTOCOL://HOST:PORT")
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(
            f"listener {spec!r}: unknown security protocol {protocol!r} "
            f"(one of {', '.join(SECURITY_PROTOCOLS)})"
        )
    host, colon, port_text = address.rpartition(":")
    if not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"listener {spec!r}: the port must be a number in [0, 65535]")
    return Endpoint(protocol, host.strip("[]") or "0.0.0.0", int(port_text))


def tls_context(certfile: str, keyfile: str, cafile: str | None) -> ssl.SSLContext:
    """The server's TLS context (TLS 1.2+); with ``cafile`` client certificates are
    required and checked against it. OSError/SSLError name the file that is wrong."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"cannot load the certificate {certfile} with the key {keyfile}: {exc}"
        ) from exc
    if cafile is not None:
        try:
            context.load_verify_locations(cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot load the CA file {cafile}: {exc}") from exc
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def tls_principal(peer_certificate: Any) -> str | None:
    """``User:<subject DN>`` of a verified client certificate (``getpeercert()``'s
    dict), or ``None`` without one."""
    if not peer_certificate:
        return None
    subject = peer_certificate.get("subject", ())
    # getpeercert lists the RDNs from the most significant (C) down; RFC 2253 (Kafka's
    # X500Principal.getName()) writes them the other way round
    parts = [
        f"{_DN_NAMES.get(name, name)}={value}" for rdn in reversed(subject) for name, value in rdn
    ]
    return "User:" + ",".join(parts) if parts else None
