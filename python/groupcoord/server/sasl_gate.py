"""SASL before anything else on a SASL listener: SaslHandshake (v0-v1) and SaslAuthenticate
(v0-v2) frames in, response frames out, through a connection's
:class:`~groupcoord.security.sasl.SaslSession`.

After a v0 handshake the mechanism's tokens travel as bare size-prefixed frames, without a
request header, until the login is done (Kafka 0.10's framing, still served by Kafka); a
failed login there has no frame to carry an error, so the connection just closes, as
Kafka's does. Serving v0 matters beyond 0.10 clients: librdkafka 2.0.2 (kcat 1.7.1's)
uses SASL only if ApiVersions lists SaslHandshake v0, though it then sends v1.

Until the session is authenticated only ApiVersions and these two APIs are served, as on
a Kafka SASL listener; any other request closes the connection (Kafka: "Unexpected Kafka
request of type ... during SASL handshake"), so no group or data API ever sees an
unauthenticated frame. A failed authentication is answered with SASL_AUTHENTICATION_FAILED
after :data:`FAILED_AUTHENTICATION_DELAY_S` (Kafka's ``connection.failed.authentication.
delay.ms``, 100 ms: guessing passwords is slow) and the connection closes.
"""

from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass
from typing import Any

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.static.constants import EntityType

from groupcoord.errors import IllegalSaslStateError, KafkaError
from groupcoord.protocol.wire import (
    API_VERSIONS_KEY,
    decode_request_header,
    decode_request_payload,
    encode_frame,
    encode_response,
    kio_versions_within,
)
from groupcoord.security.sasl import SaslSession, SaslState

__all__ = [
    "FAILED_AUTHENTICATION_DELAY_S",
    "SASL_API_VERSIONS",
    "SASL_AUTHENTICATE_KEY",
    "SASL_HANDSHAKE_KEY",
    "GateAnswer",
    "sasl_frame",
]

SASL_HANDSHAKE_KEY = 17
SASL_AUTHENTICATE_KEY = 36
SASL_API_VERSIONS: dict[int, tuple[int, int]] = {
    SASL_HANDSHAKE_KEY: kio_versions_within(SASL_HANDSHAKE_KEY, 0, 1),
    SASL_AUTHENTICATE_KEY: kio_versions_within(SASL_AUTHENTICATE_KEY, 0, 2),
}
FAILED_AUTHENTICATION_DELAY_S = 0.1

_API = struct.Struct(">hh")


@dataclass(frozen=True, slots=True)
class GateAnswer:
    """What to do with a frame on a connection that is not authenticated yet: send
    ``reply`` (after ``delay_s``), pass the frame to the dispatcher (``dispatch``), and/or
    close with ``close_reason``."""

    reply: bytes | None = None
    dispatch: bool = False
    close_reason: str | None = None
    delay_s: float = 0.0


def _served(api_key: int, version: int) -> bool:
    lo, hi = SASL_API_VERSIONS.get(api_key, (0, -1))
    return lo <= version <= hi


def sasl_frame(frame: bytes, session: SaslSession) -> GateAnswer:
    """The answer to one request frame on a SASL connection (see the module docs)."""
    if session.bare_tokens and session.state is SaslState.AUTHENTICATING:
        return _bare_token(frame, session)
    if len(frame) < _API.size:
        return GateAnswer(close_reason="a frame too short for a request header")
    api_key, version = _API.unpack_from(frame)
    authenticated = session.state is SaslState.AUTHENTICATED
    if api_key == API_VERSIONS_KEY or (authenticated and api_key not in SASL_API_VERSIONS):
        return GateAnswer(dispatch=True)
    if api_key not in SASL_API_VERSIONS:
        return GateAnswer(
            close_reason=f"request of API {api_key} before SASL authentication "
            f"(state {session.state.value})"
        )
    if authenticated:
        return GateAnswer(close_reason="SASL re-authentication (KIP-368) is not supported")
    if not _served(api_key, version):
        return GateAnswer(close_reason=f"SASL API {api_key} v{version} is not served")
    header, offset = decode_request_header(frame)
    request: Any = decode_request_payload(header, frame, offset)
    module = load_payload_module(api_key, version, EntityType.response)
    if api_key == SASL_HANDSHAKE_KEY:
        error = session.handshake(request.mechanism)
        response = module.SaslHandshakeResponse(
            error_code=_code(error), mechanisms=session.mechanisms
        )
        reply = encode_response(header, response)
        if isinstance(error, IllegalSaslStateError):
            return GateAnswer(reply=reply, close_reason=str(error))
        if error is None and version == 0:
            session.bare_tokens = True
        return GateAnswer(reply=reply)
    step = session.authenticate(bytes(request.auth_bytes))
    fields: dict[str, Any] = {
        "error_code": _code(step.error),
        "error_message": None if step.error is None else str(step.error),
        "auth_bytes": step.token,
    }
    if version >= 1:
        # no re-authentication: the session does not expire (KIP-368's 0)
        fields["session_lifetime"] = datetime.timedelta(0)
    reply = encode_response(header, module.SaslAuthenticateResponse(**fields))
    if step.error is not None:
        return GateAnswer(
            reply=reply,
            close_reason=f"SASL authentication failed: {session.reason or step.error}",
            delay_s=FAILED_AUTHENTICATION_DELAY_S,
        )
    return GateAnswer(reply=reply)


def _bare_token(frame: bytes, session: SaslSession) -> GateAnswer:
    """One token after a v0 handshake: the whole frame is the token, the answer a bare
    frame holding the server's (empty for PLAIN)."""
    step = session.authenticate(frame)
    if step.error is not None:
        return GateAnswer(
            close_reason=f"SASL authentication failed: {session.reason or step.error}",
            delay_s=FAILED_AUTHENTICATION_DELAY_S,
        )
    return GateAnswer(reply=encode_frame(step.token))


def _code(error: KafkaError | None) -> ErrorCode:
    return ErrorCode(0 if error is None else error.code)
