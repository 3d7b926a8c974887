"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), server and client, sans-I/O.

As Kafka's ``ScramSaslServer`` and ``ScramSaslClient``: no channel binding (gs2 header ``n,,``
or ``n,a=<user>,``), user names escaped (``,`` as ``=2C``, ``=`` as ``=3D``) and otherwise
their UTF-8 bytes (no SASLprep, as Kafka), the client's nonce extended by the server's. The
exchange::

    client-first  n,,n=<user>,r=<cnonce>[,ext=value...]
    server-first  r=<cnonce><snonce>,s=<base64 salt>,i=<iterations>
    client-final  c=biws,r=<cnonce><snonce>,p=<base64 ClientProof>
    server-final  v=<base64 ServerSignature>    (or e=<error>)

    AuthMessage     = client-first-bare "," server-first "," client-final-without-proof
    ClientSignature = HMAC(StoredKey, AuthMessage);  ClientProof = ClientKey XOR ClientSignature
    ServerSignature = HMAC(ServerKey, AuthMessage)

Kafka's ``tokenauth`` extension (delegation tokens) is refused: pafka has no delegation tokens.
An unknown user gets a server-first message like any other (a stable decoy salt) and fails at
the proof, with the same message as a wrong password.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable, Mapping

from pafka.errors import IllegalSaslStateError, SaslAuthenticationFailedError
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
    decoy_credential,
    hash_name,
    salted_password,
    stored_credential,
)

GS2_HEADER = "n,,"


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


def escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_name(saslname: str) -> str:
    """RFC 5802's saslname: ``=`` only as ``=2C`` or ``=3D``, never empty, no NUL."""
    if not saslname or "\0" in saslname:
        raise _bad("a SCRAM user name is empty or holds NUL")
    parts = saslname.split("=")
    out = [parts[0]]
    for part in parts[1:]:
        code, rest = part[:2], part[2:]
        if code not in ("2C", "3D"):
            raise _bad("a SCRAM user name holds '=' not followed by 2C or 3D")
        out.append(("," if code == "2C" else "=") + rest)
    return "".join(out)


def _bad(what: str) -> SaslAuthenticationFailedError:
    return SaslAuthenticationFailedError(f"Authentication failed: {what}")


def _text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise _bad("a SCRAM message is not UTF-8") from None


def _printable_nonce(nonce: str) -> bool:
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise _bad(f"{what} is not base64") from None


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _attribute(part: str, name: str, what: str) -> str:
    if not part.startswith(f"{name}="):
        raise _bad(f"the {what} lacks its '{name}=' attribute where expected")
    return part[2:]


