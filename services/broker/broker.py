"""The broker process: wires storage, ZooKeeper, the Kafka port and the HTTP port together.

Start-up order matters: logs are recovered before the broker registers in ``/brokers/ids``,
because registering is what makes the controller send it leadership; the Kafka port opens
before registration so that clients told about this broker can reach it at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import httpx

from pafka.client.cluster import ClusterClient
from pafka.cluster.topic_config import (
    SOURCE_STATIC_BROKER,
    TYPE_BOOLEAN,
    TYPE_DOUBLE,
    TYPE_INT,
    TYPE_LONG,
    TYPE_STRING,
    ConfigEntry,
    TopicConfig,
    parse_topic_config,
)
from pafka.control import messages as control
from pafka.control.secret import bearer_headers
from pafka.errors import CoordinationError, PafkaError
from pafka.httpserver import EmbeddedServer, start_http
from pafka.security.acl_authorizer import Authorizer
from pafka.security.quotas import RateConfig
from pafka.storage.log_cleaner import LogCleaner
from pafka.storage.log_manager import LogManager
from pafka.zk.client import SessionEvent, ZkClient
from pafka.zk.znodes import (
    BrokerInfo,
    ClusterIdZNode,
    ControllerZNode,
    EntityConfigZNode,
    TopicConfigZNode,
    TopicZNode,
    entity_config_path,
)
from services.broker.auto_topics import TopicAutoCreator
from services.broker.descriptors import DescriptorMonitor, raise_soft_limit
from services.broker.dispatcher import Dispatcher
from services.broker.dynamic_config import DynamicBrokerConfig
from services.broker.entity_configs import EntityConfigView
from services.broker.fetch_session_cache import FetchSessionCache
from services.broker.follower import FetcherSettings, FollowerManager
from services.broker.groups.coordinator import GroupCoordinator
from services.broker.groups.offsets import GroupOffsets
from services.broker.groups.rebalance import GroupProtocol
from services.broker.http_api import create_app
from services.broker.isr import IsrManager
from services.broker.leader_fencing import reason as fencing_reason
from services.broker.listeners import OpenListeners, open_listeners
from services.broker.metadata_cache import MetadataCache
from services.broker.metrics import BrokerMetrics
from services.broker.producer_ids import ProducerIdAllocator
from services.broker.quota_manager import QuotaCollector, QuotaManager
from services.broker.replica_manager import ReplicaManager
from services.broker.sasl_authenticator import SaslAuthenticator
from services.broker.server import KafkaServer
from services.broker.settings import BrokerSettings
from services.broker.transactions import metrics as transaction_metrics
from services.broker.transactions.coordinator import TransactionCoordinator
from services.broker.transactions.markers import MarkerSender

log = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_ATTEMPTS = 3
CONTROLLED_SHUTDOWN_TIMEOUT_S = 10.0
CONTROLLED_SHUTDOWN_RETRY_S = 1.0
# Leaders re-check their footing (ZooKeeper, in-sync followers) this often at most.
FOOTING_CHECK_MAX_S = 0.5
# Partitions named in a fencing log line; the count says how many there are.
LOGGED_PARTITIONS = 5


class Broker:
    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self.metrics = BrokerMetrics()
        self.metadata = MetadataCache()
        self.zk = ZkClient(
            settings.zookeeper,
            session_timeout_ms=settings.zk_session_timeout_ms,
            name=f"broker-{settings.broker_id}",
            security=settings.zk_security,
        )
        self.cluster_id: str | None = None
        self.auto_topics = TopicAutoCreator(
            self.zk, settings.default_partitions, settings.default_replication_factor
        )
        raise_soft_limit()  # before the logs open: each hosted partition holds a descriptor
        self.descriptors = DescriptorMonitor()
        self.logs = LogManager(
            settings.data_dir, settings.log, writeback_bytes=settings.log_writeback_bytes
        )
        self.cleaner = LogCleaner(lambda: self.logs.logs, settings.cleaner)
        self.followers = FollowerManager(
            FetcherSettings(
                broker_id=settings.broker_id,
                max_wait_ms=settings.replica_fetch_wait_max_ms,
                partition_max_bytes=settings.replica_fetch_max_bytes,
                response_max_bytes=settings.replica_fetch_response_max_bytes,
                backoff_ms=settings.replica_fetch_backoff_ms,
                network=settings.network,
                security=settings.listeners.inter_broker,
            )
        )
        self.isr = IsrManager(
            self.zk, settings.replica_lag_time_max_ms, self.metrics.count_isr_change
        )
        self.replicas = ReplicaManager(
            settings.broker_id,
            self.logs,
            self.metadata,
            self.topic_config,
            self.followers,
            on_isr_change=self.metrics.count_isr_change,
        )
        self.producer_ids = ProducerIdAllocator(
            self.zk, settings.broker_id, settings.producer_id_block_size
        )
        self.groups = GroupCoordinator(settings.broker_id, self.zk, self.metadata, settings.groups)
        self.group_protocol = GroupProtocol(self.groups)
        self.group_offsets = GroupOffsets(self.groups)
        self.transactions = TransactionCoordinator(
            settings.broker_id,
            self.zk,
            settings.transactions,
            self.producer_ids.next_id,
            MarkerSender(
                ClusterClient(
                    zk=self.zk,
                    client_id=f"broker-{settings.broker_id}-txn-markers",
                    network=settings.network,
                    security=settings.listeners.inter_broker,
                ),
                self._group_coordinator_id,
                self._topic_exists,
                settings.transactions.marker_retry_backoff_ms,
            ),
        )
        transaction_metrics.register(self.metrics.registry, self.transactions)
        self.fetch_sessions = FetchSessionCache(
            settings.max_incremental_fetch_session_cache_slots,
            on_evict=self.metrics.fetch_session_evictions.inc,
        )
        self.metrics.bind_fetch_sessions(self.fetch_sessions)
        self.entity_configs = EntityConfigView(self.zk)
        self.quotas = QuotaManager(
            RateConfig(settings.quota_window_num, settings.quota_window_size_seconds * 1000)
        )
        self.metrics.registry.register(QuotaCollector(self.quotas))
        listeners = settings.listeners
        self.sasl = SaslAuthenticator(
            listeners.sasl_mechanisms,
            reauth_ms=listeners.reauth_ms,
            lookup=self._user_credentials,
            on_outcome=self.metrics.count_authentication,
        )
        self.listeners: OpenListeners | None = None
        self.authorizer = Authorizer(self.zk, settings.authorizer == "acl", settings.acl)
        self.dispatcher = Dispatcher(self)
        self.kafka = KafkaServer(
            self.dispatcher.handle_frame,
            max_frame_bytes=settings.max_request_bytes,
            max_connections=settings.max_connections,
            on_connection_count=self.metrics.connections.set,
            on_protocol_error=self.metrics.protocol_errors.inc,
            network=settings.network,
            authentication_timeout_ms=listeners.authentication_timeout_ms,
            failed_authentication_delay_ms=listeners.failed_authentication_delay_ms,
        )
        self._topic_configs: dict[str, TopicConfig] = {}
        self.dynamic = DynamicBrokerConfig(settings.broker_id, self._dynamic_config_changed)
        self._registered = False
        self._zk_connected = False
        # Whether the last footing check left any partition fenced: while ZooKeeper is
        # connected and none is, there is nothing to check (at 10,000 partitions, a scan).
        self._any_fenced = False
        self._http: EmbeddedServer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.port = settings.port
        self.metrics.bind_partitions(lambda: self.replicas.partitions.values(), settings.data_dir)
        self._cleaner_task: asyncio.Task[None] | None = None
        self.metrics.cleaner.bind(
            self.cleaner, lambda: self.logs.logs, settings.data_dir, self._cleaner_died
        )

    async def _user_credentials(self, user: str) -> dict[str, str] | None:
        """A SASL user's entity config (its SCRAM credentials), read at each login."""
        entity = entity_config_path(user, None)
        got = await self.zk.get(EntityConfigZNode.path(entity))
        return None if got is None else EntityConfigZNode.decode(entity, got[0]).config

    async def _group_coordinator_id(self, group: str) -> int:
        """Where a transaction's markers for a group's offsets go (FindCoordinator's answer)."""
        return (await self.groups.find(group)).id

    async def _topic_exists(self, topic: str) -> bool:
        return await self.zk.get(TopicZNode.path(topic)) is not None

    def _cleaner_died(self) -> bool:
        """Whether the cleaner's loop ended on an error it does not retry (Kafka's dead
        cleaner thread); cancelled at shutdown is not dead."""
        task = self._cleaner_task
        return task is not None and task.done() and not task.cancelled()

    # -- life cycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self.zk.add_session_listener(self._on_session)
        await self.zk.start(timeout_s=30)
        self._zk_connected = True
        self.metrics.zk_session_state.set(1)
        got = await self.zk.get(ClusterIdZNode.path())
        self.cluster_id = ClusterIdZNode.decode(got[0]).id if got else None
        self.dynamic.watch(self.zk)
        await self._start_entity_configs()
        await self.authorizer.start()  # before serving: no request is checked against no ACLs
        await self._start_http()
        self.listeners = await open_listeners(
            self.kafka, self.settings.listeners, self.settings.advertised_host
        )
        first = self.listeners.advertised[0]
        self.port = self.listeners.bound[0].port
        info = BrokerInfo(
            id=self.settings.broker_id,
            host=first.host,
            port=first.port,
            control_url=self.settings.control_url,
            rack=self.settings.rack,
            endpoints=self.listeners.advertised,
        )
        await self.zk.register_ephemeral(BrokerInfo.path(info.id), info.encode())
        self._registered = True
        await self.groups.start()
        await self.transactions.start()
        self._tasks.append(asyncio.create_task(self._periodic_checkpoints()))
        self._tasks.append(asyncio.create_task(self._periodic_retention()))
        if self.settings.cleaner.enabled:
            self._cleaner_task = asyncio.create_task(self.cleaner.run_forever())
            self._tasks.append(self._cleaner_task)
        self._tasks.append(
            asyncio.create_task(
                self.isr.shrink_loop(lambda: list(self.replicas.partitions.values()))
            )
        )
        self._tasks.append(asyncio.create_task(self._footing_loop()))
        log.info(
            "broker %d serving Kafka on %s", info.id, ", ".join(e.url for e in self.listeners.bound)
        )

    async def _start_entity_configs(self) -> None:
        async def changed(_entity_path: str) -> None:
            self.quotas.update(self.entity_configs.entities())

        self.entity_configs.subscribe(changed)
        await self.entity_configs.start()
        self.quotas.update(self.entity_configs.entities())

    async def _start_http(self) -> None:
        app = create_app(self, self.metrics.registry, self.settings.control_secret)
        self._http, task = await start_http(app, self.settings.host, self.settings.http_port)
        self._tasks.append(task)

    async def stop(self) -> None:
        # Stop replicating first: a follower still fetching would be re-admitted to the ISRs
        # that the controlled shutdown takes it out of.
        await self.followers.close()
        if self._registered:
            await self._controlled_shutdown()
        if self.listeners is not None:
            self.listeners.stop()
        await self.kafka.close()
        self.fetch_sessions.close()
        await self.groups.stop()
        await self.transactions.stop()
        await self.isr.close()
        for task in self._tasks:
            task.cancel()
        if self._http is not None:
            self._http.should_exit = True
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            self.replicas.close()
        await self.zk.close()

    async def _controlled_shutdown(self) -> None:
        """Ask the active controller to move leadership away before this broker stops, so
        producers see a clean leader change instead of a timeout (Kafka's controlled shutdown).
        Bounded: after a few attempts the broker stops anyway."""
        broker_id = self.settings.broker_id
        async with httpx.AsyncClient(
            timeout=CONTROLLED_SHUTDOWN_TIMEOUT_S,
            headers=bearer_headers(self.settings.control_secret),
        ) as client:
            for attempt in range(1, CONTROLLED_SHUTDOWN_ATTEMPTS + 1):
                try:
                    got = await self.zk.get(ControllerZNode.path())
                    if got is None:
                        raise CoordinationError("no active controller")
                    url = ControllerZNode.decode(got[0]).url
                    response = await client.post(
                        url + "/controlled-shutdown", json={"broker_id": broker_id}
                    )
                    response.raise_for_status()
                    remaining = response.json()["remaining"]
                except (httpx.HTTPError, PafkaError, KeyError, ValueError) as exc:
                    log.warning("controlled shutdown attempt %d failed: %s", attempt, exc)
                else:
                    if not remaining:
                        log.info("controlled shutdown complete: leadership moved away")
                        return
                    log.info("controlled shutdown: still leading %d partition(s)", len(remaining))
                await asyncio.sleep(CONTROLLED_SHUTDOWN_RETRY_S)
        log.warning("stopping without a complete controlled shutdown")

    async def _on_session(self, event: SessionEvent) -> None:
        self._zk_connected = event is not SessionEvent.SUSPENDED and event is not SessionEvent.LOST
        if event is SessionEvent.LOST:
            self.groups.on_session_lost()
            self.transactions.on_session_lost()
        self.groups.set_zookeeper_reachable(self._zk_connected)
        self.transactions.set_zookeeper_reachable(self._zk_connected)
        self.metrics.zk_session_state.set(1 if self._zk_connected else 0)
        self._check_footing()

    async def _footing_loop(self) -> None:
        lag_max_ms = self.settings.replica_lag_time_max_ms
        while True:
            await asyncio.sleep(min(lag_max_ms / 4000, FOOTING_CHECK_MAX_S))
            self._check_footing()

    def _check_footing(self) -> None:
        """Fence the leaders that lost both ZooKeeper and their in-sync followers, unfence
        the ones that found either again (``leader_fencing``); one log line per change."""
        if self._zk_connected and not self._any_fenced:
            return
        lag_max_ms = self.settings.replica_lag_time_max_ms
        why = fencing_reason(lag_max_ms)
        now_ms = int(time.time() * 1000)
        fenced: list[str] = []
        unfenced: list[str] = []
        still_fenced = 0
        for (topic, index), partition in list(self.replicas.partitions.items()):
            if self._zk_connected and partition.fenced_why is None:
                continue  # connected: nothing to fence, and this one is not fenced
            if partition.update_footing(self._zk_connected, now_ms, lag_max_ms, why):
                name = f"{topic}-{index}"
                (fenced if partition.fenced_why is not None else unfenced).append(name)
            still_fenced += partition.fenced_why is not None
        self._any_fenced = still_fenced > 0
        if fenced:
            log.warning(
                "%d partition(s) refuse acks=all writes (NOT_LEADER_OR_FOLLOWER): %s: %s",
                len(fenced),
                why,
                _some(fenced),
            )
        if unfenced:
            log.info(
                "%d partition(s) take acks=all writes again (%s): %s",
                len(unfenced),
                "ZooKeeper is back" if self._zk_connected else "an in-sync follower is back",
                _some(unfenced),
            )

    async def _periodic_checkpoints(self) -> None:
        while True:
            await asyncio.sleep(self.settings.checkpoint_interval_ms / 1000)
            await asyncio.to_thread(self.replicas.checkpoint)
            await asyncio.to_thread(self.descriptors.check)

    async def _periodic_retention(self) -> None:
        while True:
            await asyncio.sleep(self.settings.retention_check_interval_ms / 1000)
            # On the loop, not a thread: it changes segment lists that requests read.
            self.logs.retention_all(int(time.time() * 1000))

    # -- topic configs -----------------------------------------------------------------------

    async def topic_overrides(self, topic: str) -> dict[str, str]:
        got = await self.zk.get(TopicConfigZNode.path(topic))
        return TopicConfigZNode.decode(topic, got[0]).config if got else {}

    def _defaults(self) -> TopicConfig:
        s = self.settings
        return parse_topic_config(
            {
                "min.insync.replicas": str(s.min_insync_replicas),
                "unclean.leader.election.enable": str(s.unclean_leader_election_enable).lower(),
                "segment.bytes": str(s.log.segment_bytes),
                "segment.ms": str(s.log.segment_ms),
                "retention.ms": str(s.log.retention_ms),
                "retention.bytes": str(s.log.retention_bytes),
                "max.message.bytes": str(s.log.max_message_bytes),
                "delete.retention.ms": str(s.log.delete_retention_ms),
                "min.compaction.lag.ms": str(s.log.min_compaction_lag_ms),
                "max.compaction.lag.ms": str(s.log.max_compaction_lag_ms),
                "min.cleanable.dirty.ratio": str(s.log.min_cleanable_dirty_ratio),
                **self.dynamic.topic_defaults(),
            }
        )

    async def _dynamic_config_changed(self) -> None:
        """Dynamic broker configs changed: every known topic's config is recomputed."""
        for topic in list(self._topic_configs):
            try:
                fresh = parse_topic_config(await self.topic_overrides(topic), self._defaults())
            except PafkaError as exc:
                log.error("config of topic %r not updated: %s", topic, exc)
                continue
            self._topic_configs[topic] = fresh
            self.replicas.update_config(topic, fresh)

    async def topic_config(self, topic: str) -> TopicConfig:
        cached = self._topic_configs.get(topic)
        if cached is not None:
            return cached
        config = parse_topic_config(await self.topic_overrides(topic), self._defaults())
        self._topic_configs[topic] = config

        async def changed(data: bytes | None) -> None:
            if data is None:
                self._topic_configs.pop(topic, None)
                return
            overrides = TopicConfigZNode.decode(topic, data).config
            fresh = parse_topic_config(overrides, self._defaults())
            self._topic_configs[topic] = fresh
            self.replicas.update_config(topic, fresh)

        self.zk.watch_data(TopicConfigZNode.path(topic), changed)
        return config

    def describe_broker_config(self) -> list[ConfigEntry]:
        """The broker's static settings under Kafka's broker config names (read-only)."""
        s = self.settings
        values: dict[str, tuple[object, int]] = {
            "broker.id": (s.broker_id, TYPE_INT),
            "broker.rack": (s.rack or "", TYPE_STRING),
            "log.dirs": (s.data_dir, TYPE_STRING),
            "zookeeper.connect": (s.zookeeper, TYPE_STRING),
            "num.partitions": (s.default_partitions, TYPE_INT),
            "default.replication.factor": (s.default_replication_factor, TYPE_INT),
            "min.insync.replicas": (s.min_insync_replicas, TYPE_INT),
            "message.max.bytes": (s.log.max_message_bytes, TYPE_INT),
            "log.segment.bytes": (s.log.segment_bytes, TYPE_INT),
            "log.retention.ms": (s.log.retention_ms, TYPE_LONG),
            "log.retention.bytes": (s.log.retention_bytes, TYPE_LONG),
            "log.cleaner.enable": (str(s.cleaner.enabled).lower(), TYPE_BOOLEAN),
            "log.cleaner.dedupe.buffer.size": (s.cleaner.dedupe_buffer_bytes, TYPE_LONG),
            "log.cleaner.io.buffer.size": (s.cleaner.io_buffer_bytes, TYPE_INT),
            "log.cleaner.io.max.bytes.per.second": (
                s.cleaner.io_max_bytes_per_second,
                TYPE_DOUBLE,
            ),
            "log.cleaner.backoff.ms": (s.cleaner.backoff_ms, TYPE_LONG),
            "log.cleaner.threads": (1, TYPE_INT),
            "fetch.max.bytes": (s.fetch_max_bytes, TYPE_INT),
            "socket.request.max.bytes": (s.max_request_bytes, TYPE_INT),
            "auto.create.topics.enable": (str(s.auto_create_topics).lower(), TYPE_BOOLEAN),
            "delete.topic.enable": (str(s.delete_topic_enable).lower(), TYPE_BOOLEAN),
        }
        static = [
            ConfigEntry(name, str(value), False, True, False, SOURCE_STATIC_BROKER, type_id)
            for name, (value, type_id) in values.items()
        ]
        return self.dynamic.describe(static, self._defaults())

    # -- control API (ControlHandler) --------------------------------------------------------

    async def on_leader_and_isr(self, request: control.LeaderAndIsr) -> dict[str, int]:
        errors = await self.replicas.leader_and_isr(request)
        self.metrics.controller_epoch.set(self.replicas.controller_epoch)
        return errors

    async def on_update_metadata(self, request: control.UpdateMetadata) -> dict[str, int]:
        self.replicas.check_controller_epoch(request.controller_epoch)
        self.metadata.apply(request)
        self.groups.on_metadata()
        for topic in request.deleted_topics:
            self._topic_configs.pop(topic, None)
        if request.full:
            self._delete_stray_logs()
        return {}

    def _delete_stray_logs(self) -> None:
        """Remove data of topics deleted while this broker was down (it missed StopReplica)."""
        for topic, partition in self.logs.existing():
            if (
                topic not in self.metadata.topics
                and (topic, partition) not in self.replicas.partitions
            ):
                log.info("deleting stray log %s-%d of a deleted topic", topic, partition)
                self.logs.delete(topic, partition)

    async def on_stop_replica(self, request: control.StopReplica) -> dict[str, int]:
        return self.replicas.stop_replica(request)

    def is_live(self) -> bool:
        return True

    def readiness(self) -> tuple[bool, str]:
        if not self._zk_connected:
            return False, "not connected to ZooKeeper"
        if not self._registered:
            return False, "not registered in ZooKeeper"
        if not self.metadata.initialized:
            return False, "waiting for metadata from the controller"
        return True, "ready"

    def status(self) -> dict[str, Any]:
        return {
            "broker_id": self.settings.broker_id,
            "port": self.port,
            "controller_epoch": self.replicas.controller_epoch,
            "partitions": {
                f"{t}-{p}": {
                    "leader": part.leader,
                    "leader_epoch": part.leader_epoch,
                    "isr": list(part.isr),
                    "log_end_offset": part.log.log_end_offset,
                    "high_watermark": part.log.high_watermark,
                    "fenced": part.fenced_why,
                }
                for (t, p), part in sorted(self.replicas.partitions.items())
            },
        }


def _some(names: list[str]) -> str:
    shown = ", ".join(sorted(names)[:LOGGED_PARTITIONS])
    return shown + (
        f" and {len(names) - LOGGED_PARTITIONS} more" if len(names) > LOGGED_PARTITIONS else ""
    )
