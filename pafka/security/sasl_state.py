"""Where a SASL connection's authentication stands, as Kafka's ``SaslServerAuthenticator``:
an explicit transition table.

A connection starts in HANDSHAKE (ApiVersions allowed, then SaslHandshake). A v0 handshake
(Kafka 0.10) is followed by raw SASL tokens, framed but without a request header; a v1
handshake by SaslAuthenticate requests. Once the mechanism completes the connection is
AUTHENTICATED, and may re-authenticate (KIP-368) with a new v1 handshake. Anything else is an
illegal state, which closes the connection, as in Kafka.
"""

from __future__ import annotations

import enum

from pafka.errors import IllegalSaslStateError


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    RAW_TOKENS = "raw_tokens"  # after a v0 handshake
    AUTHENTICATE = "authenticate"  # after a v1 handshake
    AUTHENTICATED = "authenticated"
    REAUTH_AUTHENTICATE = "reauth_authenticate"  # a v1 handshake on an authenticated connection


class SaslEvent(enum.Enum):
    API_VERSIONS = "api_versions"
    HANDSHAKE_V0 = "handshake_v0"
    HANDSHAKE_V1 = "handshake_v1"
    AUTHENTICATE_REQUEST = "authenticate_request"
    RAW_TOKEN = "raw_token"
    MECHANISM_COMPLETE = "mechanism_complete"
    OTHER_REQUEST = "other_request"


S, E = SaslState, SaslEvent
TRANSITIONS: dict[tuple[SaslState, SaslEvent], SaslState] = {
    (S.HANDSHAKE, E.API_VERSIONS): S.HANDSHAKE,
    (S.HANDSHAKE, E.HANDSHAKE_V0): S.RAW_TOKENS,
    (S.HANDSHAKE, E.HANDSHAKE_V1): S.AUTHENTICATE,
    (S.RAW_TOKENS, E.RAW_TOKEN): S.RAW_TOKENS,
    (S.RAW_TOKENS, E.MECHANISM_COMPLETE): S.AUTHENTICATED,
    (S.AUTHENTICATE, E.AUTHENTICATE_REQUEST): S.AUTHENTICATE,
    (S.AUTHENTICATE, E.MECHANISM_COMPLETE): S.AUTHENTICATED,
    (S.AUTHENTICATED, E.API_VERSIONS): S.AUTHENTICATED,
    (S.AUTHENTICATED, E.OTHER_REQUEST): S.AUTHENTICATED,
    (S.AUTHENTICATED, E.HANDSHAKE_V1): S.REAUTH_AUTHENTICATE,
    (S.REAUTH_AUTHENTICATE, E.AUTHENTICATE_REQUEST): S.REAUTH_AUTHENTICATE,
    (S.REAUTH_AUTHENTICATE, E.MECHANISM_COMPLETE): S.AUTHENTICATED,
}


def transition(state: SaslState, event: SaslEvent) -> SaslState:
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalSaslStateError(
            f"{event.value.replace('_', ' ')} is not allowed while the connection's "
            f"authentication is at {state.value.replace('_', ' ')}"
        ) from None
