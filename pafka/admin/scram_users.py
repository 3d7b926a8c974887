"""Users' SCRAM credentials in ZooKeeper, written as ``kafka-configs --zookeeper --alter
--entity-type users --add-config 'SCRAM-SHA-512=[password=...]'`` writes them.

A user's credentials are keys (``SCRAM-SHA-256``, ``SCRAM-SHA-512``) of its entity config,
``/config/users/{sanitized user}``, beside the keys others keep there (quotas). Every change
reads the config with its znode version, computes the new one and writes it together with a
``/config/changes/config_change_N`` notification in one transaction that fails if the config
changed since the read; then it is read and computed again. Brokers learn of the change from
the notification, as Kafka's do.

Shared by the broker's AlterUserScramCredentials/DescribeUserScramCredentials handlers and
``pafka users``. Blocking (kazoo): the broker runs these in its ZooKeeper threads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.errors import CoordinationError, ResourceNotFoundError
from pafka.security.scram_credentials import HASHES, ScramCredential
from pafka.zk.client import check_transaction, children_or_empty, get_many
from pafka.zk.znodes import (
    CONFIG_CHANGES,
    CONFIG_USERS,
    ConfigChangeZNode,
    EntityConfigZNode,
    desanitize_entity,
    entity_config_path,
    user_entity_path,
)

Change = Callable[[dict[str, str]], dict[str, str]]
ATTEMPTS = 10
SCRAM_MECHANISMS = tuple(HASHES)


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: str
    iterations: int


def user_config(zk: KazooClient, user: str) -> tuple[dict[str, str], int]:
    """The user's entity config and its znode version (-1: no node yet)."""
    entity = entity_config_path(user, None)
    try:
        data, stat = zk.get(EntityConfigZNode.path(entity))
    except NoNodeError:
        return {}, -1
    return EntityConfigZNode.decode(entity, data).config, stat.version


def credential_infos(config: Mapping[str, str]) -> list[CredentialInfo]:
    """The user's credentials by mechanism; a malformed one raises (Kafka's describe fails
    that user alone)."""
    return [
        CredentialInfo(m, ScramCredential.parse(config[m]).iterations)
        for m in SCRAM_MECHANISMS
        if m in config
    ]


def alter_user(zk: KazooClient, user: str, change: Change) -> dict[str, str]:
    """Apply ``change`` to the user's entity config and announce it; returns the new config.

    ``change`` may raise to refuse (it sees the config as read); it is called again after a
    concurrent write."""
    entity = entity_config_path(user, None)
    path = EntityConfigZNode.path(entity)
    notification = ConfigChangeZNode(entity).encode()
    zk.ensure_path(CONFIG_USERS)
    zk.ensure_path(CONFIG_CHANGES)
    for _ in range(ATTEMPTS):
        current, version = user_config(zk, user)
        updated = change(dict(current))
        if updated == current and version >= 0:
            return updated
        tx = zk.transaction()
        if version < 0:
            tx.create(path, EntityConfigZNode(updated).encode())
        else:
            tx.set_data(path, EntityConfigZNode(updated).encode(), version=version)
        tx.create(ConfigChangeZNode.path_prefix(), notification, sequence=True)
        results = tx.commit()
        if any(isinstance(r, (BadVersionError, NodeExistsError, NoNodeError)) for r in results):
            continue  # written by someone else since the read: read and compute again
        check_transaction(results)
        return updated
    raise CoordinationError(f"the config of user {user!r} kept changing; try again")


def upsert(mechanism: str, credential: ScramCredential) -> Change:
    def change(config: dict[str, str]) -> dict[str, str]:
        config[mechanism] = str(credential)
        return config

    return change


def delete(mechanism: str) -> Change:
    def change(config: dict[str, str]) -> dict[str, str]:
        if mechanism not in config:
            raise ResourceNotFoundError("Attempt to delete a user credential that does not exist")
        del config[mechanism]
        return config

    return change


def combined(changes: list[Change]) -> Change:
    def change(config: dict[str, str]) -> dict[str, str]:
        for one in changes:
            config = one(config)
        return config

    return change


def scram_users(zk: KazooClient) -> dict[str, dict[str, str]]:
    """Every user whose entity config holds a SCRAM credential, with that config."""
    names = children_or_empty(zk, CONFIG_USERS)
    entities = [user_entity_path(name) for name in names]
    found: dict[str, dict[str, str]] = {}
    for name, entity, read in zip(
        names, entities, get_many(zk, [EntityConfigZNode.path(e) for e in entities]), strict=True
    ):
        if read is None:
            continue
        config = EntityConfigZNode.decode(entity, read[0]).config
        if any(m in config for m in SCRAM_MECHANISMS):
            found[desanitize_entity(name)] = config
    return found
