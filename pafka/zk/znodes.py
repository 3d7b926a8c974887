"""Every ZooKeeper path and znode payload pafka uses (design §2), and nothing else.

No other module spells a path string. Each znode family is one small class with ``path()``,
``encode()`` and ``decode()``; payloads are JSON objects carrying a ``"version"`` field, as in
Kafka 2.x, so older and newer processes can read each other's nodes.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Any, Self

from pafka.errors import ConfigError, CoordinationError, CorruptZNodeError
from pafka.security.listeners import Endpoint, SecurityProtocol, address_of, parse_registered
from pafka.transactions.metadata import TxnMetadata
from pafka.transactions.state import TxnState
from pafka.zk import payload_fields as fields

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
CONSUMERS = "/consumers"
GATEWAY = "/gateway"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
TXN_OFFSET_PRODUCERS = "/txn_offset_producers"
TRANSACTIONS = "/transactions"
# Security, in Kafka 2.x's layouts (its tools read and write these).
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"
KAFKA_ACL = "/kafka-acl"
KAFKA_ACL_CHANGES = "/kafka-acl-changes"
KAFKA_ACL_EXTENDED = "/kafka-acl-extended"
KAFKA_ACL_EXTENDED_CHANGES = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX = "acl_changes_"
# The entity name of a default quota or config (``/config/users/<default>``).
DEFAULT_ENTITY = "<default>"

# Persistent parents created once at start-up by whichever process comes first.
PERSISTENT_ROOTS = (
    BROKER_IDS,
    BROKER_TOPICS,
    CONFIG_TOPICS,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    CONSUMERS,
    "/cluster",
)


def _dump(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()


def _load(data: bytes, path: str) -> dict[str, Any]:
    try:
        payload = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CoordinationError(f"znode {path} holds invalid JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise CoordinationError(f"znode {path} holds {type(payload).__name__}, not an object")
    return payload


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class ClusterIdZNode:
    id: str

    @staticmethod
    def path() -> str:
        return CLUSTER_ID

    def encode(self) -> bytes:
        return _dump({"version": "1", "id": self.id})

    @classmethod
    def decode(cls, data: bytes) -> ClusterIdZNode:
        return cls(id=str(_load(data, CLUSTER_ID)["id"]))


@dataclass(frozen=True)
class BrokerInfo:
    """``/brokers/ids/{id}``: an ephemeral registration of one live broker.

    ``endpoints`` are its advertised listeners; a registration made without them has one
    PLAINTEXT listener at ``host:port``. As in Kafka, the top-level ``host`` and ``port`` of the
    payload are the PLAINTEXT listener's (null and -1 without one), which ZooKeeper-era clients
    such as pykafka read; pafka reads ``endpoints``.
    """

    id: int
    host: str
    port: int
    control_url: str
    rack: str | None = None
    timestamp_ms: int = field(default_factory=now_ms)
    endpoints: tuple[Endpoint, ...] = ()

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BROKER_IDS}/{broker_id}"

    @property
    def listeners(self) -> tuple[Endpoint, ...]:
        if self.endpoints:
            return self.endpoints
        return (Endpoint("PLAINTEXT", SecurityProtocol.PLAINTEXT, self.host, self.port),)

    def address(self, listener: str) -> tuple[str, int] | None:
        return address_of(self.listeners, listener)

    def encode(self) -> bytes:
        listeners = self.listeners
        plaintext = address_of(listeners, "PLAINTEXT")
        return _dump(
            {
                "version": 5,
                "host": plaintext[0] if plaintext else None,
                "port": plaintext[1] if plaintext else -1,
                "rack": self.rack,
                "endpoints": [e.url for e in listeners],
                "listener_security_protocol_map": {e.listener: e.protocol.value for e in listeners},
                "jmx_port": -1,
                "control_url": self.control_url,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> BrokerInfo:
        path = cls.path(broker_id)
        p = _load(data, path)
        urls = p.get("endpoints")
        try:
            endpoints = (
                parse_registered(urls, p.get("listener_security_protocol_map")) if urls else ()
            )
        except (ConfigError, TypeError, AttributeError) as exc:
            raise CorruptZNodeError(path, f"bad endpoints: {exc}") from exc
        host, port = p.get("host"), int(p.get("port", -1) or -1)
        if endpoints and (host is None or port < 0):
            host, port = endpoints[0].host, endpoints[0].port
        return cls(
            id=broker_id,
            host=str(host),
            port=port,
            control_url=str(p.get("control_url", "")),
            rack=p.get("rack"),
            timestamp_ms=int(p.get("timestamp", 0)),
            endpoints=endpoints,
        )


@dataclass(frozen=True)
class TopicZNode:
    """``/brokers/topics/{topic}``: topic id and replica assignment, partition -> replicas."""

    topic_id: uuid.UUID
    partitions: dict[int, tuple[int, ...]]

    @staticmethod
    def path(topic: str) -> str:
        return f"{BROKER_TOPICS}/{topic}"

    @staticmethod
    def partitions_path(topic: str) -> str:
        return f"{BROKER_TOPICS}/{topic}/partitions"

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 3,
                "topic_id": str(self.topic_id),
                "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())},
                "adding_replicas": {},
                "removing_replicas": {},
            }
        )

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicZNode:
        p = _load(data, cls.path(topic))
        return cls(
            topic_id=uuid.UUID(str(p["topic_id"])),
            partitions={int(k): tuple(int(b) for b in v) for k, v in p["partitions"].items()},
        )


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/{topic}/partitions/{p}/state``: leader, epoch and ISR of one partition.

    ``leader == -1`` means the partition is offline. ``zk_version`` is not part of the payload:
    it is the znode version read alongside, used for conditional updates.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"

    @staticmethod
    def partition_path(topic: str, partition: int) -> str:
        return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "leader": self.leader,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
                "controller_epoch": self.controller_epoch,
            }
        )

    @classmethod
    def decode(cls, topic: str, partition: int, data: bytes) -> PartitionState:
        p = _load(data, cls.path(topic, partition))
        return cls(
            leader=int(p["leader"]),
            leader_epoch=int(p["leader_epoch"]),
            isr=tuple(int(b) for b in p["isr"]),
            controller_epoch=int(p["controller_epoch"]),
        )


@dataclass(frozen=True)
class TopicConfigZNode:
    """``/config/topics/{topic}``: topic-level config overrides (strings, as Kafka keeps them)."""

    config: dict[str, str]

    @staticmethod
    def path(topic: str) -> str:
        return f"{CONFIG_TOPICS}/{topic}"

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(self.config.items()))})

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicConfigZNode:
        p = _load(data, cls.path(topic))
        return cls(config={str(k): str(v) for k, v in p.get("config", {}).items()})


@dataclass(frozen=True)
class BrokerConfigZNode:
    """``/config/brokers/{id}`` or ``/config/brokers/<default>``: dynamic broker configs, as
    Kafka 2.x keeps them (strings; ``<default>`` applies to every broker)."""

    config: dict[str, str]

    @staticmethod
    def path(entity: str) -> str:
        return f"{CONFIG_BROKERS}/{entity}"

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(self.config.items()))})

    @classmethod
    def decode(cls, entity: str, data: bytes) -> BrokerConfigZNode:
        p = _load(data, cls.path(entity))
        config = p.get("config", {})
        if not isinstance(config, dict):
            raise CoordinationError(f"znode {cls.path(entity)} has no config object")
        return cls(config={str(k): str(v) for k, v in config.items()})


@dataclass(frozen=True)
class ControllerZNode:
    """``/controller``: the ephemeral claim of the active controller."""

    controller_id: int
    host: str
    url: str
    timestamp_ms: int = field(default_factory=now_ms)

    @staticmethod
    def path() -> str:
        return CONTROLLER

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "brokerid": self.controller_id,
                "host": self.host,
                "url": self.url,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ControllerZNode:
        p = _load(data, CONTROLLER)
        return cls(
            controller_id=int(p["brokerid"]),
            host=str(p.get("host", "")),
            url=str(p.get("url", "")),
            timestamp_ms=int(p.get("timestamp", 0)),
        )


class ControllerEpochZNode:
    """``/controller_epoch``: a bare integer, as in Kafka."""

    @staticmethod
    def path() -> str:
        return CONTROLLER_EPOCH

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode()

    @staticmethod
    def decode(data: bytes) -> int:
        try:
            return int(data.decode())
        except (UnicodeDecodeError, ValueError) as exc:
            raise CoordinationError(f"{CONTROLLER_EPOCH} holds {data!r}") from exc


class DeleteTopicZNode:
    """``/admin/delete_topics/{topic}``: a deletion request; the node's existence is the request."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DELETE_TOPICS}/{topic}"


