"""What each REST route asks of the ACLs: the operations and resources a Kafka client would
need for the same work, following Kafka 2.8's ``KafkaApis`` (pure).

Produce is WRITE on the topic (Produce); reads are READ (Fetch); offsets and metadata are
DESCRIBE (ListOffsets, Metadata); native group membership and v2 consumer instances are READ on
the group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), their commits also READ on each topic
(OffsetCommit) and their offset reads DESCRIBE on both (OffsetFetch); group descriptions are
DESCRIBE on the group; creating a topic is CREATE on the cluster or on the topic (CreateTopics),
deleting it DELETE, reading configs DESCRIBE_CONFIGS, adding partitions ALTER; describing ACLs
and SCRAM credentials is DESCRIBE on the cluster, changing them ALTER (DescribeAcls, CreateAcls,
DeleteAcls, Describe/AlterUserScramCredentials). Lists
(topics, groups) are filtered to what the principal may DESCRIBE, as Metadata and ListGroups
are, and a group's offsets and lags to the topics the principal may DESCRIBE, as OffsetFetch
answers; cluster and broker descriptions need nothing, as in Kafka, but sizes on disk need
DESCRIBE on the cluster (DescribeLogDirs).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pafka.security.acls import Operation, ResourceType


class Source(Enum):
    """Where a rule finds the names it checks."""

    TOPIC_PATH = "topic path parameter"
    GROUP_PATH = "group path parameter"
    BODY_TOPICS = "topics the JSON body names"
    CLUSTER = "the cluster"


@dataclass(frozen=True)
class Need:
    operation: Operation
    resource_type: ResourceType
    source: Source
    # CreateTopics' rule: CREATE on the cluster is enough, else CREATE on each topic.
    or_cluster: bool = False


R, W, D = Operation.READ, Operation.WRITE, Operation.DESCRIBE
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
S = Source

_WRITE_TOPIC = (Need(W, TOPIC, S.TOPIC_PATH),)
_READ_TOPIC = (Need(R, TOPIC, S.TOPIC_PATH),)
_DESCRIBE_TOPIC = (Need(D, TOPIC, S.TOPIC_PATH),)
_MEMBER = (Need(R, GROUP, S.GROUP_PATH),)
_MEMBER_ON_TOPICS = (Need(R, GROUP, S.GROUP_PATH), Need(R, TOPIC, S.BODY_TOPICS))
_DESCRIBE_GROUP = (Need(D, GROUP, S.GROUP_PATH),)

_DESCRIBE_CLUSTER = (Need(D, CLUSTER, S.CLUSTER),)
_ALTER_CLUSTER = (Need(Operation.ALTER, CLUSTER, S.CLUSTER),)

INSTANCE = "/consumers/{group}/instances/{instance}"
V3_CLUSTER = "/v3/clusters/{cluster_id}"
V3_TOPIC = "/v3/clusters/{cluster_id}/topics/{topic_name}"
V3_GROUP = "/v3/clusters/{cluster_id}/consumer-groups/{group_id}"

RULES: dict[tuple[str, str], tuple[Need, ...]] = {
    ("POST", "/topics/{topic}"): _WRITE_TOPIC,
    ("POST", "/topics/{topic}/partitions/{partition}"): _WRITE_TOPIC,
    ("GET", "/topics/{topic}/partitions/{partition}/records"): _READ_TOPIC,
    ("GET", "/topics/{topic}/partitions/{partition}/offsets"): _DESCRIBE_TOPIC,
    ("GET", "/topics/{topic}"): _DESCRIBE_TOPIC,
    ("GET", "/topics/{topic}/partitions"): _DESCRIBE_TOPIC,
    ("GET", "/topics/{topic}/partitions/{partition}"): _DESCRIBE_TOPIC,
    ("POST", "/groups/{group}/members"): _MEMBER,
    ("POST", "/groups/{group}/members/{member}/heartbeat"): _MEMBER,
    ("DELETE", "/groups/{group}/members/{member}"): _MEMBER,
    ("POST", "/groups/{group}/offsets"): _MEMBER_ON_TOPICS,
    ("GET", "/groups/{group}"): _DESCRIBE_GROUP,
    ("POST", "/consumers/{group}"): _MEMBER,
    ("DELETE", INSTANCE): _MEMBER,
    ("POST", f"{INSTANCE}/subscription"): _MEMBER_ON_TOPICS,
    ("GET", f"{INSTANCE}/subscription"): _MEMBER,
    ("DELETE", f"{INSTANCE}/subscription"): _MEMBER,
    ("POST", f"{INSTANCE}/assignments"): _MEMBER_ON_TOPICS,
    ("GET", f"{INSTANCE}/assignments"): _MEMBER,
    ("POST", f"{INSTANCE}/positions"): _MEMBER_ON_TOPICS,
    ("POST", f"{INSTANCE}/positions/beginning"): _MEMBER_ON_TOPICS,
    ("POST", f"{INSTANCE}/positions/end"): _MEMBER_ON_TOPICS,
    # Which topics an instance reads is its state, not the request's: checked when reading.
    ("GET", f"{INSTANCE}/records"): _MEMBER,
    ("POST", f"{INSTANCE}/offsets"): _MEMBER_ON_TOPICS,
    ("GET", f"{INSTANCE}/offsets"): (
        Need(D, GROUP, S.GROUP_PATH),
        Need(D, TOPIC, S.BODY_TOPICS),
    ),
    ("GET", "/v3/clusters"): (),
    ("GET", "/v3/clusters/{cluster_id}"): (),
    ("GET", "/v3/clusters/{cluster_id}/brokers"): (),
    ("GET", "/v3/clusters/{cluster_id}/brokers/{broker_id}"): (),
    ("POST", "/v3/clusters/{cluster_id}/topics"): (
        Need(Operation.CREATE, TOPIC, S.BODY_TOPICS, or_cluster=True),
    ),
    ("POST", f"{V3_TOPIC}/records"): _WRITE_TOPIC,
    ("GET", V3_TOPIC): _DESCRIBE_TOPIC,
    ("PATCH", V3_TOPIC): (Need(Operation.ALTER, TOPIC, S.TOPIC_PATH),),  # CreatePartitions
    ("DELETE", V3_TOPIC): (Need(Operation.DELETE, TOPIC, S.TOPIC_PATH),),
    ("GET", f"{V3_TOPIC}/configs"): (Need(Operation.DESCRIBE_CONFIGS, TOPIC, S.TOPIC_PATH),),
    ("GET", f"{V3_TOPIC}/partitions"): _DESCRIBE_TOPIC,
    ("GET", f"{V3_TOPIC}/partitions/{{partition_id}}"): _DESCRIBE_TOPIC,
    ("GET", f"{V3_TOPIC}/partitions/{{partition_id}}/replicas"): _DESCRIBE_TOPIC,
    ("GET", f"{V3_TOPIC}/partitions/{{partition_id}}/replicas/{{broker_id}}"): _DESCRIBE_TOPIC,
    ("GET", V3_GROUP): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/consumers"): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/consumers/{{consumer_id}}"): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/consumers/{{consumer_id}}/assignments"): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/lags"): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/lags/{{topic_name}}/partitions/{{partition_id}}"): (
        Need(D, GROUP, S.GROUP_PATH),
        Need(D, TOPIC, S.TOPIC_PATH),
    ),
    ("GET", f"{V3_GROUP}/lag-summary"): _DESCRIBE_GROUP,
    ("GET", f"{V3_GROUP}/lag-history"): _DESCRIBE_GROUP,
    ("DELETE", V3_GROUP): (Need(Operation.DELETE, GROUP, S.GROUP_PATH),),  # DeleteGroups
    ("POST", f"{V3_GROUP}/offsets:reset"): _MEMBER_ON_TOPICS,  # OffsetCommit's rights
    # The console's views (services/gateway/console/api.py); the overview describes the cluster.
    ("GET", "/v3/clusters/{cluster_id}/overview"): (),
    ("GET", "/v3/clusters/{cluster_id}/throughput"): (),
    ("GET", f"{V3_TOPIC}/partition-summaries"): _DESCRIBE_TOPIC,
    ("GET", "/v3/clusters/{cluster_id}/zookeeper-groups/{group_id}"): _DESCRIBE_GROUP,
    ("POST", f"{V3_TOPIC}/configs:alter"): (
        Need(Operation.ALTER_CONFIGS, TOPIC, S.TOPIC_PATH),  # IncrementalAlterConfigs
    ),
    # ACLs and SCRAM users (routers/acls.py, routers/scram_users.py): DescribeAcls and
    # DescribeUserScramCredentials need DESCRIBE on the cluster, their changes ALTER.
    ("GET", f"{V3_CLUSTER}/acls"): _DESCRIBE_CLUSTER,
    ("POST", f"{V3_CLUSTER}/acls"): _ALTER_CLUSTER,
    ("DELETE", f"{V3_CLUSTER}/acls"): _ALTER_CLUSTER,
    ("GET", f"{V3_CLUSTER}/user-scram-credentials"): _DESCRIBE_CLUSTER,
    ("GET", f"{V3_CLUSTER}/user-scram-credentials/{{user_name}}"): _DESCRIBE_CLUSTER,
    ("PUT", f"{V3_CLUSTER}/user-scram-credentials/{{user_name}}"): _ALTER_CLUSTER,
    ("DELETE", f"{V3_CLUSTER}/user-scram-credentials/{{user_name}}"): _ALTER_CLUSTER,
    ("GET", f"{V3_TOPIC}/offsets-for-times"): _DESCRIBE_TOPIC,  # ListOffsets by timestamp
    ("GET", f"{V3_TOPIC}/partitions/{{partition_id}}/record-search"): _READ_TOPIC,  # Fetch
    # DescribeLogDirs: DESCRIBE on the cluster, whichever topics are asked.
    ("GET", "/v3/clusters/{cluster_id}/topic-sizes"): _DESCRIBE_CLUSTER,
    ("GET", f"{V3_TOPIC}/partition-sizes"): _DESCRIBE_CLUSTER,
}
# Without an authorizer, a token given topic globs (auth.py) names no right on the cluster:
# only a token for every topic (``*``) may see or change ACLs and users (a narrower one could
# otherwise set any user's password and log in as that user).
_SECURITY_PATHS = (f"{V3_CLUSTER}/acls", f"{V3_CLUSTER}/user-scram-credentials")
ALL_TOPICS_TOKEN: frozenset[tuple[str, str]] = frozenset(
    key for key in RULES if key[1].startswith(_SECURITY_PATHS)
)
# Lists answer only what the principal may DESCRIBE (filtered by the routes themselves).
FILTERED: dict[tuple[str, str], ResourceType] = {
    ("GET", "/topics"): TOPIC,
    ("GET", "/v3/clusters/{cluster_id}/topics"): TOPIC,
    ("GET", "/v3/clusters/{cluster_id}/consumer-groups"): GROUP,
    ("GET", "/v3/clusters/{cluster_id}/topic-search"): TOPIC,
    ("GET", "/v3/clusters/{cluster_id}/group-search"): GROUP,
}
# A group's offsets and lags keep only the topics the principal may DESCRIBE, as OffsetFetch
# answers for all of a group's topics (the gateway itself reads them as a super user).
TOPIC_ENTRIES_FILTERED: frozenset[tuple[str, str]] = frozenset(
    {
        ("GET", "/groups/{group}"),
        ("GET", f"{V3_GROUP}/lags"),
        ("GET", f"{V3_GROUP}/lag-summary"),
        ("GET", "/v3/clusters/{cluster_id}/zookeeper-groups/{group_id}"),
    }
)
TOPIC_PARAMS = ("topic", "topic_name")
GROUP_PARAMS = ("group", "group_id")
