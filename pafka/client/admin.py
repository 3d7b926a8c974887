"""Cluster administration over the Kafka protocol, what Kafka's AdminClient does for its tools.

Topics are created, grown and deleted through any broker (CreateTopics, CreatePartitions,
DeleteTopics: the broker writes ZooKeeper and answers once its metadata shows the outcome);
configs come from DescribeConfigs and change by IncrementalAlterConfigs
(:mod:`pafka.client.configs`); DeleteRecords and ElectLeaders are in
:mod:`pafka.client.maintenance`. Groups are described through their coordinator
(:class:`pafka.client.groups.GroupClient`: DescribeGroups, OffsetFetch) and measured against
the partition leaders' log ends for lags (:mod:`pafka.client.group_lags`).
An error code in a response is raised once, as the :mod:`pafka.errors` class of that code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pafka.client import configs, maintenance
from pafka.client.cluster import ClusterClient
from pafka.client.group_lags import PartitionLag, log_end_offsets
from pafka.client.groups import DescribedMember, GroupClient, GroupDescription
from pafka.client.isolation import IsolationLevel
from pafka.cluster.config_ops import OpType
from pafka.cluster.elect_leaders import ElectionType
from pafka.errors import GroupIdNotFoundError, KafkaApiError, for_code
from pafka.groups.consumer_protocol import TopicPartition
from pafka.protocol.messages import request_class
from pafka.protocol.versions import ApiKey

CREATE_TOPICS_VERSION = 5
DELETE_TOPICS_VERSION = 4
CREATE_PARTITIONS_VERSION = 2
METADATA_VERSION = 9

DEFAULT = -1  # partitions / replication factor: the broker's default
DEAD = "Dead"


@dataclass(frozen=True)
class BrokerNode:
    id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerNode, ...]


@dataclass(frozen=True)
class CreatedTopic:
    name: str
    partitions: int
    replication_factor: int


@dataclass(frozen=True)
class GroupView:
    """A group as its coordinator describes it, and which broker that is."""

    description: GroupDescription
    coordinator: int

    def owner(self, tp: TopicPartition) -> DescribedMember | None:
        return next((m for m in self.description.members if tp in m.assigned_partitions()), None)


def _raise_for(code: int, message: str | None, what: str) -> None:
    if code:
        raise for_code(code, f"{what}: {message}" if message else what)


class AdminClient:
    def __init__(
        self,
        cluster: ClusterClient,
        *,
        timeout_ms: int = 30_000,
        groups: GroupClient | None = None,
    ) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms
        self.groups = groups or GroupClient(cluster)

    # -- cluster and topics --------------------------------------------------------------

    async def describe_cluster(self) -> ClusterDescription:
        cls = request_class(ApiKey.METADATA)[METADATA_VERSION]
        response = await self.cluster.call_any(
            ApiKey.METADATA, METADATA_VERSION, cls(topics=[], allow_auto_topic_creation=False)
        )
        brokers = tuple(
            sorted(
                (BrokerNode(b.node_id, b.host, b.port, b.rack) for b in response.brokers),
                key=lambda b: b.id,
            )
        )
        return ClusterDescription(response.cluster_id, response.controller_id, brokers)

    async def create_topic(
        self,
        name: str,
        partitions: int = DEFAULT,
        replication_factor: int = DEFAULT,
        configs: Mapping[str, str] | None = None,
        *,
        validate_only: bool = False,
    ) -> CreatedTopic:
        cls = request_class(ApiKey.CREATE_TOPICS)[CREATE_TOPICS_VERSION]
        topic_cls = cls.CreatableTopic
        topic = topic_cls(
            name=name,
            num_partitions=partitions,
            replication_factor=replication_factor,
            assignments=[],
            configs=[
                topic_cls.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()
            ],
        )
        response = await self.cluster.call_any(
            ApiKey.CREATE_TOPICS,
            CREATE_TOPICS_VERSION,
            cls(topics=[topic], timeout_ms=self.timeout_ms, validate_only=validate_only),
        )
        (result,) = response.topics
        _raise_for(result.error_code, result.error_message, f"creating topic {name!r}")
        await self.cluster.refresh([name])
        return CreatedTopic(name, result.num_partitions, result.replication_factor)

    async def delete_topic(self, name: str) -> None:
        cls = request_class(ApiKey.DELETE_TOPICS)[DELETE_TOPICS_VERSION]
        response = await self.cluster.call_any(
            ApiKey.DELETE_TOPICS,
            DELETE_TOPICS_VERSION,
            cls(topic_names=[name], timeout_ms=self.timeout_ms),
        )
        (result,) = response.responses
        _raise_for(result.error_code, getattr(result, "error_message", None), f"topic {name!r}")
        self.cluster.forget(name)

    async def create_partitions(self, name: str, total: int) -> None:
        """Grow ``name`` to ``total`` partitions."""
        cls = request_class(ApiKey.CREATE_PARTITIONS)[CREATE_PARTITIONS_VERSION]
        topic = cls.CreatePartitionsTopic(name=name, count=total, assignments=None)
        response = await self.cluster.call_any(
            ApiKey.CREATE_PARTITIONS,
            CREATE_PARTITIONS_VERSION,
            cls(topics=[topic], timeout_ms=self.timeout_ms, validate_only=False),
        )
        (result,) = response.results
        _raise_for(result.error_code, result.error_message, f"topic {name!r}")
        await self.cluster.refresh([name])

    async def topic_configs(self, name: str) -> list[configs.ConfigEntry]:
        return await configs.describe_configs(self.cluster, configs.Resource(configs.TOPIC, name))

    # -- configs, records, leaders (pafka.client.configs, pafka.client.maintenance) ---------

    async def describe_configs(self, resource: configs.Resource) -> list[configs.ConfigEntry]:
        return await configs.describe_configs(self.cluster, resource)

    async def alter_configs(
        self,
        resource: configs.Resource,
        changes: Iterable[tuple[str, OpType, str | None]],
        *,
        validate_only: bool = False,
    ) -> None:
        await configs.alter_configs(self.cluster, resource, changes, validate_only=validate_only)

    async def delete_records(
        self, offsets: Mapping[tuple[str, int], int]
    ) -> dict[tuple[str, int], int | KafkaApiError]:
        return await maintenance.delete_records(self.cluster, offsets, self.timeout_ms)

    async def elect_leaders(
        self, kind: ElectionType, partitions: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], KafkaApiError | None]:
        return await maintenance.elect_leaders(self.cluster, kind, partitions, self.timeout_ms)

    # -- groups ----------------------------------------------------------------------------

    async def describe_group(self, group: str) -> GroupView:
        description = await self.groups.describe(group)
        return GroupView(description, await self.groups.coordinator(group))

    async def committed_offsets(self, group: str) -> dict[TopicPartition, int]:
        """Every partition ``group`` has committed an offset for."""
        found = await self.groups.fetch_offsets(group)
        return {tp: c.offset for tp, c in sorted(found.items()) if c is not None}

    async def group_lags(
        self, group: str, isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    ) -> tuple[GroupView, list[PartitionLag]]:
        """The group and, per partition it committed or owns, position, log end (as
        ``isolation`` sees it) and owner. A dead group with nothing committed does not exist."""
        view = await self.describe_group(group)
        committed = await self.committed_offsets(group)
        if view.description.state == DEAD and not committed:
            raise GroupIdNotFoundError(f"consumer group {group!r} does not exist")
        owned = {tp for m in view.description.members for tp in m.assigned_partitions()}
        partitions = sorted(committed.keys() | owned)
        ends = await log_end_offsets(self.cluster, partitions, isolation)
        lags = [
            PartitionLag(tp[0], tp[1], committed.get(tp), ends.get(tp), view.owner(tp))
            for tp in partitions
        ]
        return view, lags