@dataclass(frozen=True)
class TopicPartitionsPayload:
    """A list of topic-partitions, the payload of several admin and notification nodes."""

    partitions: tuple[tuple[str, int], ...]

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "partitions": [{"topic": t, "partition": p} for t, p in self.partitions],
            }
        )

    @classmethod
    def decode(cls, data: bytes, path: str) -> TopicPartitionsPayload:
        p = _load(data, path)
        return cls(
            partitions=tuple((str(e["topic"]), int(e["partition"])) for e in p["partitions"])
        )


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``: partitions to move back to their preferred leader."""

    @staticmethod
    def path() -> str:
        return PREFERRED_REPLICA_ELECTION


class IsrChangeNotificationZNode:
    """``/isr_change_notification/isr_change_{seq}``: partitions whose ISR a leader changed."""

    @staticmethod
    def path_prefix() -> str:
        return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}"

    @staticmethod
    def path(child: str) -> str:
        return f"{ISR_CHANGE_NOTIFICATION}/{child}"


@dataclass(frozen=True)
class ReassignmentZNode:
    """``/admin/reassign_partitions``: target replica lists per partition."""

    targets: dict[tuple[str, int], tuple[int, ...]]

    @staticmethod
    def path() -> str:
        return REASSIGN_PARTITIONS

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": list(r)}
                    for (t, p), r in sorted(self.targets.items())
                ],
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ReassignmentZNode:
        p = _load(data, REASSIGN_PARTITIONS)
        return cls(
            targets={
                (str(e["topic"]), int(e["partition"])): tuple(int(b) for b in e["replicas"])
                for e in p["partitions"]
            }
        )


class ConsumerGroupZNodes:
    """``/consumers/{group}/...``: the seeds' consumer-group registry, shared with
    ZooKeeper-coordinated clients (Kafka 0.8's high-level consumer, pykafka's BalancedConsumer).

    Members of a pafka group connect to a coordinator broker, not to ZooKeeper, so their member
    and owner nodes are persistent and kept by the group's coordinator (it deletes them when a
    member leaves or its session times out). A coordinator that takes a group over from a dead
    one therefore still sees who owned what and waits for those members before it hands their
    partitions on. ZooKeeper-coordinated clients write their own ephemeral ``ids/`` and
    ``owners/`` nodes (:class:`ZkConsumerRegistration`); the broker reads those and never writes
    them.

    ``offsets/{topic}/{p}`` holds the bare decimal offset, as Kafka 0.8 and the tools reading
    it (Burrow's ``kafka_zk``, ConsumerOffsetChecker) expect. What else a commit carries lives
    in the sibling tree ``offset_commits/{topic}/{p}`` (:class:`OffsetCommitZNode`): a sibling,
    not a child, because old tools list ``offsets/{topic}`` expecting partition numbers only
    and delete offset nodes without recursion.
    """

    @staticmethod
    def group_path(group: str) -> str:
        return f"{CONSUMERS}/{group}"

    @staticmethod
    def coordinator_path(group: str) -> str:
        return f"{CONSUMERS}/{group}/coordinator"

    @staticmethod
    def ids_path(group: str) -> str:
        return f"{CONSUMERS}/{group}/ids"

    @staticmethod
    def member_path(group: str, member: str) -> str:
        return f"{CONSUMERS}/{group}/ids/{member}"

    @staticmethod
    def owners_path(group: str) -> str:
        return f"{CONSUMERS}/{group}/owners"

    @staticmethod
    def owners_topic_path(group: str, topic: str) -> str:
        return f"{CONSUMERS}/{group}/owners/{topic}"

    @staticmethod
    def owner_path(group: str, topic: str, partition: int) -> str:
        return f"{CONSUMERS}/{group}/owners/{topic}/{partition}"

    @staticmethod
    def broker_owner_path(group: str, topic: str, broker: int, partition: int) -> str:
        """An owner as Kafka 0.7 (the seeds) and pykafka's BalancedConsumer name it."""
        return f"{CONSUMERS}/{group}/owners/{topic}/{broker}-{partition}"

    @staticmethod
    def offsets_path(group: str) -> str:
        return f"{CONSUMERS}/{group}/offsets"

    @staticmethod
    def offsets_topic_path(group: str, topic: str) -> str:
        return f"{CONSUMERS}/{group}/offsets/{topic}"

    @staticmethod
    def offset_path(group: str, topic: str, partition: int) -> str:
        return f"{CONSUMERS}/{group}/offsets/{topic}/{partition}"

    @staticmethod
    def commits_path(group: str) -> str:
        return f"{CONSUMERS}/{group}/offset_commits"

    @staticmethod
    def commits_topic_path(group: str, topic: str) -> str:
        return f"{CONSUMERS}/{group}/offset_commits/{topic}"

    @staticmethod
    def commit_path(group: str, topic: str, partition: int) -> str:
        return f"{CONSUMERS}/{group}/offset_commits/{topic}/{partition}"

    @staticmethod
    def txn_offsets_path(group: str) -> str:
        """Offsets committed inside transactions not completed yet, by producer id."""
        return f"{CONSUMERS}/{group}/txn_offsets"

    @staticmethod
    def txn_producer_path(group: str, producer_id: int) -> str:
        return f"{CONSUMERS}/{group}/txn_offsets/{producer_id}"

    @staticmethod
    def txn_topic_path(group: str, producer_id: int, topic: str) -> str:
        return f"{CONSUMERS}/{group}/txn_offsets/{producer_id}/{topic}"

    @staticmethod
    def txn_offset_path(group: str, producer_id: int, topic: str, partition: int) -> str:
        return f"{CONSUMERS}/{group}/txn_offsets/{producer_id}/{topic}/{partition}"


Z = ConsumerGroupZNodes


@dataclass(frozen=True)
class GroupZNode:
    """``/consumers/{group}``: the generation, kept here so it only grows across coordinators.

    ZooKeeper-coordinated clients create it empty; empty reads as a group with no history.
    """

    protocol_type: str | None = None
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "protocol_type": self.protocol_type,
                "generation": self.generation,
                "protocol": self.protocol,
                "leader": self.leader,
            }
        )

    @classmethod
    def decode(cls, group: str, data: bytes) -> GroupZNode:
        if not data:
            return cls()
        path = Z.group_path(group)
        p = fields.json_object(data, path)
        return cls(
            protocol_type=fields.optional_string(p, "protocol_type", path),
            generation=fields.integer(p, "generation", path, high=fields.INT32_MAX, default=0),
            protocol=fields.optional_string(p, "protocol", path),
            leader=fields.optional_string(p, "leader", path),
        )


