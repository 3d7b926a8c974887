"""Bodies of the v3 consumer-group routes in Confluent's shape: groups, their consumers and
assignments, lags and lag summaries."""

from __future__ import annotations

from pydantic import Field

from services.gateway.models.admin import Relationship, Resource, ResourceList


class ConsumerGroup(Resource):
    cluster_id: str
    consumer_group_id: str
    is_simple: bool
    partition_assignor: str = Field(examples=["range"])
    state: str = Field(examples=["STABLE"])
    coordinator: Relationship
    consumers: Relationship
    lag_summary: Relationship


class Consumer(Resource):
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    instance_id: str | None
    client_id: str
    assignments: Relationship


class ConsumerAssignment(Resource):
    cluster_id: str
    consumer_group_id: str
    consumer_id: str
    topic_name: str
    partition_id: int
    partition: Relationship
    lag: Relationship


class ConsumerLag(Resource):
    cluster_id: str
    consumer_group_id: str
    topic_name: str
    partition_id: int
    current_offset: int
    log_end_offset: int
    lag: int
    consumer_id: str | None
    instance_id: str | None
    client_id: str | None


class LagSummary(Resource):
    cluster_id: str
    consumer_group_id: str
    max_lag_consumer_id: str | None
    max_lag_instance_id: str | None
    max_lag_client_id: str | None
    max_lag_topic_name: str | None
    max_lag_partition_id: int | None
    max_lag: int
    total_lag: int


class ConsumerGroupList(ResourceList):
    data: list[ConsumerGroup]


class ConsumerList(ResourceList):
    data: list[Consumer]


class ConsumerAssignmentList(ResourceList):
    data: list[ConsumerAssignment]


class ConsumerLagList(ResourceList):
    data: list[ConsumerLag]
