"""Bodies of native group membership (``/groups``): join, heartbeat, commit, the group view.

Numbers that travel as int32 in the Kafka protocol are bounded to it here, so that an
out-of-range value is refused as a 422 before anything is sent to a broker.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from pafka.groups.assignors import ASSIGNORS
from services.gateway.models import MAX_INT32, MAX_INT64

ASSIGNOR_NAMES: list[JsonValue] = [*sorted(ASSIGNORS)]


class JoinRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"topics": ["orders"], "assignor": "range", "session_timeout_ms": 30000},
                {"topics": ["orders"], "member_id": "pafka-gateway-6f1c...", "assignor": "range"},
            ]
        },
    )

    topics: list[Annotated[str, Field(min_length=1)]] = Field(
        min_length=1, description="Topics to consume; each must exist"
    )
    assignor: str = Field(
        "range",
        description="Partition assignor, by its Kafka protocol name",
        json_schema_extra={"enum": ASSIGNOR_NAMES},
    )
    member_id: str | None = Field(
        None, min_length=1, description="Rejoin as this member; omit to join as a new one"
    )
    session_timeout_ms: int = Field(
        30_000,
        gt=0,
        le=MAX_INT32,
        description="Heartbeat at least this often; the broker allows [6000, 1800000]",
    )
    rebalance_timeout_ms: int | None = Field(
        None,
        gt=0,
        le=MAX_INT32,
        description="How long a rebalance waits for members to rejoin (default: the session "
        "timeout); this request may take as long",
    )
    instance_id: str | None = Field(
        None, min_length=1, description="group.instance.id for static membership"
    )

    @field_validator("assignor")
    @classmethod
    def _known_assignor(cls, value: str) -> str:
        if value not in ASSIGNORS:
            raise ValueError(f"unknown assignor {value!r} (known: {', '.join(sorted(ASSIGNORS))})")
        return value


class AssignedPartition(BaseModel):
    topic: str
    partition: int
    committed_offset: int = Field(description="Next offset to consume; -1 when none committed")


class JoinResponse(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                    "generation": 3,
                    "assignor": "range",
                    "leader": True,
                    "assignment": [{"topic": "orders", "partition": 0, "committed_offset": 42}],
                }
            ]
        }
    )

    member_id: str
    generation: int
    assignor: str = Field(description="The assignor the group chose")
    leader: bool = Field(description="Whether this member computed the group's assignment")
    assignment: list[AssignedPartition]


class HeartbeatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"generation": 3}]})

    generation: int = Field(ge=0, le=MAX_INT32)
    instance_id: str | None = Field(None, min_length=1)


class HeartbeatResponse(BaseModel):
    rejoin: bool = Field(False, description="Always false here; a rejoin is a 409")


class RejoinError(BaseModel):
    error_code: int
    message: str
    rejoin: bool = True


class OffsetToCommit(BaseModel):
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0, le=MAX_INT32)
    offset: int = Field(ge=0, le=MAX_INT64, description="The next offset to consume")
    metadata: str | None = None


class CommitRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                    "generation": 3,
                    "offsets": [{"topic": "orders", "partition": 0, "offset": 43}],
                }
            ]
        },
    )

    member_id: str = Field(min_length=1)
    generation: int = Field(ge=0, le=MAX_INT32)
    offsets: list[OffsetToCommit] = Field(min_length=1)
    instance_id: str | None = Field(None, min_length=1)


class CommitResult(BaseModel):
    topic: str
    partition: int
    offset: int
    error_code: int = Field(0, description="The Kafka error code; 0: committed")
    error: str | None = None


class CommitResponse(BaseModel):
    offsets: list[CommitResult]


class CommitError(BaseModel):
    error_code: int
    message: str
    # Per partition when some were refused; absent when the whole commit was (stale generation).
    offsets: list[CommitResult] | None = None
    rejoin: bool | None = None


class MemberPartition(BaseModel):
    topic: str
    partition: int


class GroupMemberView(BaseModel):
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: list[MemberPartition]


class PartitionLag(BaseModel):
    topic: str
    partition: int
    committed_offset: int = Field(description="-1 when none committed")
    end_offset: int | None = Field(description="The high watermark; null if unknown")
    lag: int | None = Field(description="end_offset - committed_offset; null without either")


class GroupView(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "group": "orders-processors",
                    "state": "Stable",
                    "protocol": "range",
                    "generation": 3,
                    "members": [
                        {
                            "member_id": "pafka-gateway-6f1c2d0e-8a57-4a8e-9f43-3c1d6b0a7e21",
                            "instance_id": None,
                            "client_id": "pafka-gateway",
                            "host": "10.0.0.7",
                            "assignment": [{"topic": "orders", "partition": 0}],
                        }
                    ],
                    "partitions": [
                        {
                            "topic": "orders",
                            "partition": 0,
                            "committed_offset": 42,
                            "end_offset": 50,
                            "lag": 8,
                        }
                    ],
                }
            ]
        }
    )

    group: str
    state: str
    protocol: str | None
    generation: int | None = Field(description="From ZooKeeper; null when it is not reachable")
    members: list[GroupMemberView]
    partitions: list[PartitionLag]
