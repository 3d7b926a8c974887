"""What a SASL server mechanism asks of the connection that drives it, one step at a time.

The mechanisms are sans-I/O: a step either carries bytes for the client, asks the driver to
read a user's credentials from ZooKeeper, or ends the exchange with the authenticated user.
:mod:`pafka.security.sasl_mechanisms` is the interface the broker uses.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.errors import SaslAuthenticationFailedError


@dataclass(frozen=True)
class Challenge:
    """Send ``data`` to the client and expect another token."""

    data: bytes


@dataclass(frozen=True)
class NeedCredentials:
    """Read ``/config/users/{user}`` and hand its config to ``provide()``."""

    user: str


@dataclass(frozen=True)
class Authenticated:
    """Done: ``user`` is the principal's name, ``data`` the server's final message."""

    user: str
    data: bytes


ServerStep = Challenge | NeedCredentials | Authenticated


def invalid_credentials(mechanism: str) -> SaslAuthenticationFailedError:
    """The one failure for a wrong password and an unknown user alike (Kafka's wording)."""
    return SaslAuthenticationFailedError(
        "Authentication failed during authentication due to invalid credentials with SASL "
        f"mechanism {mechanism}"
    )
