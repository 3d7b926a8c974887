"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554, v0) on pafka's own
client, as Kafka's admin client uses them.

A password is salted here, as ``Admin.alterUserScramCredentials`` does: a random salt, the
salted password (PBKDF2, off the event loop), and only those two sent; the broker derives and
stores the keys. A whole-request error is raised as its exception; one user's error too,
naming the user (a user without credentials is RESOURCE_NOT_FOUND).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any

from pafka.client.cluster import ClusterClient
from pafka.errors import for_code
from pafka.protocol.messages import ApiKey, request_class
from pafka.security.scram_credentials import (
    MECHANISM_TYPES,
    SALT_BYTES,
    check_iterations,
    hash_name,
    salted_password,
)

VERSION = 0
MECHANISM_CODES = {name: code for code, name in MECHANISM_TYPES.items()}


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: str
    iterations: int


@dataclass(frozen=True)
class UserCredentials:
    user: str
    credentials: tuple[CredentialInfo, ...]


def _check(answer: Any, what: str) -> None:
    if answer.error_code:
        detail = f"{what}: {answer.error_message}" if answer.error_message else what
        raise for_code(answer.error_code, detail)


async def describe(cluster: ClusterClient, users: list[str] | None = None) -> list[UserCredentials]:
    """Every user with a credential (``users`` None), or those named, in the broker's order."""
    cls = request_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)[VERSION]
    wanted = None if users is None else [cls.UserName(name=u) for u in users]
    response = await cluster.call_any(
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, VERSION, cls(users=wanted)
    )
    _check(response, "describing SCRAM credentials")
    described = []
    for result in response.results:
        _check(result, f"describing {result.user}")
        infos = tuple(
            CredentialInfo(MECHANISM_TYPES.get(i.mechanism, "UNKNOWN"), i.iterations)
            for i in result.credential_infos
        )
        described.append(UserCredentials(result.user, infos))
    return described


async def upsert(
    cluster: ClusterClient, user: str, mechanism: str, password: str, iterations: int
) -> None:
    """Create or replace ``user``'s credential of ``mechanism`` from ``password``."""
    hash_name(mechanism)  # an unknown mechanism is refused before any work
    check_iterations(iterations)
    salt = os.urandom(SALT_BYTES)
    salted = await asyncio.to_thread(salted_password, mechanism, password, salt, iterations)
    cls = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)[VERSION]
    change = cls.ScramCredentialUpsertion(
        name=user,
        mechanism=MECHANISM_CODES[mechanism],
        iterations=iterations,
        salt=salt,
        salted_password=salted,
    )
    await _alter(cluster, cls(deletions=[], upsertions=[change]), user)


async def delete(cluster: ClusterClient, user: str, mechanism: str) -> None:
    """Delete ``user``'s credential of ``mechanism``."""
    hash_name(mechanism)
    cls = request_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)[VERSION]
    change = cls.ScramCredentialDeletion(name=user, mechanism=MECHANISM_CODES[mechanism])
    await _alter(cluster, cls(deletions=[change], upsertions=[]), user)


async def _alter(cluster: ClusterClient, body: Any, user: str) -> None:
    response = await cluster.call_any(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, VERSION, body)
    for result in response.results:
        _check(result, f"altering {user}'s SCRAM credentials")
