"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), as Kafka 2.8's
``ZkAdminManager`` answers them.

The client salts the password itself and sends the salt and the salted password; the broker
stores only the derived keys (``ScramCredential.from_salted_password``) in the user's entity
config, through :mod:`pafka.admin.scram_users`. Alter answers one result per user: a user with
any invalid part (an empty name: UNACCEPTABLE_CREDENTIAL; an unknown mechanism:
UNSUPPORTED_SASL_MECHANISM; iterations outside 4096..16384: UNACCEPTABLE_CREDENTIAL), a
mechanism named twice (DUPLICATE_RESOURCE) or a deletion of a credential it lacks
(RESOURCE_NOT_FOUND) changes nothing; the other users' changes are each one ZooKeeper write.

With an authorizer, describing needs DESCRIBE on the cluster and altering ALTER on it, as in
Kafka: anyone else gets CLUSTER_AUTHORIZATION_FAILED (for the whole request, or for every user
named), so no client may read which users exist or set another user's password.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pafka.admin import scram_users
from pafka.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    PafkaError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnknownServerError,
    UnsupportedSaslMechanismError,
)
from pafka.protocol.messages import response_class
from pafka.security.acls import Operation
from pafka.security.scram_credentials import (
    MAX_ITERATIONS,
    MECHANISM_TYPES,
    MIN_ITERATIONS,
    ScramCredential,
)
from services.broker.handlers.authorization import cluster_allowed
from services.broker.handlers.context import RequestContext

MECHANISM_CODES = {name: code for code, name in MECHANISM_TYPES.items()}
EMPTY_USER = "Username must not be empty"


def _upsertion_error(upsertion: Any) -> PafkaError | None:
    if not upsertion.name:
        return UnacceptableCredentialError(EMPTY_USER)
    if upsertion.mechanism not in MECHANISM_TYPES:
        return UnsupportedSaslMechanismError("Unknown SCRAM mechanism")
    if upsertion.iterations > MAX_ITERATIONS:
        return UnacceptableCredentialError("Too many iterations")
    if upsertion.iterations < MIN_ITERATIONS:
        return UnacceptableCredentialError("Too few iterations")
    if not upsertion.salt or not upsertion.salted_password:
        return UnacceptableCredentialError("The salt and the salted password must not be empty")
    return None


def _deletion_error(deletion: Any) -> PafkaError | None:
    if not deletion.name:
        return UnacceptableCredentialError(EMPTY_USER)
    if deletion.mechanism not in MECHANISM_TYPES:
        return UnsupportedSaslMechanismError("Unknown SCRAM mechanism")
    return None


def refusals(deletions: list[Any], upsertions: list[Any]) -> dict[str, PafkaError]:
    """Users the request may not change, with why (Kafka's checks and precedence); pure."""
    refused: dict[str, PafkaError] = {}
    for deletion in deletions:
        if (error := _deletion_error(deletion)) is not None:
            refused[deletion.name] = error
    for upsertion in upsertions:
        if (error := _upsertion_error(upsertion)) is not None:
            refused[upsertion.name] = error
    pairs = Counter(
        (item.name, item.mechanism)
        for item in [*deletions, *upsertions]
        if item.name not in refused
    )
    for (user, _), count in pairs.items():
        if count > 1:
            refused[user] = DuplicateResourceError(
                "A user credential cannot be altered twice in the same request"
            )
    return refused


def _changes(user: str, deletions: list[Any], upsertions: list[Any]) -> scram_users.Change:
    changes = [
        scram_users.delete(MECHANISM_TYPES[d.mechanism]) for d in deletions if d.name == user
    ]
    for u in upsertions:
        if u.name == user:
            mechanism = MECHANISM_TYPES[u.mechanism]
            credential = ScramCredential.from_salted_password(
                mechanism, bytes(u.salted_password), bytes(u.salt), u.iterations
            )
            changes.append(scram_users.upsert(mechanism, credential))
    return scram_users.combined(changes)


