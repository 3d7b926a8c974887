"""The broker's view of user and client entity configs, kept current by change notifications.

Kafka keeps quotas and SCRAM credentials in ``/config/users/...`` and ``/config/clients/...``
and tells brokers of a change with a sequential ``/config/changes/config_change_N`` naming the
entity (Kafka's ``DynamicConfigManager``): every broker loads all entities at start, then
re-reads the entity each new notification names. Notifications older than 15 minutes are
deleted by whichever broker sees them (Kafka's ``changeExpirationMs``), so they do not pile up.

Readers get an immutable snapshot, keyed by entity path as the notifications spell it
(``users/alice``, ``users/<default>/clients/c1``, ``clients/c%2F1``: names sanitized), and may
subscribe to hear which entity changed. A malformed entity config or notification is logged and
skipped: it cannot stop the broker or hide the other entities. Topic and broker notifications
(Kafka writes those too) are skipped: pafka watches those configs directly.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.admin.client_quotas import entity_of_path, entity_paths
from pafka.errors import CoordinationError
from pafka.zk.client import ZkClient, get_many
from pafka.zk.znodes import (
    CONFIG_CHANGE_PREFIX,
    CONFIG_CHANGES,
    CONFIG_CLIENTS,
    CONFIG_USERS,
    ConfigChangeZNode,
    EntityConfigZNode,
)

log = logging.getLogger(__name__)

# Kafka's ZkNodeChangeNotificationListener changeExpirationMs.
NOTIFICATION_EXPIRATION_MS = 15 * 60 * 1000

EntityConfigs = Mapping[str, Mapping[str, str]]
Subscriber = Callable[[str], Awaitable[None]]


def _sequence(child: str) -> int | None:
    if not child.startswith(CONFIG_CHANGE_PREFIX):
        return None
    try:
        return int(child.removeprefix(CONFIG_CHANGE_PREFIX))
    except ValueError:
        return None


def _decode(entity_path: str, data: bytes | None) -> dict[str, str]:
    # A parent created only to hold client entities (Kafka's makepath) is empty.
    if not data:
        return {}
    return EntityConfigZNode.decode(entity_path, data).config


class EntityConfigView:
    def __init__(self, zk: ZkClient, expiration_ms: int = NOTIFICATION_EXPIRATION_MS) -> None:
        self._zk = zk
        self._expiration_ms = expiration_ms
        self._configs: dict[str, Mapping[str, str]] = {}
        self._snapshot: EntityConfigs = MappingProxyType({})
        self._subscribers: list[Subscriber] = []
        self._last_seen = -1

    def snapshot(self) -> EntityConfigs:
        """Every entity's config now (immutable; a later change makes a new snapshot)."""
        return self._snapshot

    def subscribe(self, subscriber: Subscriber) -> None:
        """``subscriber(entity_path)`` after each change of an entity's config."""
        self._subscribers.append(subscriber)

    async def start(self) -> None:
        """Load every entity, then follow the notifications. Notifications present before the
        load are covered by it; a change between the two is re-read, which is harmless."""
        for path in (CONFIG_CHANGES, CONFIG_USERS, CONFIG_CLIENTS):
            await self._zk.run(self._zk.kazoo.ensure_path, path)
        children = await self._zk.get_children(CONFIG_CHANGES)
        self._last_seen = max((s for c in children if (s := _sequence(c)) is not None), default=-1)
        paths = await self._zk.run(entity_paths, self._zk.kazoo)
        found = await self._zk.get_many([EntityConfigZNode.path(p) for p in paths])
        for path, got in zip(paths, found, strict=True):
            if got is not None:
                self._store(path, got[0])
        self._publish()
        await self._zk.run(_purge_expired, self._zk.kazoo, children, self._expiration_ms)
        self._zk.watch_children(CONFIG_CHANGES, self._notified)

    def _store(self, entity_path: str, data: bytes | None) -> bool:
        try:
            config = _decode(entity_path, data)
        except CoordinationError as exc:
            log.error("skipping entity config %s: %s", entity_path, exc)
            return False
        if not config:
            return self._configs.pop(entity_path, None) is not None
        if self._configs.get(entity_path) == config:
            return False
        self._configs[entity_path] = MappingProxyType(config)
        return True

    def _publish(self) -> None:
        self._snapshot = MappingProxyType(dict(self._configs))

    async def _notified(self, children: list[str]) -> None:
        fresh = sorted(
            (seq, child)
            for child in children
            if (seq := _sequence(child)) is not None and seq > self._last_seen
        )
        if not fresh:
            return
        # Kafka's listener reads its notifications in sequence order, each once.
        self._last_seen = fresh[-1][0]
        found = await self._zk.get_many([ConfigChangeZNode.path(c) for _, c in fresh])
        changed: list[str] = []
        for (_, child), got in zip(fresh, found, strict=True):
            if got is None:
                continue  # purged meanwhile: its change was read with a later one or at load
            try:
                entity_path = ConfigChangeZNode.decode(child, got[0]).entity_path
            except CoordinationError as exc:
                log.error("skipping config change notification %s: %s", child, exc)
                continue
            if entity_of_path(entity_path) is None or entity_path in changed:
                continue
            current = await self._zk.get(EntityConfigZNode.path(entity_path))
            if self._store(entity_path, current[0] if current else None):
                changed.append(entity_path)
        if changed:
            self._publish()
            for entity_path in changed:
                for subscriber in self._subscribers:
                    await subscriber(entity_path)
        await self._zk.run(_purge_expired, self._zk.kazoo, children, self._expiration_ms)

    def entities(self) -> dict[tuple[str | None, str | None], Mapping[str, str]]:
        """The snapshot keyed by (user, client id), names desanitized."""
        out = {}
        for path, config in self._snapshot.items():
            parsed = entity_of_path(path)
            if parsed is not None:
                out[parsed] = config
        return out


def _purge_expired(zk: KazooClient, children: list[str], expiration_ms: int) -> None:
    """Delete the notifications older than Kafka's expiration (any broker may). Blocking."""
    now_ms = time.time() * 1000
    stats = get_many(zk, [ConfigChangeZNode.path(c) for c in children])
    for child, got in zip(children, stats, strict=True):
        if got is not None and now_ms - got[1].ctime > expiration_ms:
            with contextlib.suppress(NoNodeError):
                zk.delete(ConfigChangeZNode.path(child))