@dataclass(frozen=True)
class GroupCoordinatorZNode:
    """``/consumers/{group}/coordinator``: which broker coordinates the group.

    Claimed by a conditional write; every later write of that coordinator for the group is a
    transaction that first checks this node's version, so a deposed coordinator cannot write.
    The claim is void once the broker leaves ``/brokers/ids``.
    """

    broker_id: int
    epoch: int
    timestamp_ms: int = field(default_factory=now_ms)

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "broker": self.broker_id,
                "epoch": self.epoch,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @staticmethod
    def claim_path(key: str) -> str:
        return Z.coordinator_path(key)

    @classmethod
    def decode(cls, group: str, data: bytes) -> Self:
        path = cls.claim_path(group)
        p = fields.json_object(data, path)
        return cls(
            broker_id=fields.integer(p, "broker", path, low=-1, high=fields.INT32_MAX),
            epoch=fields.integer(p, "epoch", path, high=fields.INT32_MAX),
            timestamp_ms=fields.integer(p, "timestamp", path, default=0),
        )


@dataclass(frozen=True)
class GroupMemberZNode:
    """``/consumers/{group}/ids/{member}``: a pafka member's registration and its topics."""

    client_id: str
    client_host: str
    subscription: tuple[str, ...]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    group_instance_id: str | None = None
    timestamp_ms: int = field(default_factory=now_ms)

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "client_id": self.client_id,
                "client_host": self.client_host,
                "group_instance_id": self.group_instance_id,
                "subscription": list(self.subscription),
                "session_timeout_ms": self.session_timeout_ms,
                "rebalance_timeout_ms": self.rebalance_timeout_ms,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @classmethod
    def decode(cls, group: str, member: str, data: bytes) -> GroupMemberZNode:
        decoded = decode_registration(group, member, data)
        if not isinstance(decoded, GroupMemberZNode):
            raise CorruptZNodeError(Z.member_path(group, member), "not a pafka member")
        return decoded

    @classmethod
    def _from_payload(cls, p: dict[str, Any], path: str) -> GroupMemberZNode:
        return cls(
            client_id=fields.string(p, "client_id", path, default=""),
            client_host=fields.string(p, "client_host", path, default=""),
            subscription=fields.string_list(p, "subscription", path),
            session_timeout_ms=fields.integer(
                p, "session_timeout_ms", path, low=1, high=fields.INT32_MAX
            ),
            rebalance_timeout_ms=fields.integer(
                p, "rebalance_timeout_ms", path, low=1, high=fields.INT32_MAX
            ),
            group_instance_id=fields.optional_string(p, "group_instance_id", path),
            timestamp_ms=fields.integer(p, "timestamp", path, default=0),
        )


