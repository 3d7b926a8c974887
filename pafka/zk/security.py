"""Who pafka is to ZooKeeper, and which ACL each znode it creates gets (``zookeeper.set.acl``).

Pure: settings in, kazoo's ``ACL`` values out. As Kafka's ``ZkData.defaultAcls`` with
``isSecure``: every znode is ``auth::cdrwa`` (all permissions for the identity that created it,
the digest user here) plus ``world:anyone:r``, except under the sensitive roots
(``/config/users``, ``/config/brokers``, ``/delegation_token``: credentials), which the world
cannot read, and ``/consumers`` itself, left open for ZooKeeper-era consumers. Only digest
authentication is offered; SASL (Kerberos) to ZooKeeper is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kazoo.security import (
    ACL,
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    Permissions,
    make_digest_acl_credential,
)

from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.zk import znodes

SCHEMES = ("digest",)


@dataclass(frozen=True)
class ZkAuth:
    """A digest identity: ``user:password``; ZooKeeper records it as ``user:base64(sha1)``."""

    scheme: str
    user: str
    password: str = field(repr=False)

    @property
    def credential(self) -> str:
        return f"{self.user}:{self.password}"

    @property
    def identity(self) -> str:
        """The id ZooKeeper puts in ``auth`` ACLs of nodes this identity creates."""
        return str(make_digest_acl_credential(self.user, self.password))


def parse_zk_auth(text: str, source: str) -> ZkAuth:
    """``digest:user:password`` (the password may contain ``:``); ``source`` names the setting
    in the error."""
    scheme, _, rest = text.strip().partition(":")
    user, sep, password = rest.partition(":")
    if scheme not in SCHEMES:
        raise ConfigError(
            f"{source}: scheme must be one of {', '.join(SCHEMES)} "
            f"(as digest:user:password), got {scheme!r}"
        )
    if not user or not sep or not password:
        raise ConfigError(
            f"{source}: expected digest:user:password with a non-empty user and password"
        )
    return ZkAuth(scheme, user, password)


@dataclass(frozen=True)
class ZkSecurity:
    """How a process authenticates to ZooKeeper and whether the znodes it creates get ACLs."""

    auth: ZkAuth | None = None
    set_acl: bool = False

    def __post_init__(self) -> None:
        if self.set_acl and self.auth is None:
            # Kafka refuses zookeeper.set.acl without an identity the same way: creator ACLs
            # need one, and the server rejects them from an unauthenticated session.
            raise ConfigError("ZooKeeper ACLs (ZK_SET_ACL) need ZooKeeper authentication (ZK_AUTH)")

    def auth_data(self) -> list[tuple[str, str]]:
        return [] if self.auth is None else [(self.auth.scheme, self.auth.credential)]

    def acl_for(self, path: str) -> list[ACL]:
        return acl_for(path, secure=self.set_acl)


def read_zk_security(env: Env) -> ZkSecurity:
    """``ZK_AUTH`` (or ``ZK_AUTH_FILE``) and ``ZK_SET_ACL`` (default: on when auth is given)."""
    raw = env.secret("ZK_AUTH")
    auth = None if raw is None else parse_zk_auth(raw, f"{env.prefix}ZK_AUTH")
    return ZkSecurity(auth=auth, set_acl=env.flag("ZK_SET_ACL", auth is not None))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


def sensitive(path: str) -> bool:
    return any(_under(path, root) for root in znodes.SENSITIVE_ROOTS)


def acl_for(path: str, *, secure: bool) -> list[ACL]:
    if not secure or path in znodes.OPEN_PATHS:
        return list(OPEN_ACL_UNSAFE)
    if sensitive(path):
        return list(CREATOR_ALL_ACL)
    return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]


WRITE_CREATE = Permissions.WRITE | Permissions.CREATE


def may_write(acls: list[ACL], auth: ZkAuth | None) -> bool:
    """Whether a session authenticated as ``auth`` (or not at all) may write a node and create
    its children, given ``acls`` as stored (``auth`` ids replaced by the creator's id)."""
    for acl in acls:
        if acl.perms & WRITE_CREATE != WRITE_CREATE:
            continue
        if acl.id.scheme == "world" and acl.id.id == "anyone":
            return True
        if auth is not None and acl.id.scheme == auth.scheme and acl.id.id == auth.identity:
            return True
    return False


def describe_acls(acls: list[ACL]) -> str:
    """``digest:admin:x4k...=:cdrwa, world:anyone:r``, ZooKeeper's own shell notation."""
    letters = [
        (Permissions.CREATE, "c"),
        (Permissions.DELETE, "d"),
        (Permissions.READ, "r"),
        (Permissions.WRITE, "w"),
        (Permissions.ADMIN, "a"),
    ]
    return ", ".join(
        f"{a.id.scheme}:{a.id.id}:" + "".join(c for bit, c in letters if a.perms & bit)
        for a in acls
    )
