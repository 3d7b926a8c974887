"""Who a REST call comes from and whether it may do what it asks: one principal, one rule set
with the brokers.

Authentication: HTTP Basic, checked against the SCRAM credentials in ZooKeeper (the store
SASL logins use, so a user has one password for REST and Kafka), when
``PAFKA_GATEWAY_BASIC_AUTH`` is on; and the bearer tokens of ``auth.py``, a token naming a
principal (``TOKEN User:alice``). Without either, calls are ``User:ANONYMOUS``.

Authorization, when ``PAFKA_GATEWAY_AUTHORIZER=acl``: the ACLs in ZooKeeper, followed as the
brokers follow them (:mod:`pafka.security.acl_authorizer`), decide each call by
:data:`services.gateway.rest_acls.RULES`; lists show only what the principal may DESCRIBE.
Without an authorizer, tokens given as topic globs keep deciding as ``auth.py`` says.

A refusal is 401 (40101) without valid credentials, 403 (40301) naming the operation and the
resource, and one audit line (logger ``pafka.gateway.audit``) per denied call.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Annotated

from fastapi import Request, Security
from fastapi.security import (
    HTTPAuthorizationCredentials,
    HTTPBasic,
    HTTPBasicCredentials,
    HTTPBearer,
)

from pafka.errors import RestError
from pafka.security.acl_authorizer import Authorizer
from pafka.security.acls import Operation, ResourceType
from pafka.security.plain import check_password
from pafka.security.principal import ANONYMOUS, KafkaPrincipal
from pafka.zk.client import ZkClient
from pafka.zk.znodes import EntityConfigZNode, entity_config_path
from services.gateway import auth
from services.gateway.errors import FORBIDDEN, UNAUTHORIZED
from services.gateway.rest_acls import (
    ALL_TOPICS_TOKEN,
    FILTERED,
    GROUP_PARAMS,
    RULES,
    TOPIC_ENTRIES_FILTERED,
    TOPIC_PARAMS,
    Need,
    Source,
)

audit = logging.getLogger("pafka.gateway.audit")

# A verified Basic login is remembered this long (by a digest of user and password), so a
# request does not pay the SCRAM key derivation each time; a changed password applies after it.
BASIC_CACHE_S = 30.0
PRINCIPAL_STATE = "pafka_principal"
BEARER = Security(HTTPBearer(auto_error=False, description="A token of PAFKA_GATEWAY_TOKENS"))
BASIC = Security(HTTPBasic(auto_error=False, description="A SCRAM user and its password"))


@dataclass
class BasicLogins:
    """HTTP Basic against the SCRAM store, with a short memory of verified logins."""

    zk: ZkClient
    _verified: dict[bytes, tuple[float, KafkaPrincipal]]

    @classmethod
    def of(cls, zk: ZkClient) -> BasicLogins:
        return cls(zk, {})

    async def principal(self, header: str) -> KafkaPrincipal:
        try:
            decoded = base64.b64decode(header, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise RestError(UNAUTHORIZED, "malformed Basic credentials") from None
        user, sep, password = decoded.partition(":")
        if not sep or not user:
            raise RestError(UNAUTHORIZED, "malformed Basic credentials")
        key = hashlib.sha256(decoded.encode("utf-8", "surrogatepass")).digest()
        now = time.monotonic()
        known = self._verified.get(key)
        if known is not None and now - known[0] < BASIC_CACHE_S:
            return known[1]
        entity = entity_config_path(user, None)
        got = await self.zk.get(EntityConfigZNode.path(entity))
        config = None if got is None else EntityConfigZNode.decode(entity, got[0]).config
        if not check_password(user, password, config):
            raise RestError(UNAUTHORIZED, "the user name or password is wrong")
        principal = KafkaPrincipal.user(user)
        if len(self._verified) > 10_000:
            self._verified.clear()
        self._verified[key] = (now, principal)
        return principal


def request_guard(
    tokens: auth.Tokens | None,
    basic: Callable[[], BasicLogins | None],
    authorizer: Callable[[], Authorizer | None],
) -> Callable[..., Awaitable[None]]:
    """The app-level dependency: authenticate, then authorize by the route's rule."""

    async def guard(
        request: Request,
        # Declared so that /docs offers both schemes; the header is read below.
        _bearer: Annotated[HTTPAuthorizationCredentials | None, BEARER],
        _basic: Annotated[HTTPBasicCredentials | None, BASIC],
    ) -> None:
        template = getattr(request.scope.get("route"), "path", request.url.path)
        if template in auth.OPEN_PATHS:
            return
        principal, grant = await _authenticate(request, tokens, basic())
        request.state.__setattr__(PRINCIPAL_STATE, principal)
        acl = authorizer()
        if acl is not None and acl.enabled:
            await _authorize(request, template, principal, acl)
        elif grant is not None:
            if (request.method, template) in ALL_TOPICS_TOKEN and not grant.all_topics:
                raise RestError(FORBIDDEN, "ACLs and users need a token for every topic (*)")
            await auth.check_grant(request, template, grant)

    return guard


