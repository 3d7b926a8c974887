"""The broker's settings: one typed, immutable object read from ``PAFKA_BROKER_*`` at the edge."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.net.deadlines import NetworkDeadlines, read_deadlines
from pafka.security.acl_authorizer import read_authorizer_config, read_authorizer_name
from pafka.security.authorization import AuthorizerConfig
from pafka.security.listeners import plaintext
from pafka.storage.config import LogConfig
from pafka.storage.log_cleaner import CleanerSettings
from pafka.storage.writeback import DEFAULT_STEP_BYTES
from pafka.zk.security import ZkSecurity, read_zk_security
from services.broker.groups.config import GroupConfig
from services.broker.listener_settings import ListenerSettings
from services.broker.transactions.config import TransactionConfig

PREFIX = "PAFKA_BROKER_"


@dataclass(frozen=True)
class BrokerSettings:
    broker_id: int
    zookeeper: str = "127.0.0.1:2181"
    host: str = "0.0.0.0"
    advertised_host: str = field(default_factory=socket.gethostname)
    port: int = 9092
    http_port: int = 8091
    data_dir: Path = Path("/var/lib/pafka")
    rack: str | None = None
    zk_session_timeout_ms: int = 6000
    # ZooKeeper digest authentication and the ACLs of created znodes (zookeeper.set.acl).
    zk_security: ZkSecurity = field(default_factory=ZkSecurity)
    # The control API's shared secret (pafka/control/secret.py); None: not checked.
    control_secret: str | None = field(default=None, repr=False)
    # Frames above this are refused before any allocation (Kafka's socket.request.max.bytes).
    max_request_bytes: int = 100 * 1024 * 1024
    max_connections: int = 1000
    # Upper bound on one fetch response, whatever the client asks (Kafka's fetch.max.bytes).
    fetch_max_bytes: int = 55 * 1024 * 1024
    # Requests read ahead of the one being answered, per connection.
    max_inflight_requests: int = 16
    # Kafka's num.partitions and default.replication.factor (for auto-created topics and
    # CreateTopics asking for the defaults).
    default_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics: bool = True  # auto.create.topics.enable
    delete_topic_enable: bool = True
    log: LogConfig = field(default_factory=LogConfig)
    cleaner: CleanerSettings = field(default_factory=CleanerSettings)
    groups: GroupConfig = field(default_factory=GroupConfig)
    transactions: TransactionConfig = field(default_factory=TransactionConfig)
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    unclean_leader_election_enable: bool = False
    retention_check_interval_ms: int = 300_000
    checkpoint_interval_ms: int = 5_000
    # Appended bytes per step of incremental writeback (pafka.storage.writeback); 0 turns it off.
    log_writeback_bytes: int = DEFAULT_STEP_BYTES
    # How long CreateTopics waits for the controller to elect leaders when timeout_ms allows.
    topic_ready_wait_ms: int = 30_000
    producer_id_block_size: int = 1000
    # Fetch sessions (KIP-227) the broker keeps (Kafka's max.incremental.fetch.session.cache.slots);
    # 0 serves every fetch without a session.
    max_incremental_fetch_session_cache_slots: int = 1000
    # Connect, request and reconnect deadlines of the broker's own connections (followers, the
    # controller link) and its keepalive and idle limit on clients' connections.
    network: NetworkDeadlines = field(default_factory=NetworkDeadlines)
    # Client quotas' rate windows (Kafka's quota.window.num and quota.window.size.seconds).
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # Kafka's authorizer.class.name ("" none, "acl" the ZooKeeper ACL authorizer), super.users
    # and allow.everyone.if.no.acl.found.
    authorizer: str = ""
    acl: AuthorizerConfig = field(default_factory=AuthorizerConfig)
    log_level: str = "INFO"
    # Listeners, TLS and SASL; None: one PLAINTEXT listener at host:port.
    listener_config: ListenerSettings | None = None

    @property
    def control_url(self) -> str:
        return f"http://{self.advertised_host}:{self.http_port}"

    @property
    def listeners(self) -> ListenerSettings:
        if self.listener_config is not None:
            return self.listener_config
        return ListenerSettings(listeners=(plaintext(self.host, self.port),))

    @classmethod
    def from_env(cls, values: Mapping[str, str] | None = None) -> BrokerSettings:
        env = Env.of(PREFIX, values)
        if env.raw("ID") is None:
            raise ConfigError(f"{PREFIX}ID is required (a non-negative integer broker id)")
        defaults = LogConfig()
        log = LogConfig(
            segment_bytes=env.integer("LOG_SEGMENT_BYTES", defaults.segment_bytes, minimum=1024),
            segment_ms=env.integer("LOG_SEGMENT_MS", defaults.segment_ms, minimum=1),
            retention_ms=env.integer("LOG_RETENTION_MS", defaults.retention_ms, minimum=-1),
            retention_bytes=env.integer(
                "LOG_RETENTION_BYTES", defaults.retention_bytes, minimum=-1
            ),
            max_message_bytes=env.integer(
                "MESSAGE_MAX_BYTES", defaults.max_message_bytes, minimum=64
            ),
            delete_retention_ms=env.integer(
                "LOG_CLEANER_DELETE_RETENTION_MS", defaults.delete_retention_ms
            ),
            min_compaction_lag_ms=env.integer(
                "LOG_CLEANER_MIN_COMPACTION_LAG_MS", defaults.min_compaction_lag_ms
            ),
            max_compaction_lag_ms=env.integer(
                "LOG_CLEANER_MAX_COMPACTION_LAG_MS", defaults.max_compaction_lag_ms, minimum=1
            ),
            min_cleanable_dirty_ratio=env.number(
                "LOG_CLEANER_MIN_CLEANABLE_RATIO", defaults.min_cleanable_dirty_ratio
            ),
        )
        if log.min_cleanable_dirty_ratio > 1:
            raise ConfigError(f"{PREFIX}LOG_CLEANER_MIN_CLEANABLE_RATIO must be at most 1")
        c = CleanerSettings()
        cleaner = CleanerSettings(
            enabled=env.flag("LOG_CLEANER_ENABLE", c.enabled),
            dedupe_buffer_bytes=env.integer(
                "LOG_CLEANER_DEDUPE_BUFFER_SIZE", c.dedupe_buffer_bytes, minimum=1024 * 1024
            ),
            io_max_bytes_per_second=env.number(
                "LOG_CLEANER_IO_MAX_BYTES_PER_SECOND", c.io_max_bytes_per_second, minimum=1
            ),
            io_buffer_bytes=env.integer(
                "LOG_CLEANER_IO_BUFFER_SIZE", c.io_buffer_bytes, minimum=4096
            ),
            backoff_ms=env.integer("LOG_CLEANER_BACKOFF_MS", c.backoff_ms, minimum=10),
            pause_at=env.text("LOG_CLEANER_TEST_PAUSE_AT", ""),
        )
        g = GroupConfig()
        groups = GroupConfig(
            initial_rebalance_delay_ms=env.integer(
                "GROUP_INITIAL_REBALANCE_DELAY_MS", g.initial_rebalance_delay_ms
            ),
            min_session_timeout_ms=env.integer(
                "GROUP_MIN_SESSION_TIMEOUT_MS", g.min_session_timeout_ms, minimum=1
            ),
            max_session_timeout_ms=env.integer(
                "GROUP_MAX_SESSION_TIMEOUT_MS", g.max_session_timeout_ms, minimum=1
            ),
            max_size=env.integer("GROUP_MAX_SIZE", g.max_size, minimum=1),
            offset_metadata_max_bytes=env.integer(
                "OFFSET_METADATA_MAX_BYTES", g.offset_metadata_max_bytes
            ),
            rebalance_on_broker_change=env.flag(
                "GROUP_REBALANCE_ON_BROKER_CHANGE", g.rebalance_on_broker_change
            ),
        )
        if groups.min_session_timeout_ms > groups.max_session_timeout_ms:
            raise ConfigError(
                f"{PREFIX}GROUP_MIN_SESSION_TIMEOUT_MS is above GROUP_MAX_SESSION_TIMEOUT_MS"
            )
        t = TransactionConfig()
        transactions = TransactionConfig(
            max_timeout_ms=env.integer("TRANSACTION_MAX_TIMEOUT_MS", t.max_timeout_ms, minimum=1),
            id_expiration_ms=env.integer(
                "TRANSACTIONAL_ID_EXPIRATION_MS", t.id_expiration_ms, minimum=1
            ),
            abort_timed_out_interval_ms=env.integer(
                "TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS",
                t.abort_timed_out_interval_ms,
                minimum=1,
            ),
            remove_expired_interval_ms=env.integer(
                "TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS",
                t.remove_expired_interval_ms,
                minimum=1,
            ),
        )
        network = read_deadlines(
            env,
            replica_socket_timeout_ms=env.integer(
                "REPLICA_SOCKET_TIMEOUT_MS", NetworkDeadlines.replica_socket_timeout_ms, minimum=1
            ),
        )
        fetch_wait_max_ms = env.integer("REPLICA_FETCH_WAIT_MAX_MS", 500, minimum=0)
        network.check_replica_fetch_wait(fetch_wait_max_ms)
        return cls(
            broker_id=env.integer("ID", 0),
            zookeeper=env.text("ZOOKEEPER", cls.zookeeper),
            host=env.text("HOST", cls.host),
            advertised_host=env.text("ADVERTISED_HOST", socket.gethostname()),
            port=env.integer("PORT", cls.port),
            http_port=env.integer("HTTP_PORT", cls.http_port),
            data_dir=Path(env.text("DATA_DIR", str(cls.data_dir))),
            rack=env.raw("RACK"),
            zk_session_timeout_ms=env.integer("ZK_SESSION_TIMEOUT_MS", 6000, minimum=1000),
            zk_security=read_zk_security(env),
            control_secret=env.secret("CONTROL_SECRET"),
            max_request_bytes=env.integer("MAX_REQUEST_BYTES", cls.max_request_bytes, minimum=1024),
            max_connections=env.integer("MAX_CONNECTIONS", cls.max_connections, minimum=1),
            fetch_max_bytes=env.integer("FETCH_MAX_BYTES", cls.fetch_max_bytes, minimum=1024),
            default_partitions=env.integer("NUM_PARTITIONS", 1, minimum=1),
            default_replication_factor=env.integer("DEFAULT_REPLICATION_FACTOR", 1, minimum=1),
            auto_create_topics=env.flag("AUTO_CREATE_TOPICS", cls.auto_create_topics),
            delete_topic_enable=env.flag("DELETE_TOPIC_ENABLE", True),
            log=log,
            cleaner=cleaner,
            groups=groups,
            transactions=transactions,
            min_insync_replicas=env.integer("MIN_INSYNC_REPLICAS", 1, minimum=1),
            replica_lag_time_max_ms=env.integer("REPLICA_LAG_TIME_MAX_MS", 30_000, minimum=100),
            replica_fetch_wait_max_ms=fetch_wait_max_ms,
            replica_fetch_max_bytes=env.integer(
                "REPLICA_FETCH_MAX_BYTES", cls.replica_fetch_max_bytes, minimum=1024
            ),
            replica_fetch_response_max_bytes=env.integer(
                "REPLICA_FETCH_RESPONSE_MAX_BYTES",
                cls.replica_fetch_response_max_bytes,
                minimum=1024,
            ),
            quota_window_num=env.integer("QUOTA_WINDOW_NUM", cls.quota_window_num, minimum=2),
            quota_window_size_seconds=env.integer(
                "QUOTA_WINDOW_SIZE_SECONDS", cls.quota_window_size_seconds, minimum=1
            ),
            replica_fetch_backoff_ms=env.integer(
                "REPLICA_FETCH_BACKOFF_MS", cls.replica_fetch_backoff_ms, minimum=0
            ),
            unclean_leader_election_enable=env.flag("UNCLEAN_LEADER_ELECTION_ENABLE", False),
            retention_check_interval_ms=env.integer(
                "RETENTION_CHECK_INTERVAL_MS", cls.retention_check_interval_ms, minimum=100
            ),
            log_writeback_bytes=env.integer(
                "LOG_WRITEBACK_BYTES", cls.log_writeback_bytes, minimum=0
            ),
            max_incremental_fetch_session_cache_slots=env.integer(
                "MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS",
                cls.max_incremental_fetch_session_cache_slots,
                minimum=0,
            ),
            network=network,
            authorizer=read_authorizer_name(env),
            acl=read_authorizer_config(env),
            log_level=env.text("LOG_LEVEL", "INFO").upper(),
            listener_config=ListenerSettings.from_env(
                env, host=env.text("HOST", cls.host), port=env.integer("PORT", cls.port)
            ),
        )
