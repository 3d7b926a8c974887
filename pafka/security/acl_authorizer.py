"""The ACL authorizer of brokers and gateways: every ACL in ZooKeeper, kept current by change
notifications, so a REST call and a Kafka request of one principal meet the same rules.

At start every ACL node of both stores is read into an immutable :class:`AclSnapshot`; then
the children of both change roots are watched (Kafka's ``ZkNodeChangeNotificationListener``):
each notification newer than the last one processed names a resource whose node is re-read
and replaces that resource's entries in a new snapshot, so a granted or revoked ACL applies on
every broker within a watch's round trip. Notifications older than 15 minutes are deleted, by
whichever broker sees them first, as Kafka purges them (gateways only read). A node that does
not decode is logged and its resource left without ACLs: it neither crashes the service nor
grants anything beyond what ``allow.everyone.if.no.acl.found`` grants to a resource without
ACLs.

Decisions are :func:`pafka.security.authorization.authorize`'s, on the snapshot current when
the request is checked; without an authorizer configured everything is allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from pafka.admin.acls import ensure_acl_roots, list_acls, read_resource, resource_path
from pafka.envconfig import Env
from pafka.errors import ConfigError, CorruptZNodeError, InvalidRequestError, PafkaError
from pafka.security.acls import (
    ANY_BINDING,
    AccessControlEntry,
    Operation,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from pafka.security.authorization import (
    AclSnapshot,
    AuthorizerConfig,
    authorize,
    authorize_by_resource_type,
    parse_super_users,
)
from pafka.security.principal import KafkaPrincipal
from pafka.zk import znodes
from pafka.zk.client import ZkClient
from pafka.zk.znodes import AclChangeZNode

log = logging.getLogger(__name__)

# Kafka's ZkNodeChangeNotificationListener.changeExpirationMs.
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
CHANGE_ROOTS = (znodes.KAFKA_ACL_CHANGES, znodes.KAFKA_ACL_EXTENDED_CHANGES)
RETRY_INTERVAL_S = 1.0


def expired_notification(now_ms: float, created_ms: int) -> bool:
    """Whether a notification is old enough to purge (every broker has long processed it)."""
    return now_ms - created_ms > CHANGE_EXPIRATION_MS


def change_sequence(child: str) -> int | None:
    """The sequence number of ``acl_changes_0000000042``; None for a stranger's node."""
    digits = child.removeprefix(znodes.ACL_CHANGE_PREFIX)
    return int(digits) if digits != child and digits.isdigit() else None


