"""Bodies of REST Proxy v2 consumer instances (``/consumers``), in Confluent's field names."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from services.gateway.consumer_instances import LATEST
from services.gateway.models import MAX_INT32, MAX_INT64


class CreateConsumer(BaseModel):
    model_config = ConfigDict(
        populate_by_name=True,
        json_schema_extra={
            "examples": [
                {
                    "name": "reader-1",
                    "format": "json",
                    "auto.offset.reset": "earliest",
                    "auto.commit.enable": "false",
                    "isolation.level": "read_committed",
                }
            ]
        },
    )
    name: str | None = Field(None, description="Generated when absent")
    format: str = Field("binary", description="json or binary: how keys and values are shown")
    auto_offset_reset: str = Field(LATEST, alias="auto.offset.reset")
    auto_commit_enable: bool = Field(True, alias="auto.commit.enable")
    isolation_level: str = Field(
        "read_committed",
        alias="isolation.level",
        description="read_committed: only records of committed transactions (and records "
        "written outside transactions), up to the last stable offset; read_uncommitted: all",
    )

    @field_validator("auto_commit_enable", mode="before")
    @classmethod
    def _boolean(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        return value


class CreatedConsumer(BaseModel):
    instance_id: str = Field(examples=["reader-1"])
    base_uri: str = Field(examples=["http://gateway:8082/consumers/my-group/instances/reader-1"])


class Subscription(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"topics": ["orders"]}]})
    topics: list[str] = []
    topic_pattern: str | None = Field(default=None, description="Not supported: name the topics")


class PartitionRef(BaseModel):
    topic: str = Field(examples=["orders"])
    partition: int = Field(ge=0, le=MAX_INT32, examples=[0])


class Partitions(BaseModel):
    partitions: list[PartitionRef]


class PartitionOffset(PartitionRef):
    offset: int = Field(ge=0, le=MAX_INT64, examples=[42])


class Offsets(BaseModel):
    offsets: list[PartitionOffset]


class CommittedOffset(PartitionOffset):
    metadata: str = ""


class CommittedOffsets(BaseModel):
    offsets: list[CommittedOffset]
