"""Bodies of the v3 admin routes in Confluent's shape: clusters, brokers, topics, configs,
partitions, replicas, and the resource, list and link envelopes every v3 resource shares.

Every resource is ``{"kind": "Kafka...", "metadata": {"self": url, "resource_name": crn}, ...}``,
every collection ``{"kind": "Kafka...List", "metadata": {"self": url, "next": null}, "data":
[...]}``, and links to other resources are ``{"related": url}``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from services.gateway.models import MAX_INT16, MAX_INT32


class Relationship(BaseModel):
    related: str


class ResourceMetadata(BaseModel):
    self: str
    resource_name: str | None = None


class ListMetadata(BaseModel):
    self: str
    next: str | None = None


class Resource(BaseModel):
    kind: str
    metadata: ResourceMetadata


class Cluster(Resource):
    cluster_id: str
    controller: Relationship | None
    brokers: Relationship
    topics: Relationship
    consumer_groups: Relationship


class Broker(Resource):
    cluster_id: str
    broker_id: int
    host: str
    port: int
    rack: str | None


class Topic(Resource):
    cluster_id: str
    topic_name: str
    is_internal: bool = False
    replication_factor: int
    partitions_count: int
    partitions: Relationship
    configs: Relationship


class ConfigSetting(BaseModel):
    name: str = Field(examples=["retention.ms"])
    value: str | None = Field(examples=["86400000"])


class TopicCreate(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "topic_name": "orders",
                    "partitions_count": 6,
                    "replication_factor": 3,
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                }
            ]
        }
    )
    topic_name: str
    partitions_count: int | None = Field(
        None, ge=1, le=MAX_INT32, description="the brokers' default when absent"
    )
    replication_factor: int | None = Field(
        None, ge=1, le=MAX_INT16, description="the brokers' default when absent"
    )
    configs: list[ConfigSetting] = []
    validate_only: bool = False


class TopicUpdate(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"partitions_count": 12}]})
    partitions_count: int = Field(
        ge=1, le=MAX_INT32, description="the new total; partitions are only ever added"
    )


class TopicConfig(Resource):
    cluster_id: str
    topic_name: str
    name: str
    value: str | None
    is_default: bool
    is_read_only: bool
    is_sensitive: bool
    source: str


class Partition(Resource):
    """Confluent's partition, plus the plain broker ids of its leader, replicas and ISR."""

    cluster_id: str
    topic_name: str
    partition_id: int
    leader: Relationship | None
    replicas: Relationship
    leader_id: int | None = Field(examples=[1])
    replica_ids: list[int] = Field(examples=[[1, 2, 3]])
    isr_ids: list[int] = Field(examples=[[1, 2]])


class Replica(Resource):
    cluster_id: str
    topic_name: str
    partition_id: int
    broker_id: int
    is_leader: bool
    is_in_sync: bool
    broker: Relationship


class ResourceList(BaseModel):
    kind: str
    metadata: ListMetadata


class ClusterList(ResourceList):
    data: list[Cluster]


class BrokerList(ResourceList):
    data: list[Broker]


class TopicList(ResourceList):
    data: list[Topic]


class TopicConfigList(ResourceList):
    data: list[TopicConfig]


class PartitionList(ResourceList):
    data: list[Partition]


class ReplicaList(ResourceList):
    data: list[Replica]
