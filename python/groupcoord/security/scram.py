"""SCRAM (RFC 5802, with SHA-256 and SHA-512 as RFC 7677 and Kafka's KIP-84 use them):
stored credentials and the server side of one exchange. Sans-IO, no clock.

A credential keeps the salt, the iteration count, StoredKey = H(HMAC(SaltedPassword,
"Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"), never the password:
whoever reads the store can neither log in as the user (the client proof needs ClientKey,
which StoredKey does not give back) nor recover the password except by guessing through
the iterated hash. Passwords and user names are UTF-8 as Kafka's ``ScramFormatter`` has
them (no SASLprep), so credentials made here and in Kafka agree.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_ITERATIONS",
    "MIN_ITERATIONS",
    "SCRAM_MECHANISMS",
    "ScramCredential",
    "ScramError",
    "ScramServer",
    "make_credential",
    "password_matches",
]

#: hash of each mechanism Kafka offers
SCRAM_MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: Kafka's lower bound for a SCRAM credential's iterations (``ScramMechanism.minIterations``)
MIN_ITERATIONS = 4096
#: what ``kafka-configs --alter --add-config 'SCRAM-SHA-512=[password=...]'`` uses
DEFAULT_ITERATIONS = 4096
#: Kafka's upper bound (``ScramMechanism.maxIterations``)
MAX_ITERATIONS = 16384


class ScramError(Exception):
    """The exchange failed; the message says why (for the server's log, never the
    secret)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredential:
    """One user's credential for one hash (``sha256`` or ``sha512``)."""

    hash_name: str
    salt: bytes
    iterations: int
    stored_key: bytes
    server_key: bytes


def _hmac(hash_name: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hash_name).digest()


def _salted(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def make_credential(
    hash_name: str,
    password: str,
    *,
    salt: bytes | None = None,
    iterations: int = DEFAULT_ITERATIONS,
) -> ScramCredential:
    """The credential of ``password`` (a fresh random salt unless one is given)."""
    if hash_name not in SCRAM_MECHANISMS.values():
        raise ValueError(f"unknown hash {hash_name!r} (sha256 or sha512)")
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"iterations must be in [{MIN_ITERATIONS}, {MAX_ITERATIONS}], got {iterations}"
        )
    if not password:
        raise ValueError("the password must not be empty")
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = _salted(hash_name, password, salt, iterations)
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramCredential(
        hash_name=hash_name,
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=_hmac(hash_name, salted, b"Server Key"),
    )


def password_matches(credential: ScramCredential, password: str) -> bool:
    """Does ``password`` give ``credential`` (SASL/PLAIN checks a password this way)?"""
    if not password:
        return False
    again = make_credential(
        credential.hash_name, password, salt=credential.salt, iterations=credential.iterations
    )
    return hmac.compare_digest(again.stored_key, credential.stored_key)


def _attributes(message: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in message.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ScramError(f"malformed SCRAM attribute {part[:20]!r}")
        out.setdefault(key, value)
    return out


def _username(escaped: str) -> str:
    # RFC 5802: "," and "=" in names travel as "=2C" and "=3D"; any other "=" is invalid
    out, i = [], 0
    while i < len(escaped):
        if escaped[i] == "=":
            code = escaped[i : i + 3]
            if code not in ("=2C", "=3D"):
                raise ScramError("invalid escape in the user name")
            out.append("," if code == "=2C" else "=")
            i += 3
        else:
            out.append(escaped[i])
            i += 1
    return "".join(out)


class ScramServer:
    """The server side of one SCRAM exchange: :meth:`step` takes the client's first
    message and returns the server's first, then takes the client's final one and
    returns the server's final one; :attr:`username` is then the authenticated user.
    Any failure raises :class:`ScramError` (the exchange is over)."""

    __slots__ = (
        "_auth_prefix",
        "_credential",
        "_gs2_header",
        "_hash",
        "_lookup",
        "_new_nonce",
        "_nonce",
        "_step",
        "_user",
        "username",
    )

    def __init__(
        self,
        hash_name: str,
        lookup: Callable[[str], ScramCredential | None],
        new_nonce: Callable[[], str] | None = None,
    ) -> None:
        """``lookup(user)``: the user's credential for ``hash_name``, or ``None``."""
        self._hash = hash_name
        self._lookup = lookup
        self._new_nonce = new_nonce or (lambda: secrets.token_urlsafe(24))
        self._step = 0
        self._credential: ScramCredential | None = None
        self._nonce = ""
        self._gs2_header = ""
        self._auth_prefix = ""
        self._user = ""
        #: the authenticated user once the exchange completed
        self.username: str | None = None

    @property
    def done(self) -> bool:
        return self.username is not None

    def step(self, message: bytes) -> bytes:
        try:
            text = message.decode()
        except UnicodeDecodeError as e:
            raise ScramError("SCRAM message is not UTF-8") from e
        self._step += 1
        if self._step == 1:
            return self._first(text).encode()
        if self._step == 2:
            return self._final(text).encode()
        raise ScramError("the SCRAM exchange is already over")

    def _first(self, text: str) -> str:
        # gs2-header: "n,," (no channel binding; "y,," client supports it, we do not
        # offer it) or with an authorization id "n,a=name,"
        flag, sep, rest = text.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep or not sep2 or flag not in ("n", "y"):
            raise ScramError("channel binding is not supported or the header is malformed")
        attributes = _attributes(bare)
        if "m" in attributes:
            raise ScramError("mandatory SCRAM extension not supported")
        if attributes.get("tokenauth") is not None:
            raise ScramError("delegation tokens are not supported")
        if "n" not in attributes or "r" not in attributes:
            raise ScramError("the client's first message has no user name or nonce")
        user = _username(attributes["n"])
        if authzid and _username(authzid.removeprefix("a=")) != user:
            raise ScramError("authorization id differs from the user name")
        credential = self._lookup(user)
        if credential is None:
            raise ScramError(f"unknown user {user!r}")
        self._credential = credential
        self._user = user
        self._nonce = attributes["r"] + self._new_nonce()
        self._gs2_header = f"{flag},{authzid},"
        server_first = (
            f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
            f"i={credential.iterations}"
        )
        self._auth_prefix = f"{bare},{server_first}"
        return server_first

    def _final(self, text: str) -> str:
        credential = self._credential
        assert credential is not None
        without_proof, sep, proof_part = text.rpartition(",p=")
        if not sep:
            raise ScramError("the client's final message has no proof")
        attributes = _attributes(without_proof)
        # Kafka checks that the nonce ends with ours, not that it equals it: librdkafka up to
        # 2.0.x (kcat 1.7.1's) sends its own nonce in front of the full one again; the server
        # part, which makes a replay fail, is still checked
        if not attributes.get("r", "").endswith(self._nonce):
            raise ScramError("nonce mismatch")
        if attributes.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            raise ScramError("channel binding mismatch")
        try:
            proof = base64.b64decode(proof_part, validate=True)
        except ValueError as e:
            raise ScramError("the client proof is not base64") from e
        auth_message = f"{self._auth_prefix},{without_proof}".encode()
        signature = _hmac(self._hash, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), credential.stored_key
        ):
            raise ScramError("invalid credentials")
        self.username = self._user
        server_signature = _hmac(self._hash, credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}"
