"""SASL on one connection, as Kafka runs it (KIP-43, KIP-152): SaslHandshake names the
mechanism, then SaslAuthenticate frames carry its tokens until the server says done or
fails. Sans-IO: the server shell feeds requests in and sends what comes out.

Mechanisms: PLAIN (RFC 4616: ``authzid NUL user NUL password``, the password checked
against the user's stored SCRAM credential) and SCRAM-SHA-256 / SCRAM-SHA-512
(:mod:`.scram`). The principal of an authenticated connection is ``User:<name>``.

States, as data: a missing transition is an ILLEGAL_SASL_STATE error.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from groupcoord.errors import (
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from groupcoord.security.scram import (
    SCRAM_MECHANISMS,
    ScramCredential,
    ScramError,
    ScramServer,
    password_matches,
)

__all__ = ["SASL_MECHANISMS", "CredentialLookup", "SaslSession", "SaslState", "SaslStep"]

#: the mechanisms a listener may enable
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

#: ``lookup(user, hash_name)``: the user's credential for that hash, or ``None``
CredentialLookup = Callable[[str, str], ScramCredential | None]


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"  # waiting for SaslHandshake
    AUTHENTICATING = "authenticating"  # SaslAuthenticate tokens being exchanged
    AUTHENTICATED = "authenticated"
    FAILED = "failed"


#: (state, event) -> next state; the events are "handshake", "token", "done", "fail"
_TRANSITIONS: dict[tuple[SaslState, str], SaslState] = {
    (SaslState.HANDSHAKE, "handshake"): SaslState.AUTHENTICATING,
    (SaslState.HANDSHAKE, "fail"): SaslState.HANDSHAKE,  # an unsupported mechanism: retry
    (SaslState.AUTHENTICATING, "token"): SaslState.AUTHENTICATING,
    (SaslState.AUTHENTICATING, "done"): SaslState.AUTHENTICATED,
    (SaslState.AUTHENTICATING, "fail"): SaslState.FAILED,
}


@dataclass(frozen=True, slots=True)
class SaslStep:
    """What one SaslAuthenticate answers: the server's token, or the error (the
    connection then closes); ``principal`` once authenticated."""

    token: bytes = b""
    error: KafkaError | None = None
    principal: str | None = None


def _failed(mechanism: str) -> SaslAuthenticationFailedError:
    # Kafka's wording; the reason (unknown user, bad password) only goes to the log
    return SaslAuthenticationFailedError(
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )


class SaslSession:
    """The SASL state of one connection (see the module documentation)."""

    __slots__ = (
        "_enabled",
        "_lookup",
        "_mechanism",
        "_scram",
        "bare_tokens",
        "principal",
        "reason",
        "state",
    )

    def __init__(self, enabled: Sequence[str], lookup: CredentialLookup) -> None:
        unknown = [m for m in enabled if m not in SASL_MECHANISMS]
        if unknown or not enabled:
            raise ValueError(
                f"SASL mechanisms must be some of {', '.join(SASL_MECHANISMS)}, got "
                f"{', '.join(enabled) or 'none'}"
            )
        self._enabled = tuple(enabled)
        self._lookup = lookup
        self._mechanism = ""
        self._scram: ScramServer | None = None
        self.state = SaslState.HANDSHAKE
        #: ``User:<name>`` once authenticated
        self.principal: str | None = None
        #: why authentication failed (for the log: never the secret)
        self.reason: str | None = None
        #: the handshake was SaslHandshake v0: the tokens then come as bare frames, not in
        #: SaslAuthenticate requests (Kafka 0.10's framing; the shell sets it)
        self.bare_tokens = False

    @property
    def mechanisms(self) -> tuple[str, ...]:
        return self._enabled

    def _move(self, event: str) -> None:
        following = _TRANSITIONS.get((self.state, event))
        if following is None:
            raise IllegalSaslStateError(f"unexpected SASL {event} in state {self.state.value}")
        self.state = following

    def handshake(self, mechanism: str) -> KafkaError | None:
        """SaslHandshake: ``None`` (go on with SaslAuthenticate) or the error to answer
        (UNSUPPORTED_SASL_MECHANISM with the enabled ones listed by the caller;
        ILLEGAL_SASL_STATE when not expected now)."""
        if self.state is not SaslState.HANDSHAKE:
            return IllegalSaslStateError(f"unexpected SaslHandshake in state {self.state.value}")
        if mechanism not in self._enabled:
            self._move("fail")
            return UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism}")
        self._move("handshake")
        self._mechanism = mechanism
        if mechanism in SCRAM_MECHANISMS:
            hash_name = SCRAM_MECHANISMS[mechanism]
            self._scram = ScramServer(hash_name, lambda user: self._lookup(user, hash_name))
        return None

    def authenticate(self, token: bytes) -> SaslStep:
        """One SaslAuthenticate's token."""
        if self.state is not SaslState.AUTHENTICATING:
            return SaslStep(
                error=IllegalSaslStateError(
                    f"unexpected SaslAuthenticate in state {self.state.value}"
                )
            )
        try:
            if self._scram is not None:
                answer = self._scram.step(token)
                if self._scram.username is None:
                    self._move("token")
                    return SaslStep(token=answer)
                return self._done(self._scram.username, answer)
            return self._done(self._plain(token), b"")
        except ScramError as e:
            self.reason = str(e)
        self._move("fail")
        return SaslStep(error=_failed(self._mechanism))

    def _done(self, user: str, token: bytes) -> SaslStep:
        self._move("done")
        self.principal = f"User:{user}"
        return SaslStep(token=token, principal=self.principal)

    def _plain(self, token: bytes) -> str:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise ScramError("malformed PLAIN message")
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError as e:
            raise ScramError("PLAIN message is not UTF-8") from e
        if not user or not password:
            raise ScramError("PLAIN message without a user name or password")
        if authzid and authzid != user:
            raise ScramError("authorization id differs from the user name")
        # any stored credential of the user can check the password
        for hash_name in ("sha512", "sha256"):
            credential = self._lookup(user, hash_name)
            if credential is not None:
                if password_matches(credential, password):
                    return user
                raise ScramError(f"wrong password for user {user!r}")
        raise ScramError(f"unknown user {user!r}")
