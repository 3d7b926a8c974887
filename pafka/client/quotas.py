"""Client quotas over the Kafka protocol: DescribeClientQuotas and AlterClientQuotas (KIP-546),
what ``kafka-configs.sh --entity-type users|clients`` does against brokers. Any broker answers.

Entities are (user, client id) pairs as in :mod:`pafka.admin.client_quotas`: a name,
``<default>`` for the default entity, None when the entity type is absent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pafka.admin.client_quotas import CLIENT_ID, USER, Entity, FilterComponent
from pafka.client.cluster import ClusterClient
from pafka.errors import for_code
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey
from pafka.security.quotas import DEFAULT

QUOTAS_VERSION = 0
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


def _raise_for(code: int, message: str | None) -> None:
    if code:
        error = for_code(code)
        raise type(error)(message or error.message)


def _entity_components(entity: Entity) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    for kind, name in ((USER, entity[0]), (CLIENT_ID, entity[1])):
        if name is not None:
            out.append((kind, None if name == DEFAULT else name))
    return out


async def describe_client_quotas(
    cluster: ClusterClient, components: Sequence[FilterComponent], strict: bool
) -> dict[Entity, dict[str, float]]:
    cls = request_class(ApiKey.DESCRIBE_CLIENT_QUOTAS)[QUOTAS_VERSION]
    wire = []
    for c in components:
        if c.match is None:
            match_type, match = MATCH_ANY, None
        elif c.match == DEFAULT:
            match_type, match = MATCH_DEFAULT, None
        else:
            match_type, match = MATCH_EXACT, c.match
        wire.append(
            cls.ComponentData(entity_type=c.entity_type, match_type=match_type, match=match)
        )
    body = cls(components=wire, strict=strict)
    response: Any = await cluster.call_any(ApiKey.DESCRIBE_CLIENT_QUOTAS, QUOTAS_VERSION, body)
    _raise_for(response.error_code, response.error_message)
    found: dict[Entity, dict[str, float]] = {}
    for entry in response.entries or []:
        names = {
            e.entity_type: DEFAULT if e.entity_name is None else e.entity_name for e in entry.entity
        }
        found[(names.get(USER), names.get(CLIENT_ID))] = {v.key: v.value for v in entry.values}
    return found


async def alter_client_quotas(
    cluster: ClusterClient,
    entity: Entity,
    ops: Sequence[tuple[str, float | None]],
    validate_only: bool,
) -> None:
    cls = request_class(ApiKey.ALTER_CLIENT_QUOTAS)[QUOTAS_VERSION]
    entry = cls.EntryData
    body = cls(
        entries=[
            entry(
                entity=[
                    entry.EntityData(entity_type=t, entity_name=n)
                    for t, n in _entity_components(entity)
                ],
                ops=[
                    entry.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
                    for k, v in ops
                ],
            )
        ],
        validate_only=validate_only,
    )
    response: Any = await cluster.call_any(ApiKey.ALTER_CLIENT_QUOTAS, QUOTAS_VERSION, body)
    for result in response.entries:
        _raise_for(result.error_code, result.error_message)
