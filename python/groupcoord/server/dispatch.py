"""Request frames in, response frames out: header decoding, the API table, routing.

:meth:`Dispatcher.dispatch` takes one frame body and returns either the response frame
now, a future of it (group requests the coordinator parks, long-poll Fetches), or
``None`` (an acks=0 Produce, which Kafka never answers). It never drops a request
silently:

- unknown API key, or a version we do not serve: ApiVersions gets the v0 response with
  UNSUPPORTED_VERSION and its own version range (as Kafka answers, KIP-511); any other API
  gets a
  response header with the request's correlation id followed by the int16 error code 35
  (UNSUPPORTED_VERSION). Kafka closes the connection here instead; a client that
  negotiated versions through ApiVersions never gets there, and one that did not at least
  learns why.
- a frame whose header or payload cannot be decoded raises
  :class:`~groupcoord.protocol.wire.MalformedFrameError`: the connection logs the reason
  and closes, as Kafka does (nothing later on that stream can be trusted).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable, Mapping
from typing import Any

from groupcoord.broker.data_apis import API_FETCH, DATA_API_VERSIONS, BrokerInfo, DataApis
from groupcoord.broker.find_coordinator import FIND_COORDINATOR_KEY, find_coordinator
from groupcoord.coordinator import (
    HeartbeatResponse,
    OffsetCommitResponse,
)
from groupcoord.coordinator.consumer_messages import ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.output import CoordinatorResponse
from groupcoord.errors import (
    GroupAuthorizationFailedError,
    InconsistentGroupProtocolError,
    InvalidRequestError,
    KafkaError,
    UnknownServerError,
)
from groupcoord.protocol.consumer_heartbeat_codec import (
    CONSUMER_HEARTBEAT_API_KEY,
    consumer_heartbeat_prefixes,
    decode_consumer_heartbeat_request,
    encode_consumer_heartbeat_response,
)
from groupcoord.protocol.group_messages import (
    GROUP_API_KEYS,
    error_response,
    to_coordinator_request,
    to_kio_response,
)
from groupcoord.protocol.heartbeat_codec import (
    HEARTBEAT_API_KEY,
    decode_heartbeat_request,
    encode_heartbeat_response,
    heartbeat_prefixes,
)
from groupcoord.protocol.offset_commit_codec import (
    OFFSET_COMMIT_API_KEY,
    decode_offset_commit_request,
    encode_offset_commit_response,
    offset_commit_prefixes,
)
from groupcoord.protocol.wire import (
    API_VERSIONS_KEY,
    RequestHeader,
    UnsupportedApiError,
    decode_request_header,
    decode_request_payload,
    encode_frame,
    encode_response,
)
from groupcoord.security.acl import ANONYMOUS
from groupcoord.security.acl_apis import ACL_API_VERSIONS
from groupcoord.security.authorizer import Allowed
from groupcoord.server.access import (
    caller_check,
    check_group_request,
    coordinator_refusal,
)
from groupcoord.server.acl_admin import AclAdmin
from groupcoord.server.api_versions import api_versions_response, served_versions
from groupcoord.server.fetch_wait import FetchWaiter
from groupcoord.server.group_gateway import GroupGateway
from groupcoord.server.sasl_gate import SASL_API_VERSIONS

__all__ = ["Dispatcher", "Reply", "unsupported_frame"]

log = logging.getLogger("groupcoord.server")

_SYNC_GROUP = 14
_UNSUPPORTED_VERSION = 35

#: What a request turns into: a response frame now, later, or never (acks=0 Produce).
Reply = bytes | asyncio.Future[bytes | None] | None


def unsupported_frame(correlation_id: int) -> bytes:
    """A response header v0 followed by the int16 UNSUPPORTED_VERSION code."""
    return encode_frame(struct.pack(">ih", correlation_id, _UNSUPPORTED_VERSION))


class Dispatcher:
    """Routes decoded requests to the API handlers of one server."""

    def __init__(
        self,
        *,
        broker: BrokerInfo,
        groups: GroupGateway,
        data_apis: DataApis,
        fetches: FetchWaiter,
        acls: AclAdmin | None = None,
        sasl: bool = False,
        data_api_versions: Mapping[int, tuple[int, int]] = DATA_API_VERSIONS,
    ) -> None:
        """``acls``: the ACL admin APIs and the authorizer every request is checked with
        (``None``: no authorizer; everything is allowed and the ACL APIs answer
        SECURITY_DISABLED, as Kafka without ``authorizer.class.name``)."""
        self.broker = broker
        self.groups = groups
        self.data_apis = data_apis
        self.fetches = fetches
        self.acls = acls if acls is not None else AclAdmin(None, None)
        self._authorizer = self.acls.authorizer
        # a SASL listener also lists the SASL APIs (its connections' gate answers them)
        extra = {**ACL_API_VERSIONS, **(SASL_API_VERSIONS if sasl else {})}
        self.versions = served_versions({**data_api_versions, **extra})
        # first four bytes (api key, version) of the Heartbeats we serve -> version
        self._heartbeats = heartbeat_prefixes(*self.versions.get(HEARTBEAT_API_KEY, (0, -1)))
        # likewise the OffsetCommits the hand codec may read
        self._commits = offset_commit_prefixes(*self.versions.get(OFFSET_COMMIT_API_KEY, (0, -1)))
        # and KIP-848's ConsumerGroupHeartbeats
        self._consumer_heartbeats = consumer_heartbeat_prefixes(
            *self.versions.get(CONSUMER_HEARTBEAT_API_KEY, (0, -1))
        )

    def serves(self, api_key: int, version: int) -> bool:
        lo, hi = self.versions.get(api_key, (0, -1))
        return lo <= version <= hi

    def dispatch(self, frame: bytes, client_host: str, principal: str = ANONYMOUS) -> Reply:
        """The reply to one request frame body (see the module docstring) from
        ``principal`` connected from ``client_host`` (Kafka's form: ``/address``)."""
        prefix = frame[:4]
        if prefix in self._heartbeats:
            return self._heartbeat(frame, principal, client_host)
        if prefix in self._commits:
            reply = self._offset_commit(frame, principal, client_host)
            if reply is not None:
                return reply
        if prefix in self._consumer_heartbeats:
            reply = self._consumer_heartbeat(frame, principal, client_host)
            if reply is not None:
                return reply
        try:
            header, offset = decode_request_header(frame)
        except UnsupportedApiError as e:
            return self._unsupported(e.header, str(e))
        if not self.serves(header.api_key, header.api_version):
            return self._unsupported(header, "version not served")
        request = decode_request_payload(header, frame, offset)
        api_key = header.api_key
        # the caller's ACL check (None: no authorizer); ACLs name hosts by address alone
        allowed: Allowed | None = None
        if self._authorizer is not None:
            allowed = caller_check(self._authorizer, principal, client_host.lstrip("/"))
        if api_key in GROUP_API_KEYS:
            return self._group(header, request, client_host, allowed)
        if api_key == API_VERSIONS_KEY:
            return encode_response(header, api_versions_response(header.api_version, self.versions))
        if api_key == FIND_COORDINATOR_KEY:
            refuse = None if allowed is None else coordinator_refusal(allowed)
            return encode_response(header, find_coordinator(request, self.broker, refuse))
        if api_key in ACL_API_VERSIONS:
            return encode_response(
                header, self.acls.handle(api_key, request, principal, client_host.lstrip("/"))
            )
        if api_key == API_FETCH:
            return self._fetch(header, request, allowed)
        return self._data(header, request, allowed)

    # ------------------------------------------------------------------ routes

    def _unsupported(self, header: RequestHeader, why: str) -> bytes:
        log.info(
            "unsupported request: api %d v%d from client %r (%s)",
            header.api_key,
            header.api_version,
            header.client_id,
            why,
        )
        if header.api_key == API_VERSIONS_KEY:
            response = api_versions_response(0, self.versions, unsupported=True)
            return encode_response(header, response)
        return unsupported_frame(header.correlation_id)

    def _data(self, header: RequestHeader, request: Any, allowed: Allowed | None) -> Reply:
        response = self.data_apis.handle(header.api_key, request, allowed)
        if response is None:
            return None
        return encode_response(header, response)

    def _fetch(self, header: RequestHeader, request: Any, allowed: Allowed | None) -> Reply:
        # a topic the caller may not read is an error to report: answered at once
        if self.data_apis.fetch_satisfied(request, allowed):
            return self._data(header, request, allowed)
        reply: asyncio.Future[bytes | None] = asyncio.get_running_loop().create_future()

        async def long_poll() -> None:
            await self.fetches.wait(request)
            if not reply.done():
                response = self.data_apis.handle(API_FETCH, request, allowed)
                reply.set_result(encode_response(header, response))

        task = asyncio.ensure_future(long_poll())
        reply.add_done_callback(lambda _: task.cancel())
        task.add_done_callback(lambda t: _fail_from(t, reply))
        return reply

    def _group(
        self, header: RequestHeader, request: Any, client_host: str, allowed: Allowed | None
    ) -> Reply:
        if (
            header.api_key == _SYNC_GROUP
            and header.api_version >= 5
            and (request.protocol_type is None or request.protocol_name is None)
        ):
            # as Kafka's KafkaApis, before the coordinator sees it
            # (SyncGroupRequest.areMandatoryProtocolTypeAndNamePresent)
            log.info("SyncGroup v%d without protocol type or name", header.api_version)
            error_response = group_error_response(header, request, InconsistentGroupProtocolError)
            return encode_response(header, error_response)
        try:
            ours = to_coordinator_request(
                header.api_key,
                header.api_version,
                request,
                correlation=self.groups.new_correlation(),
                client_id=header.client_id or "",
                client_host=client_host,
            )
        except (ValueError, TypeError, KafkaError) as e:
            log.info("invalid group request api %d: %s", header.api_key, e)
            error = e if isinstance(e, KafkaError) else InvalidRequestError(str(e))
            kio_response = group_error_response(header, request, type(error))
            return encode_response(header, kio_response)
        if allowed is not None:
            forward, finish = check_group_request(ours, allowed)
            if forward is None:
                return self._encode_group(header, request, finish(None))
            answered = self.groups.submit(forward)
            if not isinstance(answered, asyncio.Future):
                return self._encode_group(header, request, finish(answered))
            return _encoded_later(
                answered, lambda r: self._encode_group(header, request, finish(r))
            )
        answered = self.groups.submit(ours)
        if not isinstance(answered, asyncio.Future):
            return self._encode_group(header, request, answered)
        return _encoded_later(answered, lambda r: self._encode_group(header, request, r))

    def _heartbeat(self, frame: bytes, principal: str, client_host: str) -> Reply:
        """The hot path: a Heartbeat read and answered without kio or the generic
        mapping (:mod:`~groupcoord.protocol.heartbeat_codec`, byte-identical to it)."""
        groups = self.groups
        correlation_id, request = decode_heartbeat_request(frame, groups.new_correlation())
        version = request.version
        authorizer = self._authorizer
        if authorizer is not None and not authorizer.may_read_group(
            principal, client_host, request.group_id
        ):
            return encode_heartbeat_response(
                correlation_id, version, GroupAuthorizationFailedError.code
            )
        answered = groups.heartbeat(request)
        if isinstance(answered, HeartbeatResponse):
            return encode_heartbeat_response(correlation_id, version, answered.error_code)
        # only once the gateway is closed (a cancelled future)
        assert isinstance(answered, asyncio.Future)
        return _encoded_later(
            answered,
            lambda r: encode_heartbeat_response(correlation_id, version, _error_code(r)),
        )

    def _consumer_heartbeat(self, frame: bytes, principal: str, client_host: str) -> Reply | None:
        """KIP-848's hot path: a common ConsumerGroupHeartbeat read and answered without
        kio or the generic mapping (:mod:`~groupcoord.protocol.consumer_heartbeat_codec`,
        byte-identical to it); ``None`` for any other frame (the generic path)."""
        decoded = decode_consumer_heartbeat_request(
            frame, self.groups.new_correlation(), client_host
        )
        if decoded is None:
            return None
        correlation_id, request = decoded

        def encode(response: CoordinatorResponse) -> bytes:
            return _encode_consumer_heartbeat(correlation_id, response)

        if self._authorizer is not None:
            allowed = caller_check(self._authorizer, principal, client_host.lstrip("/"))
            forward, finish = check_group_request(request, allowed)
            if forward is None:
                return encode(finish(None))
            checked = self.groups.submit(forward)
            if not isinstance(checked, asyncio.Future):
                return encode(finish(checked))
            return _encoded_later(checked, lambda r: encode(finish(r)))
        answered = self.groups.submit(request)
        if not isinstance(answered, asyncio.Future):
            return encode(answered)
        return _encoded_later(answered, encode)

    def _offset_commit(self, frame: bytes, principal: str, client_host: str) -> Reply | None:
        """The durable-commit hot path: a common OffsetCommit read and answered without
        kio or the generic mapping (:mod:`~groupcoord.protocol.offset_commit_codec`,
        byte-identical to it); ``None`` for any other OffsetCommit (the generic path)."""
        decoded = decode_offset_commit_request(frame, self.groups.new_correlation())
        if decoded is None:
            return None
        correlation_id, request = decoded
        if self._authorizer is not None:
            allowed = caller_check(self._authorizer, principal, client_host.lstrip("/"))
            forward, finish = check_group_request(request, allowed)
            if forward is None:
                return _encode_commit(correlation_id, finish(None))
            answered = self.groups.submit(forward)
            if not isinstance(answered, asyncio.Future):
                return _encode_commit(correlation_id, finish(answered))
            return _encoded_later(answered, lambda r: _encode_commit(correlation_id, finish(r)))
        answered = self.groups.submit(request)
        if not isinstance(answered, asyncio.Future):
            return _encode_commit(correlation_id, answered)
        return _encoded_later(answered, lambda r: _encode_commit(correlation_id, r))

    @staticmethod
    def _encode_group(header: RequestHeader, request: Any, response: CoordinatorResponse) -> bytes:
        try:
            return encode_response(header, to_kio_response(response))
        except Exception:  # a bug: log it, answer with an error, keep the connection
            log.exception("cannot encode a response to api %d", header.api_key)
            return encode_response(
                header, group_error_response(header, request, UnknownServerError)
            )


def _encoded_later(
    answered: asyncio.Future[CoordinatorResponse], encode: Callable[[CoordinatorResponse], bytes]
) -> asyncio.Future[bytes | None]:
    """A future of the reply frame of a response the coordinator releases later."""
    reply: asyncio.Future[bytes | None] = answered.get_loop().create_future()

    def encoded(done: asyncio.Future[CoordinatorResponse]) -> None:
        if reply.done():
            return
        if done.cancelled():
            reply.cancel()
            return
        reply.set_result(encode(done.result()))

    answered.add_done_callback(encoded)
    return reply


def _encode_consumer_heartbeat(correlation_id: int, response: CoordinatorResponse) -> bytes:
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    return encode_consumer_heartbeat_response(correlation_id, response)


def _encode_commit(correlation_id: int, response: CoordinatorResponse) -> bytes:
    assert isinstance(response, OffsetCommitResponse)
    return encode_offset_commit_response(correlation_id, response)


def _error_code(response: CoordinatorResponse) -> int:
    assert isinstance(response, HeartbeatResponse)
    return response.error_code


def _fail_from(task: asyncio.Task[None], reply: asyncio.Future[bytes | None]) -> None:
    if task.cancelled() or reply.done():
        return
    error = task.exception()
    if error is not None:
        reply.set_exception(error)


def group_error_response(header: RequestHeader, request: Any, error: type[KafkaError]) -> Any:
    """The kio response of the request's group API and version carrying ``error``
    everywhere it can (top level, or on every item the request named)."""
    return to_kio_response(error_response(header.api_key, header.api_version, request, error))