@dataclass(frozen=True)
class ZkConsumerRegistration:
    """``/consumers/{group}/ids/{consumer}`` as a ZooKeeper-coordinated client writes it.

    Kafka 0.8 (and pykafka's BalancedConsumer): ephemeral, JSON
    ``{"version":1,"subscription":{topic: streams},"pattern":"static","timestamp":"..."}``;
    for a ``white_list``/``black_list`` pattern the subscription's keys are regexes. Kafka 0.7
    (the seeds' jafka) wrote the topics as ``t1,t2``. Such a group rebalances among its
    members through ZooKeeper; the broker only reads this node.
    """

    consumer_id: str
    subscription: tuple[str, ...]
    pattern: str = "static"
    timestamp_ms: int = 0

    def encode(self) -> bytes:
        """As Kafka 0.8 writes it (used by tests acting as such a consumer)."""
        return _dump(
            {
                "version": 1,
                "subscription": dict.fromkeys(self.subscription, 1),
                "pattern": self.pattern,
                "timestamp": str(self.timestamp_ms),
            }
        )

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics named outright (a white/black list's regexes are not topics)."""
        return self.subscription if self.pattern == "static" else ()

    @classmethod
    def _from_payload(cls, consumer: str, p: dict[str, Any], path: str) -> ZkConsumerRegistration:
        subscription = p.get("subscription")
        if not isinstance(subscription, dict) or not subscription:
            raise CorruptZNodeError(path, "'subscription' is not a non-empty object")
        for topic, streams in subscription.items():
            if isinstance(streams, bool) or not isinstance(streams, int) or streams < 1:
                raise CorruptZNodeError(path, f"{topic!r} has {streams!r} streams")
        pattern = fields.string(p, "pattern", path)
        if pattern not in ("static", "white_list", "black_list"):
            raise CorruptZNodeError(path, f"unknown pattern {pattern!r}")
        return cls(
            consumer_id=consumer,
            subscription=tuple(sorted(subscription)),
            pattern=pattern,
            timestamp_ms=fields.integer(p, "timestamp", path, default=0),
        )


def decode_registration(
    group: str, member: str, data: bytes
) -> GroupMemberZNode | ZkConsumerRegistration:
    """Whichever kind of member wrote ``ids/{member}``: a pafka member has session timeouts,
    a ZooKeeper-coordinated consumer a pattern (or, from Kafka 0.7, a bare topic list)."""
    path = Z.member_path(group, member)
    raw = fields.text(data, path).strip()
    if not raw.startswith("{"):
        topics = tuple(t.strip() for t in raw.split(","))
        if not raw or not all(_TOPIC_NAME.fullmatch(t) for t in topics):
            raise CorruptZNodeError(path, "neither JSON nor a comma-separated topic list")
        return ZkConsumerRegistration(member, tuple(sorted(set(topics))))
    p = fields.json_object(data, path)
    if "pattern" in p or isinstance(p.get("subscription"), dict):
        return ZkConsumerRegistration._from_payload(member, p, path)
    return GroupMemberZNode._from_payload(p, path)


_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass(frozen=True)
class PartitionOwnerZNode:
    """``/consumers/{group}/owners/{topic}/{p}``: the one member that may consume a partition.

    pafka's coordinator writes JSON naming the member and generation; a ZooKeeper-coordinated
    client writes its consumer-thread id as plain text (``{consumer id}-{thread}``), read as
    ``zk_consumer`` and never rewritten by the broker.
    """

    member_id: str
    generation: int
    zk_consumer: bool = False

    def encode(self) -> bytes:
        if self.zk_consumer:
            return self.member_id.encode()
        return _dump({"version": 1, "member_id": self.member_id, "generation": self.generation})

    @classmethod
    def decode(cls, path: str, data: bytes) -> PartitionOwnerZNode:
        raw = fields.text(data, path).strip()
        if raw.startswith("{"):
            p = fields.json_object(data, path)
            return cls(
                member_id=fields.string(p, "member_id", path),
                generation=fields.integer(p, "generation", path, low=-1, default=-1),
            )
        if not raw or len(raw) > fields.MAX_TEXT_CHARS or not raw.isprintable():
            raise CorruptZNodeError(path, "neither JSON nor a consumer-thread id")
        return cls(member_id=raw, generation=-1, zk_consumer=True)


@dataclass(frozen=True)
class CommittedOffsetZNode:
    """A committed position: ``offsets/{topic}/{p}`` (the bare decimal offset) together with
    ``offset_commits/{topic}/{p}`` (what else the commit carried, pafka's own).

    The commit node repeats the offset, so one left behind when a ZooKeeper-era client or
    tool rewrote the offset node alone is recognised as stale and ignored. Offset nodes holding
    JSON (pafka before the bare format) are read too; the next commit rewrites them bare.
    """

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = field(default_factory=now_ms)

    def encode(self) -> bytes:
        return str(self.offset).encode()

    def encode_commit(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "offset": self.offset,
                "leader_epoch": self.leader_epoch,
                "metadata": self.metadata,
                "commit_timestamp": self.commit_timestamp_ms,
            }
        )

    @classmethod
    def decode(
        cls, path: str, data: bytes, commit_path: str = "", commit: bytes | None = None
    ) -> CommittedOffsetZNode:
        """The offset node's ``data`` and, when it exists, its commit node's ``commit``."""
        raw = fields.text(data, path).strip()
        if raw.startswith("{"):
            found = cls._from_payload(fields.json_object(data, path), path)
        elif fields.is_decimal(raw):
            found = cls(offset=int(raw), commit_timestamp_ms=0)
        else:
            raise CorruptZNodeError(path, f"{raw[:40]!r} is not a decimal offset")
        if found.offset < 0:
            raise CorruptZNodeError(path, f"offset {found.offset} is negative")
        if commit is None:
            return found
        details = cls._from_payload(fields.json_object(commit, commit_path), commit_path)
        return details if details.offset == found.offset else found

    @classmethod
    def _from_payload(cls, p: dict[str, Any], path: str) -> CommittedOffsetZNode:
        return cls(
            offset=fields.integer(p, "offset", path),
            leader_epoch=fields.integer(
                p, "leader_epoch", path, low=-1, high=fields.INT32_MAX, default=-1
            ),
            metadata=fields.string(p, "metadata", path, default=""),
            commit_timestamp_ms=fields.integer(p, "commit_timestamp", path, default=0),
        )


