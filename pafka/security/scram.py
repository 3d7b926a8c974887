"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server and client, sans-I/O.

As Kafka's ``ScramSaslServer`` and ``ScramSaslClient``: no channel binding, user names and
passwords as their UTF-8 bytes (no SASLprep, as Kafka), the client's nonce extended by the
server's; the messages are :mod:`pafka.security.scram_messages`'. The proofs::

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage);  ClientProof = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

The server checks H(ClientProof XOR ClientSignature) against the stored key in constant time.
Kafka's ``tokenauth`` extension (delegation tokens) is refused: pafka has none; other
extensions are ignored, as Kafka. An unknown user gets a server-first message like any other
(a stable decoy salt) and fails at the proof, with the same message as a wrong password.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping

from pafka.errors import IllegalSaslStateError, SaslAuthenticationFailedError
from pafka.security import scram_messages as msg
from pafka.security.sasl_steps import (
    Authenticated,
    Challenge,
    NeedCredentials,
    ServerStep,
    invalid_credentials,
)
from pafka.security.scram_credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    b64encode,
    decoy_credential,
    hash_name,
    salted_password,
    stored_credential,
)

GS2_HEADER = "n,,"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


class _Hash:
    def __init__(self, mechanism: str) -> None:
        self.name = hash_name(mechanism)

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.name).digest()

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.name, data).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


class ServerState(enum.Enum):
    RECEIVE_CLIENT_FIRST = "receive client first"
    NEED_CREDENTIALS = "need credentials"
    RECEIVE_CLIENT_FINAL = "receive client final"
    COMPLETE = "complete"
    FAILED = "failed"


# Which call each state accepts; any other call is out of order.
SERVER_CALLS: dict[ServerState, str] = {
    ServerState.RECEIVE_CLIENT_FIRST: "receive",
    ServerState.NEED_CREDENTIALS: "provide",
    ServerState.RECEIVE_CLIENT_FINAL: "receive",
}


class ScramServer:
    """One server-side SCRAM exchange; ``nonce`` is injectable for RFC test vectors."""

    def __init__(self, mechanism: str, nonce: Callable[[], str] = new_nonce) -> None:
        self.name = mechanism
        self._hash = _Hash(mechanism)
        self._nonce = nonce
        self.state = ServerState.RECEIVE_CLIENT_FIRST
        self._first: msg.ClientFirst | None = None
        self._server_first = ""
        self._combined_nonce = ""
        self._credential: ScramCredential | None = None
        self._known = False

    def _enter(self, call: str) -> None:
        if SERVER_CALLS.get(self.state) != call:
            state, self.state = self.state, ServerState.FAILED
            raise IllegalSaslStateError(
                f"unexpected {call}() in SASL/{self.name} state {state.value}"
            )

    def receive(self, token: bytes) -> ServerStep:
        self._enter("receive")
        try:
            if self.state is ServerState.RECEIVE_CLIENT_FIRST:
                return self._client_first(msg.text(token))
            return self._client_final(msg.text(token))
        except SaslAuthenticationFailedError:
            self.state = ServerState.FAILED
            raise

    def provide(self, user_config: Mapping[str, str] | None) -> ServerStep:
        self._enter("provide")
        assert self._first is not None  # the state table admits provide() only after it
        credential = stored_credential(self.name, user_config)
        self._known = credential is not None
        self._credential = credential or decoy_credential(self.name, self._first.user)
        self._combined_nonce = self._first.nonce + self._nonce()
        self._server_first = msg.server_first(
            self._combined_nonce, self._credential.salt, self._credential.iterations
        )
        self.state = ServerState.RECEIVE_CLIENT_FINAL
        return Challenge(self._server_first.encode("ascii"))

    def _client_first(self, message: str) -> ServerStep:
        first = msg.parse_client_first(message)
        if first.extensions.get("tokenauth", "").lower() == "true":
            raise msg.failed("delegation tokens (tokenauth) are not supported")
        if first.authzid and first.authzid != first.user:
            raise SaslAuthenticationFailedError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._first = first
        self.state = ServerState.NEED_CREDENTIALS
        return NeedCredentials(first.user)

    def _client_final(self, message: str) -> ServerStep:
        final = msg.parse_client_final(message)
        first, credential = self._first, self._credential
        assert first is not None and credential is not None  # set before this state
        if final.channel_binding != first.gs2_header.encode():
            raise msg.failed("the SCRAM channel binding does not repeat the gs2 header")
        if not hmac.compare_digest(final.nonce.encode(), self._combined_nonce.encode()):
            raise msg.failed("Invalid client nonce in the final client message")
        auth_message = f"{first.bare},{self._server_first},{final.without_proof}".encode()
        signature = self._hash.hmac(credential.stored_key, auth_message)
        if len(final.proof) != len(signature):
            raise invalid_credentials(self.name)
        client_key = _xor(final.proof, signature)
        matches = hmac.compare_digest(self._hash.digest(client_key), credential.stored_key)
        if not (matches and self._known):
            raise invalid_credentials(self.name)
        server_signature = self._hash.hmac(credential.server_key, auth_message)
        self._credential = None
        self.state = ServerState.COMPLETE
        return Authenticated(first.user, f"v={b64encode(server_signature)}".encode("ascii"))


