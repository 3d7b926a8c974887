"""A kazoo client that authenticates and gives every znode it creates its path's ACL.

Every creation in pafka goes through kazoo's ``create`` (also with ``makepath``), its
``ensure_path`` or a transaction's ``create``; all of them end in ``_create_async_inner`` or in
``TransactionRequest.create``, so the ACL is chosen there, per path, once. The ACL callers pass
is replaced, so a parent made by ``makepath`` gets its own path's ACL, not its child's.
"""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient, TransactionRequest

from pafka.zk.security import ZkSecurity


class AclKazooClient(KazooClient):
    def __init__(self, *, security: ZkSecurity, **kwargs: Any) -> None:
        super().__init__(auth_data=security.auth_data() or None, **kwargs)
        self.security = security

    def _create_async_inner(
        self,
        path: str,
        value: bytes,
        acl: Any,
        flags: int,
        trailing: bool = False,
        include_data: bool = False,
    ) -> Any:
        return super()._create_async_inner(
            path,
            value,
            self.security.acl_for(path),
            flags,
            trailing=trailing,
            include_data=include_data,
        )

    def transaction(self) -> TransactionRequest:
        return AclTransactionRequest(self)


class AclTransactionRequest(TransactionRequest):
    def create(
        self,
        path: str,
        value: bytes = b"",
        acl: Any = None,
        ephemeral: bool = False,
        sequence: bool = False,
    ) -> None:
        security: ZkSecurity = self.client.security
        super().create(path, value, security.acl_for(path), ephemeral, sequence)


def kazoo_client(hosts: str, security: ZkSecurity, **kwargs: Any) -> KazooClient:
    """A client for ``hosts``: pafka's own when authenticating or setting ACLs, else kazoo's."""
    if security.auth is None and not security.set_acl:
        return KazooClient(hosts=hosts, **kwargs)
    return AclKazooClient(hosts=hosts, security=security, **kwargs)