@dataclass(frozen=True)
class PendingTxnOffsetZNode:
    """``/consumers/{group}/txn_offsets/{producer id}/{topic}/{p}``: an offset committed by
    TxnOffsetCommit, invisible to OffsetFetch until the transaction's commit marker makes it
    the group's committed offset (an abort marker deletes it). The node's mzxid is its place in
    the group's history: a plain commit written after it wins over it (Kafka's log order)."""

    offset: int
    producer_epoch: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = field(default_factory=now_ms)

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "offset": self.offset,
                "producer_epoch": self.producer_epoch,
                "leader_epoch": self.leader_epoch,
                "metadata": self.metadata,
                "commit_timestamp": self.commit_timestamp_ms,
            }
        )

    @classmethod
    def decode(cls, path: str, data: bytes) -> PendingTxnOffsetZNode:
        p = fields.json_object(data, path)
        return cls(
            offset=fields.integer(p, "offset", path),
            producer_epoch=fields.integer(p, "producer_epoch", path, low=-1, high=2**15 - 1),
            leader_epoch=fields.integer(
                p, "leader_epoch", path, low=-1, high=fields.INT32_MAX, default=-1
            ),
            metadata=fields.string(p, "metadata", path, default=""),
            commit_timestamp_ms=fields.integer(p, "commit_timestamp", path, default=0),
        )

    def committed(self) -> CommittedOffsetZNode:
        return CommittedOffsetZNode(
            self.offset, self.leader_epoch, self.metadata, self.commit_timestamp_ms
        )


