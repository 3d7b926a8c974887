"""The SASL mechanisms a broker offers and pafka's client speaks: PLAIN, SCRAM-SHA-256/512.

The broker's SaslHandshake/SaslAuthenticate driver makes one :func:`server_mechanism` per
connection and feeds it the client's tokens; a :class:`NeedCredentials` step asks it to read
``/config/users/{user}`` (the entity config) and hand it to ``provide()``. pafka's client does
the same with :func:`client_mechanism`. Every failure is a ``SaslAuthenticationFailedError``
(a call out of order an ``IllegalSaslStateError``) whose message never tells an unknown user
from a wrong password; nothing else escapes a mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from pafka.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from pafka.security.plain import PLAIN, PlainClient, PlainServer
from pafka.security.sasl_steps import Authenticated, Challenge, NeedCredentials, ServerStep
from pafka.security.scram import ScramClient, ScramServer

__all__ = [
    "MECHANISMS",
    "Authenticated",
    "Challenge",
    "ClientMechanism",
    "NeedCredentials",
    "ServerMechanism",
    "ServerStep",
    "client_mechanism",
    "server_mechanism",
]

MECHANISMS: tuple[str, ...] = (PLAIN, "SCRAM-SHA-256", "SCRAM-SHA-512")


class ServerMechanism(Protocol):
    name: str

    def receive(self, token: bytes) -> ServerStep: ...

    def provide(self, user_config: Mapping[str, str] | None) -> ServerStep:
        """``user_config`` is the user's whole entity config, None for an unknown user; never
        returns NeedCredentials."""
        ...


class ClientMechanism(Protocol):
    name: str

    def initial(self) -> bytes: ...

    def receive(self, challenge: bytes) -> bytes | None:
        """The next token for the server; None once the exchange is complete."""
        ...

    @property
    def complete(self) -> bool: ...


def _unsupported(name: str) -> UnsupportedSaslMechanismError:
    return UnsupportedSaslMechanismError(
        f"Unsupported SASL mechanism {name}; this broker offers {', '.join(MECHANISMS)}"
    )


def server_mechanism(name: str) -> ServerMechanism:
    if name == PLAIN:
        return PlainServer()
    if name in MECHANISMS:
        return ScramServer(name)
    raise _unsupported(name)


def client_mechanism(name: str, user: str, password: str) -> ClientMechanism:
    if name not in MECHANISMS:
        raise _unsupported(name)
    try:
        (user + password).encode("utf-8")
    except UnicodeEncodeError:
        raise SaslAuthenticationFailedError(
            "the user name or password is not valid Unicode"
        ) from None
    if name == PLAIN:
        if "\0" in user or "\0" in password:
            raise SaslAuthenticationFailedError("a SASL/PLAIN user name or password holds NUL")
        return PlainClient(user, password)
    return ScramClient(name, user, password)
