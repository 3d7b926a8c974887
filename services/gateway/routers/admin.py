"""Administration in Confluent's v3 shape: clusters, brokers, topics, partitions and replicas
under ``/v3/clusters/{cluster_id}/...``; consumer groups are in ``admin_groups``.

What every v3 route shares (links, the cluster-id check, the admin client) is
:mod:`services.gateway.v3`, the bodies are :mod:`services.gateway.models.admin`. All of it goes
over the Kafka protocol through :class:`pafka.client.admin.AdminClient`.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from pafka.client.admin import DEFAULT
from pafka.client.cluster import PartitionLeader
from pafka.errors import RestError
from pafka.security.acls import ResourceType
from services.gateway.access import visible
from services.gateway.context import Ctx, GatewayContext
from services.gateway.errors import UNKNOWN_PARTITION
from services.gateway.models.admin import (
    Broker,
    BrokerList,
    Cluster,
    ClusterList,
    ListMetadata,
    Partition,
    PartitionList,
    Replica,
    ReplicaList,
    Topic,
    TopicConfig,
    TopicConfigList,
    TopicCreate,
    TopicList,
    TopicUpdate,
)
from services.gateway.v3 import Admin, At, Links, current_cluster_id

router = APIRouter(prefix="/v3/clusters", tags=["admin (v3)"])

UNKNOWN_BROKER = 40400


# -- clusters and brokers --------------------------------------------------------------------


def _cluster(at: Links, controller_id: int) -> Cluster:
    return Cluster(
        kind="KafkaCluster",
        metadata=at.meta(),
        cluster_id=at.cluster_id,
        controller=at.rel("brokers", controller_id) if controller_id >= 0 else None,
        brokers=at.rel("brokers"),
        topics=at.rel("topics"),
        consumer_groups=at.rel("consumer-groups"),
    )


@router.get("", response_model=ClusterList)
async def list_clusters(request: Request, ctx: Ctx, client: Admin) -> ClusterList:
    described = await client.describe_cluster()
    at = Links(request, described.cluster_id or await current_cluster_id(ctx))
    listing = ListMetadata(self=at.base.rsplit("/", 1)[0])
    return ClusterList(
        kind="KafkaClusterList", metadata=listing, data=[_cluster(at, described.controller_id)]
    )


@router.get("/{cluster_id}", response_model=Cluster)
async def get_cluster(at: At, client: Admin) -> Cluster:
    return _cluster(at, (await client.describe_cluster()).controller_id)


@router.get("/{cluster_id}/brokers", response_model=BrokerList)
async def list_brokers(at: At, client: Admin) -> BrokerList:
    brokers = (await client.describe_cluster()).brokers
    data = [
        Broker(
            kind="KafkaBroker",
            metadata=at.meta("brokers", b.id, crn=f"/broker={b.id}"),
            cluster_id=at.cluster_id,
            broker_id=b.id,
            host=b.host,
            port=b.port,
            rack=b.rack,
        )
        for b in brokers
    ]
    return BrokerList(kind="KafkaBrokerList", metadata=at.listing("brokers"), data=data)


@router.get("/{cluster_id}/brokers/{broker_id}", response_model=Broker)
async def get_broker(broker_id: int, at: At, client: Admin) -> Broker:
    for broker in (await list_brokers(at, client)).data:
        if broker.broker_id == broker_id:
            return broker
    raise RestError(UNKNOWN_BROKER, f"broker {broker_id} not found")


# -- topics ------------------------------------------------------------------------------------


def _topic(at: Links, name: str, partitions: dict[int, PartitionLeader]) -> Topic:
    first = partitions.get(0)
    return Topic(
        kind="KafkaTopic",
        metadata=at.meta("topics", name, crn=f"/topic={name}"),
        cluster_id=at.cluster_id,
        topic_name=name,
        replication_factor=len(first.replicas) if first else 0,
        partitions_count=len(partitions),
        partitions=at.rel("topics", name, "partitions"),
        configs=at.rel("topics", name, "configs"),
    )


@router.get("/{cluster_id}/topics", response_model=TopicList)
async def list_topics(request: Request, at: At, ctx: Ctx) -> TopicList:
    await ctx.cluster.refresh()
    shown = set(visible(request, ctx.authorizer, ResourceType.TOPIC, ctx.cluster.topics))
    data = [
        _topic(at, t.name, t.partitions)
        for t in sorted(ctx.cluster.topics.values(), key=lambda t: t.name)
        if t.name in shown
    ]
    return TopicList(kind="KafkaTopicList", metadata=at.listing("topics"), data=data)


@router.post("/{cluster_id}/topics", response_model=Topic, status_code=201)
async def create_topic(
    body: TopicCreate,
    response: Response,
    at: At,
    ctx: Ctx,
    client: Admin,
) -> Topic:
    created = await client.create_topic(
        body.topic_name,
        body.partitions_count or DEFAULT,
        body.replication_factor or DEFAULT,
        {c.name: c.value for c in body.configs if c.value is not None},
        validate_only=body.validate_only,
    )
    if body.validate_only:
        topic = _topic(at, created.name, {})
        topic.partitions_count = created.partitions
        topic.replication_factor = created.replication_factor
    else:
        topic = _topic(at, created.name, (await ctx.cluster.topic(created.name)).partitions)
    response.headers["Location"] = topic.metadata.self
    return topic


@router.get("/{cluster_id}/topics/{topic_name}", response_model=Topic)
async def get_topic(topic_name: str, at: At, ctx: Ctx) -> Topic:
    info = await ctx.cluster.topic(topic_name, refresh=True)
    return _topic(at, topic_name, info.partitions)


@router.patch("/{cluster_id}/topics/{topic_name}", response_model=Topic)
async def update_topic(
    topic_name: str,
    body: TopicUpdate,
    at: At,
    ctx: Ctx,
    client: Admin,
) -> Topic:
    await client.create_partitions(topic_name, body.partitions_count)
    return _topic(at, topic_name, (await ctx.cluster.topic(topic_name, refresh=True)).partitions)


@router.delete("/{cluster_id}/topics/{topic_name}", status_code=204)
async def delete_topic(topic_name: str, at: At, client: Admin) -> Response:
    await client.delete_topic(topic_name)
    return Response(status_code=204)


@router.get("/{cluster_id}/topics/{topic_name}/configs", response_model=TopicConfigList)
async def list_topic_configs(topic_name: str, at: At, client: Admin) -> TopicConfigList:
    data = [
        TopicConfig(
            kind="KafkaTopicConfig",
            metadata=at.meta(
                "topics", topic_name, "configs", c.name, crn=f"/topic={topic_name}/config={c.name}"
            ),
            cluster_id=at.cluster_id,
            topic_name=topic_name,
            name=c.name,
            value=None if c.sensitive else c.value,
            is_default=c.is_default,
            is_read_only=c.read_only,
            is_sensitive=c.sensitive,
            source=c.source,
        )
        for c in await client.topic_configs(topic_name)
    ]
    return TopicConfigList(
        kind="KafkaTopicConfigList", metadata=at.listing("topics", topic_name, "configs"), data=data
    )


# -- partitions and replicas -------------------------------------------------------------------


def _partition(at: Links, topic: str, partition: int, state: PartitionLeader) -> Partition:
    path = ("topics", topic, "partitions", partition)
    leader = state.leader if state.leader >= 0 else None
    return Partition(
        kind="KafkaPartition",
        metadata=at.meta(*path, crn=f"/topic={topic}/partition={partition}"),
        cluster_id=at.cluster_id,
        topic_name=topic,
        partition_id=partition,
        leader=at.rel(*path, "replicas", leader) if leader is not None else None,
        replicas=at.rel(*path, "replicas"),
        leader_id=leader,
        replica_ids=list(state.replicas),
        isr_ids=list(state.isr),
    )


async def _partition_state(ctx: GatewayContext, topic: str, partition: int) -> PartitionLeader:
    state = (await ctx.cluster.topic(topic, refresh=True)).partitions.get(partition)
    if state is None:
        raise RestError(UNKNOWN_PARTITION, f"topic {topic!r} has no partition {partition}")
    return state


@router.get("/{cluster_id}/topics/{topic_name}/partitions", response_model=PartitionList)
async def list_partitions(topic_name: str, at: At, ctx: Ctx) -> PartitionList:
    info = await ctx.cluster.topic(topic_name, refresh=True)
    data = [_partition(at, topic_name, p, s) for p, s in sorted(info.partitions.items())]
    return PartitionList(
        kind="KafkaPartitionList",
        metadata=at.listing("topics", topic_name, "partitions"),
        data=data,
    )


@router.get("/{cluster_id}/topics/{topic_name}/partitions/{partition_id}", response_model=Partition)
async def get_partition(
    topic_name: str,
    partition_id: int,
    at: At,
    ctx: Ctx,
) -> Partition:
    return _partition(
        at, topic_name, partition_id, await _partition_state(ctx, topic_name, partition_id)
    )


def _replicas(at: Links, topic: str, partition: int, state: PartitionLeader) -> list[Replica]:
    path = ("topics", topic, "partitions", partition, "replicas")
    return [
        Replica(
            kind="KafkaReplica",
            metadata=at.meta(*path, b, crn=f"/topic={topic}/partition={partition}/replica={b}"),
            cluster_id=at.cluster_id,
            topic_name=topic,
            partition_id=partition,
            broker_id=b,
            is_leader=b == state.leader,
            is_in_sync=b in state.isr,
            broker=at.rel("brokers", b),
        )
        for b in state.replicas
    ]


@router.get(
    "/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas",
    response_model=ReplicaList,
)
async def list_replicas(
    topic_name: str,
    partition_id: int,
    at: At,
    ctx: Ctx,
) -> ReplicaList:
    state = await _partition_state(ctx, topic_name, partition_id)
    return ReplicaList(
        kind="KafkaReplicaList",
        metadata=at.listing("topics", topic_name, "partitions", partition_id, "replicas"),
        data=_replicas(at, topic_name, partition_id, state),
    )


@router.get(
    "/{cluster_id}/topics/{topic_name}/partitions/{partition_id}/replicas/{broker_id}",
    response_model=Replica,
)
async def get_replica(
    topic_name: str,
    partition_id: int,
    broker_id: int,
    at: At,
    ctx: Ctx,
) -> Replica:
    state = await _partition_state(ctx, topic_name, partition_id)
    for replica in _replicas(at, topic_name, partition_id, state):
        if replica.broker_id == broker_id:
            return replica
    raise RestError(UNKNOWN_BROKER, f"broker {broker_id} holds no replica of this partition")