async def handle_alter_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    deletions, upsertions = list(request.deletions or []), list(request.upsertions or [])
    if cluster_allowed(ctx, Operation.ALTER):
        refused = refusals(deletions, upsertions)
    else:
        denied = ClusterAuthorizationFailedError("Cluster authorization failed.")
        refused = {item.name: denied for item in [*deletions, *upsertions]}
    outcome: dict[str, PafkaError | None] = dict(refused)
    users = dict.fromkeys(item.name for item in [*deletions, *upsertions])
    zk = ctx.broker.zk
    for user in users:
        if user in refused:
            continue
        try:
            await zk.run(
                scram_users.alter_user, zk.kazoo, user, _changes(user, deletions, upsertions)
            )
            outcome[user] = None
        except PafkaError as exc:
            outcome[user] = exc
    results = [
        cls.AlterUserScramCredentialsResult(
            user=user,
            error_code=ctx.error(exc.code) if exc else 0,
            error_message=exc.message if exc else None,
        )
        for user, exc in outcome.items()
    ]
    return cls(throttle_time_ms=0, results=results)


def _failed(cls: Any, user: str, code: int, message: str) -> Any:
    return cls.DescribeUserScramCredentialsResult(
        user=user, error_code=code, error_message=message, credential_infos=[]
    )


def _described(cls: Any, user: str, config: dict[str, str]) -> Any:
    try:
        infos = scram_users.credential_infos(config)
    except PafkaError as exc:  # a malformed credential someone wrote: this user fails alone
        return _failed(cls, user, UnknownServerError.code, exc.message)
    if not infos:
        return _failed(
            cls,
            user,
            ResourceNotFoundError.code,
            f"Attempt to describe a user credential that does not exist: {user}",
        )
    entry = cls.DescribeUserScramCredentialsResult
    return entry(
        user=user,
        error_code=0,
        error_message=None,
        credential_infos=[
            entry.CredentialInfo(mechanism=MECHANISM_CODES[i.mechanism], iterations=i.iterations)
            for i in infos
        ],
    )


def _read_users(zk: Any, users: list[str]) -> dict[str, dict[str, str]]:
    return {user: scram_users.user_config(zk, user)[0] for user in users}


async def _describe(ctx: RequestContext, cls: Any, wanted: list[str]) -> list[Any]:
    zk = ctx.broker.zk
    if not wanted:  # null or empty: every user with a credential, by name
        configs = await zk.run(scram_users.scram_users, zk.kazoo)
        return [_described(cls, user, configs[user]) for user in sorted(configs)]
    counts = Counter(wanted)
    configs = await zk.run(_read_users, zk.kazoo, [u for u in counts if u and counts[u] == 1])
    results = []
    for user in counts:  # each user once, in the order asked
        if not user:
            results.append(_failed(cls, user, ResourceNotFoundError.code, EMPTY_USER))
        elif counts[user] > 1:
            message = (
                "Cannot describe SCRAM credentials for the same user twice in a single "
                f"request: {user}"
            )
            results.append(_failed(cls, user, DuplicateResourceError.code, message))
        else:
            results.append(_described(cls, user, configs[user]))
    return results


async def handle_describe_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    cls = response_class(ctx.api_key, ctx.api_version)
    wanted = [u.name for u in request.users or []]
    try:
        if not cluster_allowed(ctx, Operation.DESCRIBE):
            raise ClusterAuthorizationFailedError("Cluster authorization failed.")
        results = await _describe(ctx, cls, wanted)
    except PafkaError as exc:
        # As Kafka answers a refused request: the error, and again for each user asked (a
        # client that pairs users with results finds every one of them).
        return cls(
            throttle_time_ms=0,
            error_code=ctx.error(exc.code),
            error_message=exc.message,
            results=[_failed(cls, "", exc.code, exc.message) for _ in wanted],
        )
    for result in results:
        ctx.error(result.error_code)
    return cls(throttle_time_ms=0, error_code=0, error_message=None, results=results)