def _extensions(parts: list[str], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.isascii() or not key.isalpha():
            raise _bad(f"the {what} has a malformed extension")
        found[key] = value
    return found


class _Hash:
    def __init__(self, mechanism: str) -> None:
        self.name = hash_name(mechanism)
        self.size = hashlib.new(self.name).digest_size

    def hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.name).digest()

    def digest(self, data: bytes) -> bytes:
        return hashlib.new(self.name, data).digest()


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
        self._user = ""
        self._gs2_header = ""
        self._client_first_bare = ""
        self._client_nonce = ""
        self._server_first = ""
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
                return self._client_first(_text(token))
            return self._client_final(_text(token))
        except SaslAuthenticationFailedError:
            self.state = ServerState.FAILED
            raise

    def provide(self, user_config: Mapping[str, str] | None) -> ServerStep:
        self._enter("provide")
        credential = stored_credential(self.name, user_config)
        self._known = credential is not None
        self._credential = credential or decoy_credential(self.name, self._user)
        nonce = self._client_nonce + self._nonce()
        self._server_first = (
            f"r={nonce},s={_b64(self._credential.salt)},i={self._credential.iterations}"
        )
        self.state = ServerState.RECEIVE_CLIENT_FINAL
        return Challenge(self._server_first.encode("ascii"))

    def _client_first(self, message: str) -> ServerStep:
        if not message.startswith("n,"):
            raise _bad("SCRAM channel binding is not supported (gs2 header must be 'n')")
        authz_part, sep, bare = message[2:].partition(",")
        if not sep:
            raise _bad("the SCRAM client first message is truncated")
        authzid = ""
        if authz_part:
            authzid = unescape_name(_attribute(authz_part, "a", "gs2 header"))
        parts = bare.split(",")
        if parts[0].startswith("m="):
            raise _bad("the SCRAM client first message asks for a mandatory extension")
        if len(parts) < 2:
            raise _bad("the SCRAM client first message is truncated")
        user = unescape_name(_attribute(parts[0], "n", "client first message"))
        nonce = _attribute(parts[1], "r", "client first message")
        if not _printable_nonce(nonce):
            raise _bad("the SCRAM client nonce is empty or not printable ASCII")
        extensions = _extensions(parts[2:], "client first message")
        if extensions.get("tokenauth", "").lower() == "true":
            raise _bad("delegation tokens (tokenauth) are not supported")
        if authzid and authzid != user:
            raise SaslAuthenticationFailedError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._user, self._client_nonce = user, nonce
        self._gs2_header = f"n,{authz_part},"
        self._client_first_bare = bare
        self.state = ServerState.NEED_CREDENTIALS
        return NeedCredentials(user)

    def _client_final(self, message: str) -> ServerStep:
        without_proof, sep, proof_b64 = message.rpartition(",p=")
        parts = without_proof.split(",")
        if not sep or len(parts) < 2:
            raise _bad("the SCRAM client final message is truncated")
        binding = _unb64(_attribute(parts[0], "c", "client final message"), "channel binding")
        nonce = _attribute(parts[1], "r", "client final message")
        _extensions(parts[2:], "client final message")
        proof = _unb64(proof_b64, "the client proof")
        if binding != self._gs2_header.encode():
            raise _bad("the SCRAM channel binding does not repeat the gs2 header")
        server_nonce = self._server_first[2:].partition(",")[0]
        if not hmac.compare_digest(nonce.encode(), server_nonce.encode()):
            raise _bad("Invalid client nonce in the final client message")
        credential = self._credential
        assert credential is not None  # set by provide(), which the state table requires
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self._hash.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise invalid_credentials(self.name)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        matches = hmac.compare_digest(self._hash.digest(client_key), credential.stored_key)
        if not (matches and self._known):
            raise invalid_credentials(self.name)
        server_signature = self._hash.hmac(credential.server_key, auth_message)
        self._credential = None
        self.state = ServerState.COMPLETE
        return Authenticated(self._user, f"v={_b64(server_signature)}".encode("ascii"))


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
        self._user = user
        self._password = password
        self._client_nonce = nonce()
        self.state = ClientState.INITIAL
        self._client_first_bare = ""
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self.state is ClientState.COMPLETE

    def initial(self) -> bytes:
        if self.state is not ClientState.INITIAL:
            self.state = ClientState.FAILED
            raise IllegalSaslStateError(f"SASL/{self.name} client already started")
        self._client_first_bare = f"n={escape_name(self._user)},r={self._client_nonce}"
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
                return self._server_first(_text(challenge))
            self._server_final(_text(challenge))
            return None
        except SaslAuthenticationFailedError:
            self.state = ClientState.FAILED
            raise

    def _server_first(self, message: str) -> bytes:
        parts = message.split(",")
        if parts[0].startswith("m="):
            raise _bad("the SCRAM server first message asks for a mandatory extension")
        if len(parts) < 3:
            raise _bad("the SCRAM server first message is truncated")
        nonce = _attribute(parts[0], "r", "server first message")
        salt = _unb64(_attribute(parts[1], "s", "server first message"), "the salt")
        iterations_text = _attribute(parts[2], "i", "server first message")
        _extensions(parts[3:], "server first message")
        if not nonce.startswith(self._client_nonce) or len(nonce) == len(self._client_nonce):
            raise _bad("the server nonce does not extend the client nonce")
        if not _printable_nonce(nonce):
            raise _bad("the server nonce is not printable ASCII")
        if not iterations_text.isascii() or not iterations_text.isdigit():
            raise _bad("the SCRAM iteration count is not a number")
        iterations = int(iterations_text)
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise _bad(
                f"the server asks for {iterations} iterations, outside "
                f"{MIN_ITERATIONS}..{MAX_ITERATIONS}"
            )
        salted = salted_password(self.name, self._password, salt, iterations)
        client_key = self._hash.hmac(salted, b"Client Key")
        without_proof = f"c={_b64(GS2_HEADER.encode())},r={nonce}"
        auth_message = f"{self._client_first_bare},{message},{without_proof}".encode()
        signature = self._hash.hmac(self._hash.digest(client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hash.hmac(
            self._hash.hmac(salted, b"Server Key"), auth_message
        )
        self.state = ClientState.RECEIVE_SERVER_FINAL
        return f"{without_proof},p={_b64(proof)}".encode()

    def _server_final(self, message: str) -> None:
        first = message.split(",")[0]
        if first.startswith("e="):
            raise SaslAuthenticationFailedError(f"Authentication failed: server says {first[2:]}")
        signature = _unb64(_attribute(first, "v", "server final message"), "the server signature")
        if not hmac.compare_digest(signature, self._server_signature):
            raise _bad("the server's signature is wrong: it does not know the credential")
        self.state = ClientState.COMPLETE
