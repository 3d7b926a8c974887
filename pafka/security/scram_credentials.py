"""Stored SCRAM credentials, as Kafka keeps them in ``/config/users/{user}``.

A credential never holds the password: only the salt, the iteration count and two keys derived
from the salted password (RFC 5802 §3)::

    SaltedPassword = PBKDF2-HMAC-H(password, salt, iterations)
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

Its string form is Kafka's ``ScramCredentialUtils.credentialToString``, the value of the
mechanism's key (``SCRAM-SHA-512``) in the user's entity config::

    salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass

from pafka.errors import (
    InvalidRequestError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)

# Kafka's ScramMechanism: the digest of each mechanism and its fewest iterations; the most
# iterations an admin may ask for is ZkAdminManager's bound.
HASHES: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's public ScramMechanism type codes, as the KIP-554 admin APIs carry them (0: UNKNOWN).
MECHANISM_TYPES: dict[int, str] = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = MIN_ITERATIONS
# Kafka's own tools may have stored more than MAX_ITERATIONS; a server still verifies those,
# up to a bound that keeps one login (PBKDF2 per PLAIN attempt) from burning seconds of CPU.
VERIFY_MAX_ITERATIONS = 1 << 18
SALT_BYTES = 24
_FIELDS = ("salt", "stored_key", "server_key", "iterations")


class InvalidScramCredentialError(InvalidRequestError):
    """A credential string that is not Kafka's form; the message never quotes the keys."""


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __str__(self) -> str:
        return (
            f"salt={b64encode(self.salt)},stored_key={b64encode(self.stored_key)},"
            f"server_key={b64encode(self.server_key)},iterations={self.iterations}"
        )

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations}, salt={b64encode(self.salt)})"

    @classmethod
    def parse(cls, text: str) -> ScramCredential:
        """Kafka's ``credentialFromString``: exactly the four keys, base64 keys, a decimal count."""
        props: dict[str, str] = {}
        for token in text.split(","):
            key, sep, value = token.partition("=")
            if not sep or not key:
                raise InvalidScramCredentialError("SCRAM credential is not key=value pairs")
            if key in props:
                raise InvalidScramCredentialError(f"SCRAM credential repeats {key!r}")
            props[key] = value
        if set(props) != set(_FIELDS):
            raise InvalidScramCredentialError(
                f"SCRAM credential needs exactly {', '.join(_FIELDS)}; "
                f"has {', '.join(sorted(props))}"
            )
        if not props["iterations"].isascii() or not props["iterations"].isdigit():
            raise InvalidScramCredentialError("SCRAM credential iterations is not a number")
        return cls(
            salt=_unb64(props["salt"], "salt"),
            stored_key=_unb64(props["stored_key"], "stored_key"),
            server_key=_unb64(props["server_key"], "server_key"),
            iterations=int(props["iterations"]),
        )

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salted_password: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        """Kafka's ``ScramFormatter.generateCredential``: what AlterUserScramCredentials stores."""
        digest = hash_name(mechanism)
        client_key = hmac.new(salted_password, b"Client Key", digest).digest()
        return cls(
            salt=salt,
            stored_key=hashlib.new(digest, client_key).digest(),
            server_key=hmac.new(salted_password, b"Server Key", digest).digest(),
            iterations=iterations,
        )

    @classmethod
    def from_password(
        cls,
        mechanism: str,
        password: str,
        iterations: int = DEFAULT_ITERATIONS,
        salt: bytes | None = None,
    ) -> ScramCredential:
        """A new credential (a random salt unless given), as ``kafka-configs --add-config``."""
        check_iterations(iterations)
        salt = os.urandom(SALT_BYTES) if salt is None else salt
        return cls.from_salted_password(
            mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
        )


def hash_name(mechanism: str) -> str:
    try:
        return HASHES[mechanism]
    except KeyError:
        raise UnsupportedSaslMechanismError(
            f"unknown SCRAM mechanism {mechanism!r}; one of {', '.join(HASHES)}"
        ) from None


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    # Kafka normalizes a password to its UTF-8 bytes only (no SASLprep); so do we.
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode(), salt, iterations)


def check_iterations(iterations: int) -> None:
    if iterations < MIN_ITERATIONS:
        raise UnacceptableCredentialError(f"too few iterations: {iterations} < {MIN_ITERATIONS}")
    if iterations > MAX_ITERATIONS:
        raise UnacceptableCredentialError(f"too many iterations: {iterations} > {MAX_ITERATIONS}")


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode_strict(text: str) -> bytes | None:
    """Standard base64 with its padding, as Java's ``Base64.getDecoder`` takes it; else None."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None


def _unb64(text: str, name: str) -> bytes:
    decoded = b64decode_strict(text)
    if decoded is None:
        raise InvalidScramCredentialError(f"SCRAM credential {name} is not base64")
    return decoded


# A salt for users without a credential, stable per user for this process, so a server's first
# message looks the same whether or not the user exists (no user enumeration by salt).
_DECOY_KEY = os.urandom(32)


def decoy_credential(mechanism: str, user: str) -> ScramCredential:
    """A credential no password matches (random keys), for an unknown user or an unusable one."""
    salt = hmac.new(_DECOY_KEY, f"{mechanism}\0{user}".encode(), "sha256").digest()[:SALT_BYTES]
    size = hashlib.new(hash_name(mechanism)).digest_size
    return ScramCredential(salt, os.urandom(size), os.urandom(size), DEFAULT_ITERATIONS)


def stored_credential(mechanism: str, config: Mapping[str, str] | None) -> ScramCredential | None:
    """The user's usable credential for ``mechanism`` in its entity config, or None."""
    text = (config or {}).get(mechanism)
    if text is None:
        return None
    try:
        credential = ScramCredential.parse(text)
    except InvalidScramCredentialError:
        return None
    if not MIN_ITERATIONS <= credential.iterations <= VERIFY_MAX_ITERATIONS:
        return None
    return credential