def _read_one(zk: KazooClient, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
    try:
        return read_resource(zk, pattern)[0]
    except CorruptZNodeError as exc:
        log.error("ignoring a malformed ACL node: %s", exc)
        return frozenset()


class Authorizer:
    def __init__(
        self, zk: ZkClient, enabled: bool, config: AuthorizerConfig, *, purge: bool = True
    ) -> None:
        self.zk = zk
        self._purge = purge
        self.enabled = enabled
        self.config = config
        self.snapshot = AclSnapshot()
        self._last_seen: dict[str, int] = dict.fromkeys(CHANGE_ROOTS, -1)
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        if not self.enabled:
            return
        await self.zk.run(ensure_acl_roots, self.zk.kazoo)
        # Malformed nodes are logged and left out.
        self.snapshot = AclSnapshot(await self.zk.run(list_acls, self.zk.kazoo, ANY_BINDING))
        log.info("authorizer loaded the ACLs of %d resources", len(self.snapshot.acls))
        for root in CHANGE_ROOTS:
            self.zk.watch_children(root, functools.partial(self._on_changes, root))

    def allowed(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if not self.enabled:
            return True
        return authorize(
            self.snapshot, self.config, principal, host, operation, resource_type, name
        )

    def allowed_on_some(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``operation`` is allowed on at least one resource of the type."""
        if not self.enabled:
            return True
        return authorize_by_resource_type(
            self.snapshot, self.config, principal, host, operation, resource_type
        )

    async def catch_up(self) -> None:
        """Process every notification written so far: after this broker's own ACL write, so
        its next answer already reflects the change, as Kafka's cache does."""
        for root in CHANGE_ROOTS:
            try:
                children = await self.zk.get_children(root)
                async with self._lock:
                    await self._process(root, children)
            except PafkaError as exc:  # the watch's pass catches up instead
                log.warning("ACL change notifications under %s not processed: %s", root, exc)

    async def _on_changes(self, root: str, children: list[str]) -> None:
        while True:
            # One pass at a time: two could apply one resource's reads out of order.
            async with self._lock:
                try:
                    await self._process(root, children)
                    return
                except PafkaError as exc:
                    log.warning("ACL change notifications under %s not processed: %s", root, exc)
            # ZooKeeper trouble: no watch may fire again for the notifications left, so they
            # are read again until done (from the last one processed).
            await asyncio.sleep(RETRY_INTERVAL_S)
            with contextlib.suppress(PafkaError):
                children = await self.zk.get_children(root)

    async def _process(self, root: str, children: list[str]) -> None:
        numbered = sorted(
            (seq, child) for child in children if (seq := change_sequence(child)) is not None
        )
        if not numbered:
            return
        paths = [f"{root}/{child}" for _, child in numbered]
        got = await self.zk.get_many(paths)
        now_ms = time.time() * 1000
        expired: list[str] = []
        for (seq, child), path, node in zip(numbered, paths, got, strict=True):
            if node is None:
                continue
            data, stat = node
            if expired_notification(now_ms, stat.ctime):
                expired.append(path)
            if seq <= self._last_seen[root]:
                continue
            try:
                change = AclChangeZNode.decode(root, child, data)
                pattern = ResourcePattern(
                    ResourceType.parse(change.resource_type),
                    change.name,
                    PatternType.parse(change.pattern_type),
                )
                if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
                    raise ValueError(f"pattern type {change.pattern_type}")
                resource_path(pattern)
            except (CorruptZNodeError, InvalidRequestError, ValueError) as exc:
                log.error("ignoring a malformed ACL change notification %s: %s", path, exc)
                self._last_seen[root] = seq
                continue
            entries = await self.zk.run(_read_one, self.zk.kazoo, pattern)
            self.snapshot = self.snapshot.with_resource(pattern, entries)
            self._last_seen[root] = seq
            log.info(
                "ACLs of %s %s (%s) now %d entries",
                pattern.resource_type.word,
                pattern.name,
                pattern.pattern_type.name,
                len(entries),
            )
        if expired and self._purge:
            await self.zk.run(_purge, self.zk.kazoo, expired)


def _purge(zk: KazooClient, paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(NoNodeError):  # another broker purged it first
            zk.delete(path)


# Kafka's class names of its ZooKeeper ACL authorizer are accepted for ``acl``.
_ACL_AUTHORIZERS = ("acl", "kafka.security.authorizer.AclAuthorizer")


def read_authorizer_name(env: Env) -> str:
    """``{PREFIX}AUTHORIZER``: Kafka's ``authorizer.class.name`` ("" none, ``acl``)."""
    name = env.text("AUTHORIZER", "")
    if name not in ("", *_ACL_AUTHORIZERS):
        raise ConfigError(f"{env.prefix}AUTHORIZER must be empty (none) or acl, not {name!r}")
    return "acl" if name else ""


def read_authorizer_config(env: Env) -> AuthorizerConfig:
    """``{PREFIX}SUPER_USERS`` and ``{PREFIX}ALLOW_EVERYONE_IF_NO_ACL_FOUND``."""
    try:
        super_users = parse_super_users(env.text("SUPER_USERS", ""))
    except PafkaError as exc:
        raise ConfigError(f"{env.prefix}SUPER_USERS: {exc}") from exc
    return AuthorizerConfig(
        super_users=super_users,
        allow_everyone_if_no_acl_found=env.flag("ALLOW_EVERYONE_IF_NO_ACL_FOUND", False),
    )