async def _authenticate(
    request: Request, tokens: auth.Tokens | None, basic: BasicLogins | None
) -> tuple[KafkaPrincipal, auth.Grant | None]:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    scheme = scheme.lower()
    if scheme == "basic" and basic is not None:
        return await basic.principal(value.strip()), None
    if scheme == "bearer" and tokens is not None:
        grant = tokens.grant_for(value.strip())
        if grant is None:
            raise RestError(UNAUTHORIZED, "the bearer token is not known")
        return grant.principal or ANONYMOUS, grant
    if tokens is None and basic is None:
        return ANONYMOUS, None
    wanted = " or ".join(
        name for name, on in (("Basic", basic is not None), ("Bearer", tokens is not None)) if on
    )
    raise RestError(UNAUTHORIZED, f"credentials are required (Authorization: {wanted} ...)")


async def _authorize(
    request: Request, template: str, principal: KafkaPrincipal, acl: Authorizer
) -> None:
    needs = RULES.get((request.method, template), ())
    host = request.client.host if request.client else ""
    body_topics: list[str] | None = None
    for need in needs:
        if need.source is Source.BODY_TOPICS and body_topics is None:
            body_topics, _ = auth.body_topics(await auth.json_body(request))
        for name in _names(need, request, body_topics or []):
            if need.or_cluster and acl.allowed(
                principal, host, need.operation, ResourceType.CLUSTER, "kafka-cluster"
            ):
                continue
            if not acl.allowed(principal, host, need.operation, need.resource_type, name):
                audit.warning(
                    "denied principal=%s host=%s operation=%s resource=%s:%s call=%s %s",
                    principal,
                    host,
                    need.operation.name,
                    need.resource_type.word,
                    name,
                    request.method,
                    request.url.path,
                )
                raise RestError(
                    FORBIDDEN,
                    f"{principal} may not {need.operation.name} {need.resource_type.word} {name!r}",
                )


def _names(need: Need, request: Request, body_topics: list[str]) -> Iterable[str]:
    params = request.path_params
    if need.source is Source.TOPIC_PATH:
        return [str(params[p]) for p in TOPIC_PARAMS if p in params]
    if need.source is Source.GROUP_PATH:
        return [str(params[p]) for p in GROUP_PARAMS if p in params]
    if need.source is Source.CLUSTER:
        return ["kafka-cluster"]
    return body_topics


def principal_of(request: Request) -> KafkaPrincipal:
    principal: KafkaPrincipal = getattr(request.state, PRINCIPAL_STATE, ANONYMOUS)
    return principal


def visible(
    request: Request, acl: Authorizer | None, resource_type: ResourceType, names: Iterable[str]
) -> list[str]:
    """The names of a list the caller may DESCRIBE (all of them without an authorizer)."""
    template = getattr(request.scope.get("route"), "path", request.url.path)
    assert FILTERED.get((request.method, template)) is resource_type, template
    return _describable(request, acl, resource_type, names)


def describable_topics(request: Request, acl: Authorizer | None, topics: Iterable[str]) -> set[str]:
    """Of a group's topics, those whose offsets and lags the caller may see."""
    template = getattr(request.scope.get("route"), "path", request.url.path)
    assert (request.method, template) in TOPIC_ENTRIES_FILTERED, template
    return set(_describable(request, acl, ResourceType.TOPIC, topics))


def _describable(
    request: Request, acl: Authorizer | None, resource_type: ResourceType, names: Iterable[str]
) -> list[str]:
    names = list(names)
    if acl is None or not acl.enabled:
        return names
    principal = principal_of(request)
    host = request.client.host if request.client else ""
    return [n for n in names if acl.allowed(principal, host, Operation.DESCRIBE, resource_type, n)]


def topics_allowed(
    request: Request, acl: Authorizer | None, operation: Operation, topics: Iterable[str]
) -> None:
    """For routes whose topics are state, not request (a consumer instance's reads)."""
    if acl is None or not acl.enabled:
        return
    principal = principal_of(request)
    host = request.client.host if request.client else ""
    for topic in topics:
        if not acl.allowed(principal, host, operation, ResourceType.TOPIC, topic):
            audit.warning(
                "denied principal=%s host=%s operation=%s resource=Topic:%s call=%s %s",
                principal,
                host,
                operation.name,
                topic,
                request.method,
                request.url.path,
            )
            raise RestError(FORBIDDEN, f"{principal} may not {operation.name} Topic {topic!r}")
