"""Client quotas in ZooKeeper: described and altered as Kafka 2.8's ``ZkAdminManager`` does.

Shared by the broker's DescribeClientQuotas/AlterClientQuotas handlers and the CLI's
``--zookeeper`` mode. An alteration reads the entity's config with its znode version, applies
the ops to the quota keys only (other keys of the entity, such as a user's SCRAM credentials,
stay as they are), and writes the config and a ``/config/changes/config_change_N``
notification in one transaction that checks the version, retrying on a concurrent write
(Kafka's ``AdminZkClient.changeConfigs``, made atomic). Brokers re-read the entity when they see
the notification.

Entity names are plain (``None`` for the default entity, as the wire spells it); znode names are
sanitized and ``<default>`` stands for the default.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from pafka.errors import CoordinationError, InvalidRequestError, UnsupportedVersionError
from pafka.security.quotas import DEFAULT, QUOTA_KEYS, REQUEST_PERCENTAGE, parse_quota_value
from pafka.zk.client import check_transaction, children_many, children_or_empty, get_many
from pafka.zk.znodes import (
    CONFIG_CHANGES,
    CONFIG_CLIENTS,
    CONFIG_USERS,
    ConfigChangeZNode,
    EntityConfigZNode,
    desanitize_entity,
    entity_config_path,
)

USER = "user"
CLIENT_ID = "client-id"
MATCH_EXACT = 0
MATCH_DEFAULT = 1
MATCH_ANY = 2
ATTEMPTS = 10
# Kafka's tolerance when a double on the wire must be a whole number (a LONG config).
_EPSILON = 1e-6

# (user, client id): a name, DEFAULT for the default entity, None when the type is absent.
Entity = tuple[str | None, str | None]


@dataclass(frozen=True)
class FilterComponent:
    entity_type: str
    # A name (exact), DEFAULT (the default entity) or None (any specified name).
    match: str | None


def parse_entity(components: Iterable[tuple[str, str | None]]) -> Entity:
    """(entity type, name or None for the default) pairs -> (user, client id)."""
    found: dict[str, str] = {}
    for entity_type, name in components:
        if entity_type not in (USER, CLIENT_ID):
            if not entity_type:
                raise InvalidRequestError("unexpected empty quota entity type")
            raise UnsupportedVersionError(f"unhandled client quota entity type: {entity_type}")
        if entity_type in found:
            raise InvalidRequestError(f"duplicate quota entity type {entity_type}")
        found[entity_type] = DEFAULT if name is None else name
    if not found:
        raise InvalidRequestError("invalid empty client quota entity")
    return found.get(USER), found.get(CLIENT_ID)


def parse_filter(components: Iterable[tuple[str, int, str | None]]) -> list[FilterComponent]:
    """DescribeClientQuotas' components, checked as Kafka's ``ClientQuotaFilter``."""
    parsed: list[FilterComponent] = []
    for entity_type, match_type, match in components:
        if match_type == MATCH_EXACT:
            if match is None:
                raise InvalidRequestError("unexpected null match string")
            parsed.append(FilterComponent(entity_type, match))
        elif match_type in (MATCH_DEFAULT, MATCH_ANY):
            if match is not None:
                raise InvalidRequestError("unexpected match string for match type")
            parsed.append(
                FilterComponent(entity_type, DEFAULT if match_type == MATCH_DEFAULT else None)
            )
        else:
            raise UnsupportedVersionError(f"unexpected match type: {match_type}")
    seen: set[str] = set()
    for component in parsed:
        if component.entity_type not in (USER, CLIENT_ID):
            if not component.entity_type:
                raise InvalidRequestError("unexpected empty filter component entity type")
            raise UnsupportedVersionError(
                f"custom entity type {component.entity_type!r} not supported"
            )
        if component.entity_type in seen:
            raise InvalidRequestError(
                f"duplicate {component.entity_type} filter component entity type"
            )
        seen.add(component.entity_type)
    return parsed


def quota_value_text(key: str, value: float) -> str:
    """A wire double as Kafka stores it: byte rates as longs (a fraction refused), request
    percentages as doubles."""
    if key not in QUOTA_KEYS:
        raise InvalidRequestError(f"invalid configuration key {key}")
    if key == REQUEST_PERCENTAGE:
        text = repr(float(value))
    else:
        whole = int(value + _EPSILON)
        if abs(whole - value) > _EPSILON:
            raise InvalidRequestError(f"configuration {key} must be a LONG value")
        text = str(whole)
    parse_quota_value(key, text)
    return text


def apply_ops(config: dict[str, str], ops: Sequence[tuple[str, float | None]]) -> dict[str, str]:
    """An entity's config after the ops (None removes a key)."""
    updated = dict(config)
    for key, value in ops:
        if value is None:
            updated.pop(key, None)
        else:
            updated[key] = quota_value_text(key, value)
    return updated