class ClientState(enum.Enum):
    INITIAL = "initial"
    RECEIVE_SERVER_FIRST = "receive server first"
    RECEIVE_SERVER_FINAL = "receive server final"
    COMPLETE = "complete"
    FAILED = "failed"


class ScramClient:
    """One client-side SCRAM exchange; ``nonce`` is injectable for RFC test vectors."""

    def __init__(
        self, mechanism: str, user: str, password: str, nonce: Callable[[], str] = new_nonce
    ) -> None:
        self.name = mechanism
        self._hash = _Hash(mechanism)
        self._password = password
        self._client_nonce = nonce()
        self._client_first_bare = f"n={msg.escape_name(user)},r={self._client_nonce}"
        self.state = ClientState.INITIAL
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self.state is ClientState.COMPLETE

    def initial(self) -> bytes:
        if self.state is not ClientState.INITIAL:
            self.state = ClientState.FAILED
            raise IllegalSaslStateError(f"SASL/{self.name} client already started")
        self.state = ClientState.RECEIVE_SERVER_FIRST
        return (GS2_HEADER + self._client_first_bare).encode()

    def receive(self, challenge: bytes) -> bytes | None:
        if self.state not in (ClientState.RECEIVE_SERVER_FIRST, ClientState.RECEIVE_SERVER_FINAL):
            state, self.state = self.state, ClientState.FAILED
            raise IllegalSaslStateError(
                f"unexpected challenge in SASL/{self.name} state {state.value}"
            )
        try:
            if self.state is ClientState.RECEIVE_SERVER_FIRST:
                return self._server_first(msg.text(challenge))
            signature = msg.parse_server_final(msg.text(challenge))
        except SaslAuthenticationFailedError:
            self.state = ClientState.FAILED
            raise
        if not hmac.compare_digest(signature, self._server_signature):
            self.state = ClientState.FAILED
            raise msg.failed("the server's signature is wrong: it does not know the credential")
        self.state = ClientState.COMPLETE
        return None

    def _server_first(self, message: str) -> bytes:
        first = msg.parse_server_first(message)
        if not first.nonce.startswith(self._client_nonce) or first.nonce == self._client_nonce:
            raise msg.failed("the server nonce does not extend the client nonce")
        if not MIN_ITERATIONS <= first.iterations <= MAX_ITERATIONS:
            raise msg.failed(
                f"the server asks for {first.iterations} iterations, outside "
                f"{MIN_ITERATIONS}..{MAX_ITERATIONS}"
            )
        salted = salted_password(self.name, self._password, first.salt, first.iterations)
        client_key = self._hash.hmac(salted, b"Client Key")
        without_proof = msg.client_final_without_proof(GS2_HEADER, first.nonce)
        auth_message = f"{self._client_first_bare},{message},{without_proof}".encode()
        signature = self._hash.hmac(self._hash.digest(client_key), auth_message)
        server_key = self._hash.hmac(salted, b"Server Key")
        self._server_signature = self._hash.hmac(server_key, auth_message)
        self.state = ClientState.RECEIVE_SERVER_FINAL
        return f"{without_proof},p={b64encode(_xor(client_key, signature))}".encode()
