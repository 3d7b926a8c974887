"""SASL/PLAIN (RFC 4616), checked against the user's stored SCRAM credential.

The client sends ``authzid NUL authcid NUL passwd`` in UTF-8 in one message. As Kafka's
``PlainSaslServer``: exactly three fields, a non-empty user and password, and an authzid that is
empty or the user itself. pafka keeps one credential store: the password is salted with the
user's SCRAM-SHA-512 credential (else SCRAM-SHA-256) and its stored key recomputed and compared
in constant time, so PLAIN and SCRAM accept the same passwords. An unknown user costs the same
work (a decoy credential) and fails with the same message as a wrong password.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
from collections.abc import Mapping

from pafka.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from pafka.security.sasl_steps import (
    Authenticated,
    NeedCredentials,
    ServerStep,
    invalid_credentials,
)
from pafka.security.scram_credentials import (
    HASHES,
    ScramCredential,
    decoy_credential,
    salted_password,
    stored_credential,
)

PLAIN = "PLAIN"
# The stronger credential first; checking a PLAIN password needs only one of them.
CREDENTIAL_PREFERENCE = ("SCRAM-SHA-512", "SCRAM-SHA-256")


def plain_message(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def parse_plain(token: bytes) -> tuple[str, str]:
    """The (user, password) of a PLAIN message, refusing what Kafka refuses."""
    try:
        text = token.decode("utf-8")
    except UnicodeDecodeError:
        raise SaslAuthenticationFailedError("Invalid SASL/PLAIN response: not UTF-8") from None
    fields = text.split("\0")
    if len(fields) != 3:
        raise SaslAuthenticationFailedError(
            f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(fields)}"
        )
    authzid, user, password = fields
    if not user:
        raise SaslAuthenticationFailedError("Authentication failed: username not specified")
    if not password:
        raise SaslAuthenticationFailedError("Authentication failed: password not specified")
    if authzid and authzid != user:
        raise SaslAuthenticationFailedError(
            "Authentication failed: Client requested an authorization id that is different from "
            "username"
        )
    return user, password


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    salted = salted_password(mechanism, password, credential.salt, credential.iterations)
    digest = HASHES[mechanism]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return hmac.compare_digest(hashlib.new(digest, client_key).digest(), credential.stored_key)


def check_password(user: str, password: str, user_config: Mapping[str, str] | None) -> bool:
    for mechanism in CREDENTIAL_PREFERENCE:
        credential = stored_credential(mechanism, user_config)
        if credential is not None:
            return password_matches(mechanism, credential, password)
    decoy = CREDENTIAL_PREFERENCE[0]
    password_matches(decoy, decoy_credential(decoy, user), password)
    return False


class PlainState(enum.Enum):
    RECEIVE = "receive"
    NEED_CREDENTIALS = "need credentials"
    COMPLETE = "complete"
    FAILED = "failed"


class PlainServer:
    name = PLAIN

    def __init__(self) -> None:
        self.state = PlainState.RECEIVE
        self._user = ""
        self._password = ""

    def _illegal(self, call: str) -> IllegalSaslStateError:
        state, self.state = self.state, PlainState.FAILED
        return IllegalSaslStateError(f"unexpected {call}() in SASL/PLAIN state {state.value}")

    def receive(self, token: bytes) -> ServerStep:
        if self.state is not PlainState.RECEIVE:
            raise self._illegal("receive")
        try:
            self._user, self._password = parse_plain(token)
        except SaslAuthenticationFailedError:
            self.state = PlainState.FAILED
            raise
        self.state = PlainState.NEED_CREDENTIALS
        return NeedCredentials(self._user)

    def provide(self, user_config: Mapping[str, str] | None) -> ServerStep:
        if self.state is not PlainState.NEED_CREDENTIALS:
            raise self._illegal("provide")
        password, self._password = self._password, ""
        if not check_password(self._user, password, user_config):
            self.state = PlainState.FAILED
            raise invalid_credentials(PLAIN)
        self.state = PlainState.COMPLETE
        return Authenticated(self._user, b"")


class PlainClient:
    """PLAIN's client: one message; the server's empty answer completes it."""

    name = PLAIN

    def __init__(self, user: str, password: str) -> None:
        self._message = plain_message(user, password)
        self._sent = False
        self._complete = False

    @property
    def complete(self) -> bool:
        return self._complete

    def initial(self) -> bytes:
        if self._sent:
            raise IllegalSaslStateError("SASL/PLAIN client already sent its message")
        self._sent = True
        return self._message

    def receive(self, challenge: bytes) -> bytes | None:
        if not self._sent or self._complete:
            raise IllegalSaslStateError("unexpected challenge to the SASL/PLAIN client")
        if challenge:
            raise SaslAuthenticationFailedError("SASL/PLAIN expects no challenge from the server")
        self._complete = True
        return None
