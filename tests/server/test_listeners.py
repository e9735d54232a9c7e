"""server.listeners: listener specs and the principal of a TLS client certificate."""

from __future__ import annotations

import pytest

from groupcoord.server.listeners import Endpoint, parse_listener, tls_principal


@pytest.mark.parametrize(
    ("spec", "endpoint"),
    [
        ("PLAINTEXT://127.0.0.1:9092", Endpoint("PLAINTEXT", "127.0.0.1", 9092)),
        ("SASL_SSL://:9094", Endpoint("SASL_SSL", "0.0.0.0", 9094)),
        ("SSL://[::1]:0", Endpoint("SSL", "::1", 0)),
    ],
)
def test_parse(spec: str, endpoint: Endpoint) -> None:
    assert parse_listener(spec) == endpoint
    assert endpoint.sasl is endpoint.protocol.startswith("SASL")
    assert endpoint.tls is endpoint.protocol.endswith("SSL")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("127.0.0.1:9092", "expected PROTOCOL://HOST:PORT"),
        ("HTTP://h:1", "unknown security protocol 'HTTP'"),
        ("SSL://h:99999", "the port must be a number"),
        ("SSL://h:x", "the port must be a number"),
    ],
)
def test_bad_specs_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listener(spec)


def test_tls_principal_is_the_rfc_2253_subject() -> None:
    cert = {
        "subject": (
            (("countryName", "DE"),),
            (("organizationName", "acme"),),
            (("organizationalUnitName", "payments"),),
            (("commonName", "svc-1"),),
        )
    }
    assert tls_principal(cert) == "User:CN=svc-1,OU=payments,O=acme,C=DE"
    assert tls_principal({}) is None
    assert tls_principal(None) is None
