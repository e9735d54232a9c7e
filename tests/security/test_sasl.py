"""SCRAM and SASL sessions: RFC 7677's test vector, kafka-python's own SCRAM client as an
independent peer, PLAIN, and the session's state rules."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.net.sasl.scram import ScramClient

from groupcoord.errors import (
    IllegalSaslStateError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from groupcoord.security.sasl import SaslSession, SaslState
from groupcoord.security.scram import (
    ScramCredential,
    ScramError,
    ScramServer,
    make_credential,
    password_matches,
)
from groupcoord.storage.credential_store import MemoryCredentialStore


def test_rfc_7677_vector() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    credential = make_credential("sha256", "pencil", salt=salt, iterations=4096)
    server = ScramServer(
        "sha256",
        lambda user: credential if user == "user" else None,
        new_nonce=lambda: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    )
    first = server.step(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.step(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.username == "user"


def store_with(user: str, password: str) -> MemoryCredentialStore:
    store = MemoryCredentialStore()
    for hash_name in ("sha256", "sha512"):
        store.put(user, make_credential(hash_name, password))
    return store


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_pythons_scram_client_logs_in(mechanism: str) -> None:
    session = SaslSession(["PLAIN", mechanism], store_with("alice", "s3cret").lookup)
    assert session.handshake(mechanism) is None
    client = ScramClient("alice", "s3cret", mechanism)
    step = session.authenticate(client.first_message())
    assert step.error is None and step.principal is None
    client.process_server_first_message(step.token)
    step = session.authenticate(client.final_message())
    assert step.error is None and step.principal == "User:alice"
    client.process_server_final_message(step.token)  # checks the server's proof
    assert session.state is SaslState.AUTHENTICATED


def _client_final(password: str, first_bare: str, server_first: str, nonce: str) -> bytes:
    """A SCRAM-SHA-512 client-final-message with ``nonce`` as its r= (RFC 5802, by hand)."""
    attributes = dict(a.split("=", 1) for a in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(
        "sha512", password.encode(), base64.b64decode(attributes["s"]), int(attributes["i"])
    )
    client_key = hmac.new(salted, b"Client Key", "sha512").digest()
    stored_key = hashlib.sha512(client_key).digest()
    without_proof = f"c=biws,r={nonce}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, "sha512").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


@pytest.mark.parametrize(
    ("final_nonce", "ok"),
    [
        (lambda client, full: full, True),
        # librdkafka <= 2.0.x (kcat 1.7.1) repeats its nonce in front: Kafka accepts it
        (lambda client, full: client + full, True),
        (lambda client, full: full[:-1] + ("A" if full[-1] != "A" else "B"), False),
        (lambda client, full: client, False),
        (lambda client, full: full + "x", False),
    ],
)
def test_the_final_nonce_must_end_with_the_servers(
    final_nonce: Callable[[str, str], str], ok: bool
) -> None:
    session = SaslSession(["SCRAM-SHA-512"], store_with("alice", "s3cret").lookup)
    session.handshake("SCRAM-SHA-512")
    client_nonce, first_bare = "fyko+d2lbbFgONRv9qkxdawL", "n=alice,r=fyko+d2lbbFgONRv9qkxdawL"
    server_first = session.authenticate(f"n,,{first_bare}".encode()).token.decode()
    full = server_first.split(",")[0].removeprefix("r=")
    assert full.startswith(client_nonce) and len(full) > len(client_nonce)
    final = _client_final("s3cret", first_bare, server_first, final_nonce(client_nonce, full))
    step = session.authenticate(final)
    assert (step.principal == "User:alice") is ok
    assert (step.error is None) is ok


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "s3cret")])
def test_scram_refuses_a_wrong_password_or_an_unknown_user(user: str, password: str) -> None:
    session = SaslSession(["SCRAM-SHA-512"], store_with("alice", "s3cret").lookup)
    session.handshake("SCRAM-SHA-512")
    client = ScramClient(user, password, "SCRAM-SHA-512")
    step = session.authenticate(client.first_message())
    if step.error is None:  # a known user: the proof is what fails
        client.process_server_first_message(step.token)
        step = session.authenticate(client.final_message())
    assert isinstance(step.error, SaslAuthenticationFailedError)
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(step.error)
    assert password not in str(step.error) and session.reason  # the log's reason
    assert session.state is SaslState.FAILED and session.principal is None
    again = session.authenticate(b"anything")
    assert isinstance(again.error, IllegalSaslStateError)


@pytest.mark.parametrize(
    ("token", "ok"),
    [
        (b"\0alice\0s3cret", True),
        (b"alice\0alice\0s3cret", True),
        (b"bob\0alice\0s3cret", False),  # acting for someone else
        (b"\0alice\0wrong", False),
        (b"\0nobody\0s3cret", False),
        (b"\0alice", False),
        (b"\0\0s3cret", False),
        (b"\xff\0alice\0s3cret", False),
    ],
)
def test_plain(token: bytes, ok: bool) -> None:
    session = SaslSession(["PLAIN"], store_with("alice", "s3cret").lookup)
    assert session.handshake("PLAIN") is None
    step = session.authenticate(token)
    if ok:
        assert step.error is None and step.principal == "User:alice"
    else:
        assert isinstance(step.error, SaslAuthenticationFailedError)


def test_handshake_rules() -> None:
    session = SaslSession(["SCRAM-SHA-512"], MemoryCredentialStore().lookup)
    assert isinstance(session.authenticate(b"x").error, IllegalSaslStateError)
    assert isinstance(session.handshake("GSSAPI"), UnsupportedSaslMechanismError)
    assert session.handshake("SCRAM-SHA-512") is None  # a second handshake may follow
    assert isinstance(session.handshake("SCRAM-SHA-512"), IllegalSaslStateError)
    with pytest.raises(ValueError, match="SASL mechanisms must be some of"):
        SaslSession(["OAUTHBEARER"], MemoryCredentialStore().lookup)


@pytest.mark.parametrize(
    "first",
    [
        b"p=tls-server-end-point,,n=alice,r=abc",  # channel binding
        b"n,,n=alice",  # no nonce
        b"n,,r=abc",  # no user
        b"n,a=bob,n=alice,r=abc",  # authorization id of another user
        b"n,,n=alice,r=abc,tokenauth=true",  # delegation token
        b"n,,n=al=ice,r=abc",  # bad escape
        b"garbage",
    ],
)
def test_malformed_first_messages(first: bytes) -> None:
    credential = make_credential("sha256", "pw")
    server = ScramServer("sha256", lambda user: credential)
    with pytest.raises(ScramError):
        server.step(first)


def test_escaped_user_names() -> None:
    credential = make_credential("sha256", "pw")
    seen: list[str] = []

    def lookup(user: str) -> ScramCredential:
        seen.append(user)
        return credential

    ScramServer("sha256", lookup).step(b"n,,n=a=2Cb=3Dc,r=abc")
    assert seen == ["a,b=c"]


@settings(max_examples=25, deadline=None)
@given(password=st.text(min_size=1, max_size=20), other=st.text(min_size=1, max_size=20))
def test_a_credential_matches_its_password_only(password: str, other: str) -> None:
    credential = make_credential("sha256", password)
    assert password_matches(credential, password)
    assert password_matches(credential, other) is (other == password)


def test_credential_bounds() -> None:
    with pytest.raises(ValueError, match="iterations"):
        make_credential("sha512", "pw", iterations=100)
    with pytest.raises(ValueError, match="empty"):
        make_credential("sha512", "")