class TxnOffsetProducerZNodes:
    """``/txn_offset_producers/{producer id}/{group}``: the groups holding pending
    transactional offsets of a producer, written in the same fenced transaction as those
    offsets, so a transaction's markers find its groups without reading every group.
    The entry names the group's ``__consumer_offsets`` partition."""

    @staticmethod
    def producer_path(producer_id: int) -> str:
        return f"{TXN_OFFSET_PRODUCERS}/{producer_id}"

    @staticmethod
    def group_path(producer_id: int, group: str) -> str:
        return f"{TXN_OFFSET_PRODUCERS}/{producer_id}/{group}"

    @staticmethod
    def encode(offsets_partition: int) -> bytes:
        return _dump({"version": 1, "offsets_partition": offsets_partition})

    @staticmethod
    def decode(path: str, data: bytes) -> int:
        p = fields.json_object(data, path)
        return fields.integer(p, "offsets_partition", path, high=fields.INT32_MAX)


class GatewayZNodes:
    """``/gateway/...``: what the stateless gateways share, so any replica serves any request.

    ``consumers/{group}/{instance}`` holds a REST Proxy v2 consumer instance (format,
    subscription or assignment, positions, group membership, last use); ``idempotency/{key}``
    holds the outcome of a produce request carrying an idempotency key. Payload codecs live
    with the gateway code that owns them; the paths live here.
    """

    @staticmethod
    def consumers_path() -> str:
        return f"{GATEWAY}/consumers"

    @staticmethod
    def consumer_group_path(group: str) -> str:
        return f"{GATEWAY}/consumers/{group}"

    @staticmethod
    def consumer_instance_path(group: str, instance: str) -> str:
        return f"{GATEWAY}/consumers/{group}/{instance}"

    @staticmethod
    def idempotency_root() -> str:
        return f"{GATEWAY}/idempotency"

    @staticmethod
    def idempotency_path(key: str) -> str:
        return f"{GATEWAY}/idempotency/{key}"


