"""Optional bearer-token authentication: which token may touch which topics.

Tokens come from a file (``PAFKA_GATEWAY_TOKENS_FILE``) and/or the environment
(``PAFKA_GATEWAY_TOKENS``). Neither set: no authentication at all. Either set: every request
except ``/livez``, ``/readyz``, ``/metrics``, ``/docs`` and ``/openapi.json`` needs
``Authorization: Bearer TOKEN`` with a known token (an empty file refuses everything).

The file has one token a line, then the topics it may use as comma-separated globs
(:func:`fnmatch.fnmatchcase`: ``*``, ``?``, ``[...]``; case-sensitive); ``*`` alone is every
topic. ``#`` at the start of a line or after a space starts a comment::

    # token                   topics
    s3cr3t-ingest             orders,payments-*
    s3cr3t-analytics          *             # everything
    s3cr3t-audit              audit-?? , audit-archive

A line may instead name the principal the token stands for (``s3cr3t-bob  User:bob``); its
rights are then the ACLs' when the gateway has an authorizer (``access.py``), every topic
otherwise. ``PAFKA_GATEWAY_TOKENS`` holds the same lines separated by ``;``
(``s3cr3t-ingest orders,payments-*; s3cr3t-analytics *``). A token given twice is a
configuration error, as is a line without topics. Tokens are read when the gateway starts.

The decision, for a request with a known token:

* every topic in the path (``{topic}``, ``{topic_name}``) or the query (``topic_name``) must
  match one of the token's globs;
* so must every topic the JSON body names at its top level (``topic_name``, ``topics``,
  ``partitions[].topic``, ``offsets[].topic``): v3 topic creation, v2 subscriptions,
  assignments, seeks and commits, native group joins and commits. A ``topic_pattern`` needs a
  token for every topic. Produce bodies (records only) are not read here.

Failures are 401 (``error_code`` 40101, ``WWW-Authenticate: Bearer``) without a token or with
an unknown one, and 403 (40301) for a topic the token may not use.

Not covered: any known token may list topic names, brokers and consumer groups (with their
committed offsets and lag), and may use a consumer instance or group member another token
created, knowing its name: instances and groups do not belong to tokens, so reading through an
instance subscribed by a token with wider rights is not refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from fastapi import Request

from pafka.errors import ConfigError, RestError
from pafka.security.principal import USER_TYPE, KafkaPrincipal
from services.gateway.errors import FORBIDDEN
from services.gateway.settings import PREFIX, GatewaySettings

ALL_TOPICS = "*"
# Routes answered without a token (FastAPI's /docs and /openapi.json take no dependencies).
OPEN_PATHS = frozenset({"/livez", "/readyz", "/metrics"})
# Path parameters that name a topic.
TOPIC_PARAMS = frozenset({"topic", "topic_name"})
# Routes whose bodies are records, never topic names; they are not read before the handler.
RECORD_BODIES = frozenset(
    {
        ("POST", "/topics/{topic}"),
        ("POST", "/topics/{topic}/partitions/{partition}"),
        # A v3 produce body may be a stream without end: the handler reads it as it comes.
        ("POST", "/v3/clusters/{cluster_id}/topics/{topic_name}/records"),
    }
)
_COMMENT = re.compile(r"(^|\s)#.*$")


@dataclass(frozen=True)
class Grant:
    """The topics one token may use, as globs; or the principal it stands for, whose rights
    the ACLs decide (``access.py``)."""

    patterns: tuple[str, ...]
    principal: KafkaPrincipal | None = None

    @property
    def all_topics(self) -> bool:
        return ALL_TOPICS in self.patterns

    def allows(self, topic: str) -> bool:
        return any(fnmatchcase(topic, pattern) for pattern in self.patterns)

    def denied(self, topics: Iterable[str], *, needs_all: bool = False) -> str | None:
        """The first topic refused (``"*"`` when every topic is needed and not granted)."""
        if needs_all and not self.all_topics:
            return ALL_TOPICS
        return next((t for t in topics if not self.allows(t)), None)


def parse_tokens(text: str, source: str, *, separator: str = "\n") -> dict[str, Grant]:
    """Token lines to grants; a ConfigError names ``source`` and the line."""
    grants: dict[str, Grant] = {}
    for number, line in enumerate(text.split(separator), 1):
        line = _COMMENT.sub("", line).strip()
        if not line:
            continue
        token, *rest = line.split(None, 1)
        if token in grants:
            raise ConfigError(f"{source}:{number}: the token is given twice")
        named = "".join(rest).strip()
        if named.startswith(f"{USER_TYPE}:"):
            # A principal: authentication only here, its rights are the ACLs'.
            grants[token] = Grant((ALL_TOPICS,), KafkaPrincipal.parse(named))
            continue
        patterns = tuple(p.strip() for p in named.split(",") if p.strip())
        if not patterns:
            raise ConfigError(f"{source}:{number}: a token needs topics (a glob, or * for all)")
        if any(c.isspace() for p in patterns for c in p):
            raise ConfigError(f"{source}:{number}: separate topic globs with commas")
        grants[token] = Grant(patterns)
    return grants


class Tokens:
    """Known tokens, kept only as SHA-256 digests (looked up by digest, not compared by text)."""

    def __init__(self, grants: Mapping[str, Grant]) -> None:
        self._grants = {_digest(token): grant for token, grant in grants.items()}

    def __len__(self) -> int:
        return len(self._grants)

    def grant_for(self, token: str | None) -> Grant | None:
        return None if token is None else self._grants.get(_digest(token))


def load_tokens(settings: GatewaySettings) -> Tokens | None:
    """The configured tokens; None when neither the file nor the variable is set."""
    if settings.tokens_file is None and settings.tokens is None:
        return None
    grants: dict[str, Grant] = {}
    if settings.tokens_file is not None:
        try:
            text = settings.tokens_file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{PREFIX}TOKENS_FILE {settings.tokens_file}: {exc}") from None
        grants = parse_tokens(text, str(settings.tokens_file))
    if settings.tokens is not None:
        for token, grant in parse_tokens(settings.tokens, f"{PREFIX}TOKENS", separator=";").items():
            if token in grants:
                raise ConfigError(f"{PREFIX}TOKENS repeats a token of {settings.tokens_file}")
            grants[token] = grant
    if settings.authorizer:
        globbed = [g for g in grants.values() if g.principal is None]
        if globbed:
            raise ConfigError(
                f"with {PREFIX}AUTHORIZER=acl every token names the principal it stands for "
                f"(TOKEN User:name), and the ACLs give its rights; {len(globbed)} token(s) "
                "give topic globs instead"
            )
    return Tokens(grants)


def body_topics(body: Any) -> tuple[list[str], bool]:
    """The topics a JSON body names at its top level, and whether it asks for a pattern."""
    if not isinstance(body, dict):
        return [], False
    topics = []
    if isinstance(name := body.get("topic_name"), str):
        topics.append(name)
    if isinstance(listed := body.get("topics"), list):
        topics.extend(t for t in listed if isinstance(t, str))
    for key in ("partitions", "offsets"):
        if isinstance(items := body.get(key), list):
            topics.extend(
                i["topic"] for i in items if isinstance(i, dict) and isinstance(i.get("topic"), str)
            )
    return topics, body.get("topic_pattern") is not None


async def check_grant(request: Request, template: str, grant: Grant) -> None:
    """A glob token's rights: 403 as this module's docstring says."""
    topics = [str(v) for k, v in request.path_params.items() if k in TOPIC_PARAMS]
    # Topics named in the query (the console's sizes of topics) are asked for as much.
    topics.extend(request.query_params.getlist("topic_name"))
    needs_all = False
    if (request.method, template) not in RECORD_BODIES:
        named, needs_all = body_topics(await json_body(request))
        topics.extend(named)
    denied = grant.denied(topics, needs_all=needs_all)
    if denied == ALL_TOPICS:
        raise RestError(FORBIDDEN, "a topic pattern needs a token for every topic")
    if denied is not None:
        raise RestError(FORBIDDEN, f"the token gives no access to topic {denied!r}")


async def json_body(request: Request) -> Any:
    """The body as the handler will see it (Starlette caches it), or None if it is not JSON.

    Parsed as leniently as FastAPI and the routes parse it, so nothing a handler accepts is
    skipped here; what does not parse here is refused by the handler too.
    """
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
