"""Routes decoded requests to handlers and maps errors to the wire, once.

Undecodable frames and requests for APIs or versions not advertised close the connection (what
Kafka does), except ApiVersions, which clients use to discover versions: an ApiVersions request
of an unknown version is answered at v0 with UNSUPPORTED_VERSION and the supported table.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from pafka.errors import IllegalSaslStateError, ProtocolError, UnsupportedVersionError
from pafka.protocol.messages import (
    ApiKey,
    EncodedResponse,
    decode_request,
    encode_response,
    response_class,
)
from pafka.protocol.versions import api_versions_response
from pafka.security.sasl_state import SaslEvent, SaslState, transition
from services.broker.handlers import HANDLERS
from services.broker.handlers.context import RequestContext
from services.broker.quota_enforcement import handle_within_quotas
from services.broker.server import Throttled
from services.broker.session import ConnectionSession

if TYPE_CHECKING:
    from services.broker.broker import Broker

log = logging.getLogger(__name__)


class Dispatcher:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.served = frozenset(HANDLERS) | {ApiKey.API_VERSIONS} | SASL_APIS

    async def handle_frame(
        self, frame: bytes | memoryview, session: ConnectionSession
    ) -> EncodedResponse | Throttled | None:
        started = time.monotonic()
        metrics = self.broker.metrics
        if session.sasl_state is SaslState.RAW_TOKENS:
            return await self.broker.sasl.raw_token(frame, session)
        try:
            request = decode_request(frame, served=self.served)
        except UnsupportedVersionError as exc:
            header = getattr(exc, "header", None)
            if header is not None and header.api_key == ApiKey.API_VERSIONS:
                metrics.count_error(ApiKey.API_VERSIONS, exc.code)
                body = api_versions_response(0, self.served, error_code=exc.code)
                return encode_response(header, body, version=0)
            metrics.protocol_errors.inc()
            raise ProtocolError(str(exc)) from exc
        except ProtocolError:
            metrics.protocol_errors.inc()
            raise
        header = request.header
        api = ApiKey(header.api_key)
        counted, timed = metrics.request_children(api, header.api_version)
        counted.inc()
        mute_ms = 0
        if session.sasl_state is not None:
            if api in SASL_APIS:
                response_frame = await self.broker.sasl.handle(request, session)
                timed.observe(time.monotonic() - started)
                return response_frame
            self._check_session(api, session, started)
        if api is ApiKey.API_VERSIONS:
            response = api_versions_response(header.api_version, self.served)
        elif api in SASL_APIS:
            # Kafka's answer to SASL requests on a listener without SASL.
            metrics.count_error(api, IllegalSaslStateError.code)
            response = _illegal_sasl(api, header.api_version)
        else:
            ctx = RequestContext(
                api_key=header.api_key,
                api_version=header.api_version,
                correlation_id=header.correlation_id,
                client_id=header.client_id,
                client_host=session.host,
                broker=self.broker,
                principal=session.principal,
                listener=session.listener,
            )
            try:
                response, mute_ms = await handle_within_quotas(
                    ctx, HANDLERS[api](ctx, request.body), request.body, len(frame)
                )
            except Exception as exc:
                # A bug or an I/O failure: close this connection, keep the broker serving.
                log.exception("%s v%d failed", api.name, header.api_version)
                raise ProtocolError(f"internal error handling {api.name}") from exc
        timed.observe(time.monotonic() - started)
        if api is ApiKey.PRODUCE and int(request.body.acks) == 0:
            return Throttled(None, mute_ms) if mute_ms else None
        encoded = encode_response(header, response)
        return Throttled(encoded, mute_ms) if mute_ms else encoded

    @staticmethod
    def _check_session(api: ApiKey, session: ConnectionSession, now: float) -> None:
        """Before authentication only ApiVersions may come; after the session's lifetime
        (connections.max.reauth.ms) only a re-authentication (Kafka closes the connection)."""
        assert session.sasl_state is not None
        event = SaslEvent.API_VERSIONS if api is ApiKey.API_VERSIONS else SaslEvent.OTHER_REQUEST
        try:
            transition(session.sasl_state, event)
        except IllegalSaslStateError as exc:
            raise ProtocolError(f"{api.name} before authentication: {exc}") from exc
        if event is SaslEvent.OTHER_REQUEST and now > session.expires_at:
            raise ProtocolError(f"{api.name} after the SASL session of {session.principal} expired")


SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def _illegal_sasl(api: ApiKey, version: int) -> Any:
    cls = response_class(api, version)
    if api is ApiKey.SASL_HANDSHAKE:
        return cls(error_code=IllegalSaslStateError.code, mechanisms=[])
    extra = {"session_lifetime_ms": 0} if version >= 1 else {}
    return cls(
        error_code=IllegalSaslStateError.code,
        error_message="SASL is not enabled on this listener",
        auth_bytes=b"",
        **extra,
    )
