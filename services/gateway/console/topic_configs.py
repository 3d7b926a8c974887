"""``POST /v3/clusters/{id}/topics/{t}/configs:alter``: change a topic's configs, as
Confluent's v3 API does (``{"data": [{"name", "value", "operation"}]}``, 204 when applied).

Each entry is one IncrementalAlterConfigs change: SET a value, or DELETE the override (the
broker default applies again); all are sent in one request, so the broker applies all or none
(Kafka's topic config validation, the same errors as ``kafka-configs --alter``). Needs
ALTER_CONFIGS on the topic, as IncrementalAlterConfigs does.
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from pafka.client.configs import TOPIC, Resource
from pafka.cluster.config_ops import OpType
from services.gateway.v3 import Admin, At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["admin (v3)"])

MAX_CHANGES = 1000


class ConfigChange(BaseModel):
    name: str = Field(min_length=1, max_length=255, examples=["retention.ms"])
    value: str | None = Field(None, examples=["86400000"])
    operation: Literal["SET", "DELETE"] = Field("SET", description="DELETE: back to the default")


class ConfigsAlter(BaseModel):
    data: list[ConfigChange] = Field(min_length=1, max_length=MAX_CHANGES)
    validate_only: bool = False


@router.post(
    "/topics/{topic_name}/configs:alter",
    status_code=204,
    summary="Set or reset some of a topic's configs, all or none",
)
async def alter_topic_configs(
    topic_name: str, body: ConfigsAlter, at: At, client: Admin
) -> Response:
    changes = [
        (c.name, OpType[c.operation], c.value if c.operation == "SET" else None) for c in body.data
    ]
    await client.alter_configs(
        Resource(TOPIC, topic_name), changes, validate_only=body.validate_only
    )
    return Response(status_code=204)