@dataclass(frozen=True)
class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block of producer ids handed to a broker.

    Brokers claim the next block with a conditional update on this node's version, so producer
    ids are unique across the cluster without any broker talking to another.
    """

    broker_id: int
    block_start: int
    block_end: int

    @staticmethod
    def path() -> str:
        return LATEST_PRODUCER_ID_BLOCK

    def encode(self) -> bytes:
        return _dump(
            {
                "version": 1,
                "broker": self.broker_id,
                "block_start": str(self.block_start),
                "block_end": str(self.block_end),
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlockZNode:
        p = _load(data, LATEST_PRODUCER_ID_BLOCK)
        return cls(
            broker_id=int(p["broker"]),
            block_start=int(p["block_start"]),
            block_end=int(p["block_end"]),
        )


class TransactionZNodes:
    """``/transactions/{transactional id}``: a transaction coordinator's state of one id (what
    Kafka keeps in ``__transaction_state``), and ``coordinator`` beneath it, the claim of the
    broker coordinating it. Transactional ids are checked like group ids
    (:func:`pafka.cluster.names.validate_group_id`), so an id is always one path segment.
    """

    @staticmethod
    def root() -> str:
        return TRANSACTIONS

    @staticmethod
    def state_path(transactional_id: str) -> str:
        return f"{TRANSACTIONS}/{transactional_id}"

    @staticmethod
    def coordinator_path(transactional_id: str) -> str:
        return f"{TRANSACTIONS}/{transactional_id}/coordinator"


@dataclass(frozen=True)
class TransactionCoordinatorZNode(GroupCoordinatorZNode):
    """``/transactions/{id}/coordinator``: the broker coordinating the id and its claim epoch
    (sent as the markers' coordinator epoch), the payload of a group's claim. Claimed by a
    conditional write; every write of the id's state checks this node's version, so a deposed
    coordinator cannot write."""

    @staticmethod
    def claim_path(key: str) -> str:
        return TransactionZNodes.coordinator_path(key)


_TXN_STATES = {s.value: s for s in TxnState}


class TransactionStateZNode:
    """``/transactions/{id}``'s payload: Kafka's transaction log value (producer id and epoch,
    the previous ones, timeout, state, partitions, start and last update) plus the groups whose
    offsets the transaction commits. Empty data: the id has no state yet."""

    @staticmethod
    def encode(meta: TxnMetadata) -> bytes:
        return _dump(
            {
                "version": 1,
                "producer_id": str(meta.producer_id),
                "producer_epoch": meta.producer_epoch,
                "last_producer_id": str(meta.last_producer_id),
                "last_producer_epoch": meta.last_producer_epoch,
                "timeout_ms": meta.timeout_ms,
                "state": meta.state.value,
                "partitions": [{"topic": t, "partition": p} for t, p in sorted(meta.partitions)],
                "groups": sorted(meta.groups),
                "start_timestamp": str(meta.start_ms),
                "last_update_timestamp": str(meta.last_update_ms),
            }
        )

    @staticmethod
    def decode(transactional_id: str, data: bytes) -> TxnMetadata | None:
        if not data:
            return None
        path = TransactionZNodes.state_path(transactional_id)
        p = fields.json_object(data, path)
        state = _TXN_STATES.get(fields.string(p, "state", path))
        if state is None:
            raise CorruptZNodeError(path, f"unknown transaction state {p.get('state')!r}")
        partitions = p.get("partitions", [])
        groups = p.get("groups", [])
        if not isinstance(partitions, list) or not isinstance(groups, list):
            raise CorruptZNodeError(path, "partitions and groups must be lists")
        tps = set()
        for entry in partitions:
            if not isinstance(entry, dict):
                raise CorruptZNodeError(path, f"partition entry {entry!r} is not an object")
            tps.add(
                (
                    fields.string(entry, "topic", path),
                    fields.integer(entry, "partition", path, high=fields.INT32_MAX),
                )
            )
        if not all(isinstance(g, str) for g in groups):
            raise CorruptZNodeError(path, "group ids must be strings")
        return TxnMetadata(
            transactional_id=transactional_id,
            producer_id=fields.integer(p, "producer_id", path, low=-1),
            producer_epoch=fields.integer(p, "producer_epoch", path, low=-1, high=32767),
            last_producer_id=fields.integer(p, "last_producer_id", path, low=-1),
            last_producer_epoch=fields.integer(p, "last_producer_epoch", path, low=-1, high=32767),
            timeout_ms=fields.integer(p, "timeout_ms", path, high=fields.INT32_MAX),
            state=state,
            partitions=frozenset(tps),
            groups=frozenset(groups),
            start_ms=fields.integer(p, "start_timestamp", path, low=-1),
            last_update_ms=fields.integer(p, "last_update_timestamp", path, low=-1),
        )


# -- security: credentials and quotas (entity configs), ACLs, and their change notifications ----


def sanitize_entity(name: str) -> str:
    """A user or client id as a znode name, encoded as Kafka's ``Sanitizer`` does (Java's
    URLEncoder, with ``*`` and spaces percent-encoded), so ``/`` and other bytes are safe."""
    if name == DEFAULT_ENTITY:
        return name
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize_entity(sanitized: str) -> str:
    return urllib.parse.unquote(sanitized)


def entity_config_path(user: str | None, client_id: str | None) -> str:
    """Kafka's entity path (``users/alice``, ``clients/c1``, ``users/alice/clients/c1``), as
    config change notifications name it; names are sanitized."""
    if user is None and client_id is None:
        raise ValueError("an entity needs a user, a client id, or both")
    parts = []
    if user is not None:
        parts.append(f"users/{sanitize_entity(user)}")
    if client_id is not None:
        parts.append(f"clients/{sanitize_entity(client_id)}")
    return "/".join(parts)


@dataclass(frozen=True)
class EntityConfigZNode:
    """``/config/users/{user}``, ``/config/clients/{client}``, ``/config/users/{user}/clients/
    {client}``: SCRAM credentials (``SCRAM-SHA-512`` -> ``salt=...,stored_key=...,server_key=...,
    iterations=...``) and quotas (``producer_byte_rate``, ...), strings as Kafka keeps them."""

    config: dict[str, str]

    @staticmethod
    def path(entity_path: str) -> str:
        return f"/config/{entity_path}"

    def encode(self) -> bytes:
        return _dump({"version": 1, "config": dict(sorted(self.config.items()))})

    @classmethod
    def decode(cls, entity_path: str, data: bytes) -> EntityConfigZNode:
        path = cls.path(entity_path)
        config = fields.json_object(data, path).get("config", {})
        if not isinstance(config, dict):
            raise CorruptZNodeError(path, "has no config object")
        return cls(config={str(k): str(v) for k, v in config.items()})


@dataclass(frozen=True)
class ConfigChangeZNode:
    """``/config/changes/config_change_{seq}``: a persistent sequential node telling every
    broker that an entity's config changed (version 2 names the entity path)."""

    entity_path: str

    @staticmethod
    def path_prefix() -> str:
        return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}"

    @staticmethod
    def path(child: str) -> str:
        return f"{CONFIG_CHANGES}/{child}"

    def encode(self) -> bytes:
        return _dump({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def decode(cls, child: str, data: bytes) -> ConfigChangeZNode:
        path = cls.path(child)
        payload = fields.json_object(data, path)
        if payload.get("version") == 1:  # Kafka before 2.0: entity_type and entity_name
            entity_type = fields.string(payload, "entity_type", path)
            return cls(f"{entity_type}/{fields.string(payload, 'entity_name', path)}")
        return cls(fields.string(payload, "entity_path", path))


LITERAL = "LITERAL"
PREFIXED = "PREFIXED"


@dataclass(frozen=True)
class AclEntryPayload:
    """One ACL of a resource, spelled as Kafka stores it (``User:alice``, ``Allow``, ``Read``,
    ``*``); :mod:`pafka.security.acls` gives the words their meaning."""

    principal: str
    permission_type: str
    operation: str
    host: str


@dataclass(frozen=True)
class AclZNode:
    """``/kafka-acl/{type}/{name}`` (literal resources, and ``*``) or
    ``/kafka-acl-extended/prefixed/{type}/{name}`` (prefixed): the ACLs of one resource."""

    acls: tuple[AclEntryPayload, ...]

    @staticmethod
    def type_root(pattern_type: str, resource_type: str) -> str:
        if pattern_type == LITERAL:
            return f"{KAFKA_ACL}/{resource_type}"
        if pattern_type == PREFIXED:
            return f"{KAFKA_ACL_EXTENDED}/prefixed/{resource_type}"
        raise ValueError(f"no ACL store for pattern type {pattern_type}")

    @classmethod
    def path(cls, pattern_type: str, resource_type: str, name: str) -> str:
        return f"{cls.type_root(pattern_type, resource_type)}/{name}"

    def encode(self) -> bytes:
        acls = [
            {
                "principal": a.principal,
                "permissionType": a.permission_type,
                "operation": a.operation,
                "host": a.host,
            }
            for a in self.acls
        ]
        return _dump({"version": 1, "acls": acls})

    @classmethod
    def decode(cls, path: str, data: bytes) -> AclZNode:
        acls = fields.json_object(data, path).get("acls", [])
        if not isinstance(acls, list) or not all(isinstance(a, dict) for a in acls):
            raise CorruptZNodeError(path, "has no list of ACL objects")
        return cls(
            acls=tuple(
                AclEntryPayload(
                    principal=fields.string(a, "principal", path),
                    permission_type=fields.string(a, "permissionType", path),
                    operation=fields.string(a, "operation", path),
                    host=fields.string(a, "host", path),
                )
                for a in acls
            )
        )


@dataclass(frozen=True)
class AclChangeZNode:
    """A persistent sequential node under ``/kafka-acl-changes`` (literal: ``Topic:name``) or
    ``/kafka-acl-extended-changes`` (prefixed: JSON) naming a resource whose ACLs changed."""

    pattern_type: str
    resource_type: str
    name: str

    @staticmethod
    def root(pattern_type: str) -> str:
        return KAFKA_ACL_CHANGES if pattern_type == LITERAL else KAFKA_ACL_EXTENDED_CHANGES

    @classmethod
    def path_prefix(cls, pattern_type: str) -> str:
        return f"{cls.root(pattern_type)}/{ACL_CHANGE_PREFIX}"

    def encode(self) -> bytes:
        if self.pattern_type == LITERAL:
            return f"{self.resource_type}:{self.name}".encode()
        return _dump(
            {
                "version": 1,
                "resourceType": self.resource_type,
                "name": self.name,
                "patternType": self.pattern_type,
            }
        )

    @classmethod
    def decode(cls, root: str, child: str, data: bytes) -> AclChangeZNode:
        path = f"{root}/{child}"
        if root == KAFKA_ACL_CHANGES:
            resource_type, sep, name = fields.text(data, path).partition(":")
            if not sep:
                raise CorruptZNodeError(path, "is not of the form ResourceType:name")
            return cls(LITERAL, resource_type, name)
        payload = fields.json_object(data, path)
        return cls(
            pattern_type=fields.string(payload, "patternType", path),
            resource_type=fields.string(payload, "resourceType", path),
            name=fields.string(payload, "name", path),
        )


def user_entity_path(sanitized_child: str) -> str:
    """The entity path of a child of ``/config/users`` as listed (already sanitized)."""
    return f"{CONFIG_USERS.removeprefix('/config/')}/{sanitized_child}"


# ZooKeeper ACLs (Kafka's ZkData.SensitiveRootPaths): subtrees that may hold credentials, never
# world-readable when ACLs are set; and the ZooKeeper-era consumers' root, left world-writable
# because their clients create their groups under it.
DELEGATION_TOKENS = "/delegation_token"
SENSITIVE_ROOTS = (CONFIG_USERS, CONFIG_BROKERS, DELEGATION_TOKENS)
OPEN_PATHS = (CONSUMERS,)
# Every top-level node pafka (and Kafka's tools beside it) may create: what the ZooKeeper
# security migration walks, leaving anything else in a shared ensemble alone.
PAFKA_ROOTS = (
    "/brokers",
    "/cluster",
    "/config",
    ADMIN,
    CONTROLLER,
    CONTROLLER_EPOCH,
    ISR_CHANGE_NOTIFICATION,
    CONSUMERS,
    GATEWAY,
    LATEST_PRODUCER_ID_BLOCK,
    TXN_OFFSET_PRODUCERS,
    TRANSACTIONS,
    KAFKA_ACL,
    KAFKA_ACL_CHANGES,
    KAFKA_ACL_EXTENDED,
    KAFKA_ACL_EXTENDED_CHANGES,
    DELEGATION_TOKENS,
)
