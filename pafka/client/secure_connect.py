"""Opening a Kafka connection as the client's security protocol asks: TCP, then TLS, then the
SASL exchange (SaslHandshake v1, then SaslAuthenticate until the mechanism completes), all within
one connection-setup deadline.

The broker may bound the session (``connections.max.reauth.ms``, KIP-368): the lifetime it
answers is returned, and pafka's connections retire themselves before it ends (a new
connection authenticates afresh), rather than re-authenticating in the middle of a pipelined
stream.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from pafka.errors import (
    IllegalSaslStateError,
    ProtocolError,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
    for_code,
)
from pafka.net.sockets import KeepAlive, open_connection
from pafka.protocol.messages import decode_response, encode_request, request_class
from pafka.protocol.versions import ApiKey
from pafka.security.client_security import ClientSecurity
from pafka.security.sasl_mechanisms import client_mechanism

_SIZE = struct.Struct(">i")
HANDSHAKE_VERSION = 1
AUTHENTICATE_VERSION = 2
# A SASL answer is a few hundred bytes; anything near this is not one.
MAX_SASL_FRAME_BYTES = 1024 * 1024


async def secure_connection(
    host: str,
    port: int,
    security: ClientSecurity,
    *,
    client_id: str,
    setup_timeout_s: float,
    probe_interval_s: float | None = None,
    keepalive: KeepAlive | None = None,
    user_timeout_ms: int | None = None,
    limit: int = 2**16,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int]:
    """Connect, secure and authenticate within ``setup_timeout_s``; returns the streams and the
    session lifetime the broker set in ms (0: unbounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + setup_timeout_s
    reader, writer = await open_connection(
        host,
        port,
        setup_timeout_s=setup_timeout_s,
        probe_interval_s=probe_interval_s,
        keepalive=keepalive,
        user_timeout_ms=user_timeout_ms,
        limit=limit,
        ssl_context=security.ssl_context(),
    )
    if not security.protocol.uses_sasl:
        return reader, writer, 0
    try:
        async with asyncio.timeout_at(deadline):
            lifetime_ms = await _authenticate(reader, writer, security, client_id)
    except BaseException:
        writer.close()
        raise
    return reader, writer, lifetime_ms


async def _authenticate(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    security: ClientSecurity,
    client_id: str,
) -> int:
    handshake = request_class(ApiKey.SASL_HANDSHAKE)(mechanism=security.sasl_mechanism)
    answer = await _round_trip(
        reader, writer, ApiKey.SASL_HANDSHAKE, HANDSHAKE_VERSION, handshake, 1, client_id
    )
    if answer.error_code:
        if answer.error_code == UnsupportedSaslMechanismError.code:
            raise UnsupportedSaslMechanismError(
                f"the broker does not enable {security.sasl_mechanism}; it offers "
                f"{', '.join(answer.mechanisms) or 'none'}"
            )
        raise for_code(answer.error_code, "SASL handshake refused")
    mechanism = client_mechanism(
        security.sasl_mechanism, security.sasl_username, security.sasl_password
    )
    token: bytes | None = mechanism.initial()
    correlation_id = 2
    lifetime_ms = 0
    while token is not None:
        body = request_class(ApiKey.SASL_AUTHENTICATE)(auth_bytes=token)
        answer = await _round_trip(
            reader,
            writer,
            ApiKey.SASL_AUTHENTICATE,
            AUTHENTICATE_VERSION,
            body,
            correlation_id,
            client_id,
        )
        correlation_id += 1
        if answer.error_code:
            raise _auth_error(answer.error_code, answer.error_message)
        lifetime_ms = int(answer.session_lifetime_ms)
        token = mechanism.receive(bytes(answer.auth_bytes))
        if token is None and not mechanism.complete:
            raise IllegalSaslStateError("the SASL exchange ended before the mechanism completed")
    return lifetime_ms


def _auth_error(code: int, message: str | None) -> Exception:
    if code == SaslAuthenticationFailedError.code:
        return SaslAuthenticationFailedError(message or "authentication failed")
    return for_code(code, message or "SASL authentication refused")


async def _round_trip(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    api: ApiKey,
    version: int,
    body: Any,
    correlation_id: int,
    client_id: str,
) -> Any:
    writer.write(encode_request(api, version, body, correlation_id, client_id))
    await writer.drain()
    try:
        (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
        if not 4 <= size <= MAX_SASL_FRAME_BYTES:
            raise ProtocolError(f"{api.name} answered with a frame of {size} bytes")
        frame = await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        # Kafka closes the connection on a refused authentication with handshake v0 clients;
        # later versions get the error, but a closed stream means the same.
        raise SaslAuthenticationFailedError(
            f"the broker closed the connection during {api.name}"
        ) from exc
    (got,) = _SIZE.unpack_from(frame, 0)
    if got != correlation_id:
        raise ProtocolError(f"expected correlation id {correlation_id}, got {got}")
    return decode_response(api, version, frame)
