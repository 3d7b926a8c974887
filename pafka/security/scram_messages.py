"""The four SCRAM messages (RFC 5802 §7), parsed and built; sans-I/O.

::

    client-first  gs2-header client-first-bare      gs2-header = "n," [ "a=" saslname ] ","
                  client-first-bare = "n=" saslname ",r=" c-nonce ["," extensions]
    server-first  "r=" c-nonce s-nonce ",s=" base64(salt) ",i=" iterations ["," extensions]
    client-final  "c=" base64(gs2-header) ",r=" nonce ["," extensions] ",p=" base64(proof)
    server-final  "v=" base64(ServerSignature)  |  "e=" server-error-value

A saslname escapes ``,`` as ``=2C`` and ``=`` as ``=3D``. Only gs2 flag ``n`` (no channel
binding) is accepted, as Kafka; a mandatory extension (``m=``) is refused. Every malformed
message raises ``SaslAuthenticationFailedError`` naming what is wrong, never the secret parts.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.errors import SaslAuthenticationFailedError
from pafka.security.scram_credentials import b64decode_strict, b64encode


def failed(what: str) -> SaslAuthenticationFailedError:
    return SaslAuthenticationFailedError(f"Authentication failed: {what}")


def escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_name(saslname: str) -> str:
    """RFC 5802's saslname: ``=`` only as ``=2C`` or ``=3D``, never empty, no NUL."""
    if not saslname or "\0" in saslname:
        raise failed("a SCRAM user name is empty or holds NUL")
    parts = saslname.split("=")
    out = [parts[0]]
    for part in parts[1:]:
        code, rest = part[:2], part[2:]
        if code not in ("2C", "3D"):
            raise failed("a SCRAM user name holds '=' not followed by 2C or 3D")
        out.append(("," if code == "2C" else "=") + rest)
    return "".join(out)


def text(token: bytes) -> str:
    try:
        return token.decode("utf-8")
    except UnicodeDecodeError:
        raise failed("a SCRAM message is not UTF-8") from None


def _unb64(value: str, what: str) -> bytes:
    decoded = b64decode_strict(value)
    if decoded is None:
        raise failed(f"{what} is not base64")
    return decoded


def _printable(nonce: str) -> bool:
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def _attribute(part: str, name: str, what: str) -> str:
    if not part.startswith(f"{name}="):
        raise failed(f"the {what} lacks its '{name}=' attribute where expected")
    return part[2:]


def _extensions(parts: list[str], what: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key.isascii() or not key.isalpha():
            raise failed(f"the {what} has a malformed extension")
        found[key] = value
    return found


@dataclass(frozen=True)
class ClientFirst:
    gs2_header: str
    authzid: str
    user: str
    nonce: str
    bare: str
    extensions: dict[str, str]


def parse_client_first(message: str) -> ClientFirst:
    if not message.startswith("n,"):
        raise failed("SCRAM channel binding is not supported (gs2 header must be 'n')")
    authz_part, sep, bare = message[2:].partition(",")
    if not sep:
        raise failed("the SCRAM client first message is truncated")
    authzid = unescape_name(_attribute(authz_part, "a", "gs2 header")) if authz_part else ""
    parts = bare.split(",")
    if parts[0].startswith("m="):
        raise failed("the SCRAM client first message asks for a mandatory extension")
    if len(parts) < 2:
        raise failed("the SCRAM client first message is truncated")
    user = unescape_name(_attribute(parts[0], "n", "client first message"))
    nonce = _attribute(parts[1], "r", "client first message")
    if not _printable(nonce):
        raise failed("the SCRAM client nonce is empty or not printable ASCII")
    extensions = _extensions(parts[2:], "client first message")
    return ClientFirst(f"n,{authz_part},", authzid, user, nonce, bare, extensions)


@dataclass(frozen=True)
class ServerFirst:
    nonce: str
    salt: bytes
    iterations: int


def server_first(nonce: str, salt: bytes, iterations: int) -> str:
    return f"r={nonce},s={b64encode(salt)},i={iterations}"


def parse_server_first(message: str) -> ServerFirst:
    parts = message.split(",")
    if parts[0].startswith("m="):
        raise failed("the SCRAM server first message asks for a mandatory extension")
    if len(parts) < 3:
        raise failed("the SCRAM server first message is truncated")
    nonce = _attribute(parts[0], "r", "server first message")
    salt = _unb64(_attribute(parts[1], "s", "server first message"), "the salt")
    iterations = _attribute(parts[2], "i", "server first message")
    _extensions(parts[3:], "server first message")
    if not _printable(nonce):
        raise failed("the server nonce is empty or not printable ASCII")
    if not iterations.isascii() or not iterations.isdigit():
        raise failed("the SCRAM iteration count is not a number")
    return ServerFirst(nonce, salt, int(iterations))


@dataclass(frozen=True)
class ClientFinal:
    channel_binding: bytes
    nonce: str
    without_proof: str
    proof: bytes


def client_final_without_proof(gs2_header: str, nonce: str) -> str:
    return f"c={b64encode(gs2_header.encode())},r={nonce}"


def parse_client_final(message: str) -> ClientFinal:
    without_proof, sep, proof = message.rpartition(",p=")
    parts = without_proof.split(",")
    if not sep or len(parts) < 2:
        raise failed("the SCRAM client final message is truncated")
    binding = _unb64(_attribute(parts[0], "c", "client final message"), "channel binding")
    nonce = _attribute(parts[1], "r", "client final message")
    _extensions(parts[2:], "client final message")
    return ClientFinal(binding, nonce, without_proof, _unb64(proof, "the client proof"))


def parse_server_final(message: str) -> bytes:
    """The server signature; an ``e=`` error raises it."""
    first = message.split(",")[0]
    if first.startswith("e="):
        raise SaslAuthenticationFailedError(f"Authentication failed: server says {first[2:]}")
    return _unb64(_attribute(first, "v", "server final message"), "the server signature")