def _znode_path(entity: Entity) -> str:
    return entity_config_path(*entity)


def _read(zk: KazooClient, path: str) -> tuple[dict[str, str], int]:
    try:
        data, stat = zk.get(EntityConfigZNode.path(path))
    except NoNodeError:
        return {}, -1
    return (EntityConfigZNode.decode(path, data).config if data else {}), stat.version


def alter_quotas(
    zk: KazooClient, entity: Entity, ops: Sequence[tuple[str, float | None]], validate_only: bool
) -> dict[str, str]:
    """Apply ``ops`` to an entity's quotas; the entity's new config. Blocking."""
    path = _znode_path(entity)
    for _ in range(ATTEMPTS):
        current, version = _read(zk, path)
        updated = apply_ops(current, ops)
        if validate_only:
            return updated
        zk.ensure_path(EntityConfigZNode.path(path).rsplit("/", 1)[0])
        zk.ensure_path(CONFIG_CHANGES)
        txn = zk.transaction()
        payload = EntityConfigZNode(updated).encode()
        if version < 0:
            txn.create(EntityConfigZNode.path(path), payload)
        else:
            txn.set_data(EntityConfigZNode.path(path), payload, version=version)
        txn.create(ConfigChangeZNode.path_prefix(), ConfigChangeZNode(path).encode(), sequence=True)
        results = txn.commit()
        if any(isinstance(r, BadVersionError | NodeExistsError | NoNodeError) for r in results):
            continue
        check_transaction(results)
        return updated
    raise InvalidRequestError(f"the config of {path} kept changing; try again")


def entity_paths(zk: KazooClient) -> list[str]:
    """Every user, user/client and client entity path (sanitized). Blocking."""
    users = children_or_empty(zk, CONFIG_USERS)
    user_clients = children_many(zk, [f"{CONFIG_USERS}/{u}/clients" for u in users])
    paths = [f"users/{u}" for u in users]
    for user, clients in zip(users, user_clients, strict=True):
        paths += [f"users/{user}/clients/{c}" for c in sorted(clients or [])]
    paths += [f"clients/{c}" for c in children_or_empty(zk, CONFIG_CLIENTS)]
    return paths


def entity_of_path(entity_path: str) -> Entity | None:
    """``users/alice/clients/c1`` -> ("alice", "c1"), names desanitized; None for other entity
    types (topics, brokers) or a malformed path."""
    parts = entity_path.split("/")
    if len(parts) == 2 and parts[0] == "users":
        return desanitize_entity(parts[1]), None
    if len(parts) == 2 and parts[0] == "clients":
        return None, desanitize_entity(parts[1])
    if len(parts) == 4 and parts[0] == "users" and parts[2] == "clients":
        return desanitize_entity(parts[1]), desanitize_entity(parts[3])
    return None


def _matches(component: FilterComponent | None, name: str | None, strict: bool) -> bool:
    if component is None:
        return name is None or not strict
    if component.match is None:
        return name is not None
    return name == component.match


def select(
    configs: dict[Entity, dict[str, str]], components: Sequence[FilterComponent], strict: bool
) -> dict[Entity, dict[str, float]]:
    """The entities a filter matches, with their quotas (Kafka's ``describeClientQuotas``);
    entities without a quota are left out. Pure."""
    by_type = {c.entity_type: c for c in components}
    user_filter, client_filter = by_type.get(USER), by_type.get(CLIENT_ID)
    out: dict[Entity, dict[str, float]] = {}
    for (user, client), config in configs.items():
        quotas = {k: float(v) for k, v in config.items() if k in QUOTA_KEYS}
        if not quotas:
            continue
        if _matches(user_filter, user, strict) and _matches(client_filter, client, strict):
            out[(user, client)] = quotas
    return out


def describe_quotas(
    zk: KazooClient, components: Sequence[FilterComponent], strict: bool
) -> dict[Entity, dict[str, float]]:
    """The quotas of the entities a filter matches, read from ZooKeeper. Blocking."""
    paths = entity_paths(zk)
    found = get_many(zk, [EntityConfigZNode.path(p) for p in paths])
    configs: dict[Entity, dict[str, str]] = {}
    for path, got in zip(paths, found, strict=True):
        entity = entity_of_path(path)
        if got is None or not got[0] or entity is None:
            continue
        try:
            configs[entity] = EntityConfigZNode.decode(path, got[0]).config
        except CoordinationError:
            continue  # a malformed entity config is not a quota
    return select(configs, components, strict)
