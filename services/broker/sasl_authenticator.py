"""The broker's side of SASL on a connection: SaslHandshake and SaslAuthenticate requests, and
the raw tokens of v0 handshakes, as Kafka 2.8's ``SaslServerAuthenticator`` answers them.

Credentials are read from ZooKeeper (``/config/users/{user}``) at each authentication, so a
changed or deleted user applies to the next login on every broker. A refused authentication is
answered (SASL_AUTHENTICATION_FAILED, naming no reason an attacker could use) and the connection
then closed; a broken exchange or an unexpected request closes it at once.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pafka.errors import (
    IllegalSaslStateError,
    PafkaError,
    ProtocolError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)
from pafka.protocol.messages import (
    ApiKey,
    EncodedResponse,
    Request,
    encode_response,
    response_class,
)
from pafka.security.principal import KafkaPrincipal
from pafka.security.sasl_mechanisms import (
    Authenticated,
    Challenge,
    NeedCredentials,
    ServerStep,
    server_mechanism,
)
from pafka.security.sasl_state import SaslEvent, SaslState, transition
from services.broker.session import ConnectionSession

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
CredentialLookup = Callable[[str], Awaitable[Mapping[str, str] | None]]


class SaslAuthenticator:
    def __init__(
        self,
        enabled_mechanisms: tuple[str, ...],
        *,
        reauth_ms: int,
        lookup: CredentialLookup,
        on_outcome: Callable[[str, bool], None] = lambda _listener, _ok: None,
    ) -> None:
        self.enabled = enabled_mechanisms
        self.reauth_ms = reauth_ms
        self._lookup = lookup
        # (listener, succeeded) for Kafka's successful/failed-authentication-total.
        self._on_outcome = on_outcome

    # -- requests ----------------------------------------------------------------------------

    async def handle(self, request: Request, session: ConnectionSession) -> EncodedResponse:
        header = request.header
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            body = self._handshake(header.api_version, request.body.mechanism, session)
        else:
            body = await self._authenticate(header.api_version, request.body.auth_bytes, session)
        return encode_response(header, body)

    def _handshake(self, version: int, mechanism: str, session: ConnectionSession) -> Any:
        cls = response_class(ApiKey.SASL_HANDSHAKE, version)
        assert session.sasl_state is not None
        event = SaslEvent.HANDSHAKE_V0 if version == 0 else SaslEvent.HANDSHAKE_V1
        reauthenticating = session.sasl_state is SaslState.AUTHENTICATED
        try:
            next_state = transition(session.sasl_state, event)
            if mechanism not in self.enabled:
                raise UnsupportedSaslMechanismError(f"{mechanism} is not enabled")
            if reauthenticating and mechanism != session.mechanism_name:
                # Kafka: the mechanism cannot change on re-authentication.
                raise IllegalSaslStateError(
                    f"re-authentication with {mechanism}, "
                    f"authenticated with {session.mechanism_name}"
                )
        except (UnsupportedSaslMechanismError, IllegalSaslStateError) as exc:
            log.info("closing connection from %s: %s", session.host, exc)
            session.close_after_response = True
            return cls(error_code=exc.code, mechanisms=list(self.enabled))
        session.sasl_state = next_state
        session.mechanism_name = mechanism
        session.mechanism = server_mechanism(mechanism)
        return cls(error_code=0, mechanisms=list(self.enabled))

    async def _authenticate(self, version: int, token: bytes, session: ConnectionSession) -> Any:
        cls = response_class(ApiKey.SASL_AUTHENTICATE, version)
        extra: dict[str, Any] = {"session_lifetime_ms": 0} if version >= 1 else {}
        try:
            assert session.sasl_state is not None
            transition(session.sasl_state, SaslEvent.AUTHENTICATE_REQUEST)
            data, lifetime_ms = await self._step(bytes(token), session)
        except (SaslAuthenticationFailedError, IllegalSaslStateError) as exc:
            session.close_after_response = True
            message = (
                f"Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {session.mechanism_name}"
                if isinstance(exc, SaslAuthenticationFailedError)
                else str(exc)
            )
            return cls(error_code=exc.code, error_message=message, auth_bytes=b"", **extra)
        if version >= 1:
            extra["session_lifetime_ms"] = lifetime_ms
        return cls(error_code=0, error_message=None, auth_bytes=data, **extra)

    async def raw_token(
        self, frame: bytes | memoryview, session: ConnectionSession
    ) -> EncodedResponse:
        """A token after a v0 handshake: framed, no header, answered the same way; a failure
        closes the connection without an answer (all v0 clients understand)."""
        try:
            data, _ = await self._step(bytes(frame), session)
        except PafkaError as exc:
            raise ProtocolError(f"SASL authentication failed: {exc}") from exc
        out = bytearray(_SIZE.pack(len(data)))
        out += data
        return out

    # -- the exchange ------------------------------------------------------------------------

    async def _step(self, token: bytes, session: ConnectionSession) -> tuple[bytes, int]:
        mechanism = session.mechanism
        if mechanism is None:
            raise IllegalSaslStateError("SaslAuthenticate before SaslHandshake")
        try:
            step: ServerStep = mechanism.receive(token)
            if isinstance(step, NeedCredentials):
                step = mechanism.provide(await self._lookup(step.user))
        except SaslAuthenticationFailedError:
            self._on_outcome(session.listener, False)
            log.info("authentication of %s with %s failed", session.host, session.mechanism_name)
            raise
        if isinstance(step, Challenge):
            return step.data, 0
        assert isinstance(step, Authenticated)
        principal = KafkaPrincipal.user(step.user)
        reauthenticating = session.sasl_state is SaslState.REAUTH_AUTHENTICATE
        if reauthenticating and principal != session.principal:
            raise SaslAuthenticationFailedError(
                f"re-authentication as {principal}, authenticated as {session.principal}"
            )
        assert session.sasl_state is not None
        session.sasl_state = transition(session.sasl_state, SaslEvent.MECHANISM_COMPLETE)
        session.principal = principal
        session.mechanism = None
        self._on_outcome(session.listener, True)
        lifetime_ms = self.reauth_ms
        session.expires_at = (
            time.monotonic() + lifetime_ms / 1000 if lifetime_ms > 0 else float("inf")
        )
        return step.data, lifetime_ms
