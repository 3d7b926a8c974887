"""The broker's settings: one typed, immutable object read from ``PAFKA_BROKER_*`` at the edge."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pafka.errors import ConfigError
from pafka.storage.config import LogConfig

PREFIX = "PAFKA_BROKER_"


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.get(PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{PREFIX}{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"{PREFIX}{name} must be >= {minimum}, got {value}")
    return value


def _str(env: Mapping[str, str], name: str, default: str) -> str:
    value = env.get(PREFIX + name)
    return default if value is None or value == "" else value


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
    # Frames above this are refused before any allocation (Kafka's socket.request.max.bytes).
    max_request_bytes: int = 100 * 1024 * 1024
    max_connections: int = 1000
    # Upper bound on one fetch response, whatever the client asks (Kafka's fetch.max.bytes).
    fetch_max_bytes: int = 55 * 1024 * 1024
    # Requests read ahead of the one being answered, per connection.
    max_inflight_requests: int = 16
    default_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics: bool = False
    delete_topic_enable: bool = True
    log: LogConfig = field(default_factory=LogConfig)
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    retention_check_interval_ms: int = 300_000
    checkpoint_interval_ms: int = 5_000
    # How long CreateTopics waits for the controller to elect leaders when timeout_ms allows.
    topic_ready_wait_ms: int = 30_000
    producer_id_block_size: int = 1000
    log_level: str = "INFO"

    @property
    def control_url(self) -> str:
        return f"http://{self.advertised_host}:{self.http_port}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BrokerSettings:
        env = os.environ if env is None else env
        if not env.get(PREFIX + "ID"):
            raise ConfigError(f"{PREFIX}ID is required (a non-negative integer broker id)")
        defaults = LogConfig()
        log = LogConfig(
            segment_bytes=_int(env, "LOG_SEGMENT_BYTES", defaults.segment_bytes, minimum=1024),
            segment_ms=_int(env, "LOG_SEGMENT_MS", defaults.segment_ms, minimum=1),
            retention_ms=_int(env, "LOG_RETENTION_MS", defaults.retention_ms, minimum=-1),
            retention_bytes=_int(env, "LOG_RETENTION_BYTES", defaults.retention_bytes, minimum=-1),
            max_message_bytes=_int(
                env, "MESSAGE_MAX_BYTES", defaults.max_message_bytes, minimum=64
            ),
        )
        rack = env.get(PREFIX + "RACK") or None
        return cls(
            broker_id=_int(env, "ID", 0),
            zookeeper=_str(env, "ZOOKEEPER", cls.zookeeper),
            host=_str(env, "HOST", cls.host),
            advertised_host=_str(env, "ADVERTISED_HOST", socket.gethostname()),
            port=_int(env, "PORT", cls.port),
            http_port=_int(env, "HTTP_PORT", cls.http_port),
            data_dir=Path(_str(env, "DATA_DIR", str(cls.data_dir))),
            rack=rack,
            zk_session_timeout_ms=_int(env, "ZK_SESSION_TIMEOUT_MS", 6000, minimum=1000),
            max_request_bytes=_int(env, "MAX_REQUEST_BYTES", cls.max_request_bytes, minimum=1024),
            max_connections=_int(env, "MAX_CONNECTIONS", cls.max_connections, minimum=1),
            fetch_max_bytes=_int(env, "FETCH_MAX_BYTES", cls.fetch_max_bytes, minimum=1024),
            default_partitions=_int(env, "NUM_PARTITIONS", 1, minimum=1),
            default_replication_factor=_int(env, "DEFAULT_REPLICATION_FACTOR", 1, minimum=1),
            auto_create_topics=_str(env, "AUTO_CREATE_TOPICS", "false").lower() == "true",
            delete_topic_enable=_str(env, "DELETE_TOPIC_ENABLE", "true").lower() == "true",
            log=log,
            min_insync_replicas=_int(env, "MIN_INSYNC_REPLICAS", 1, minimum=1),
            unclean_leader_election_enable=(
                _str(env, "UNCLEAN_LEADER_ELECTION_ENABLE", "false").lower() == "true"
            ),
            retention_check_interval_ms=_int(
                env, "RETENTION_CHECK_INTERVAL_MS", cls.retention_check_interval_ms, minimum=100
            ),
            log_level=_str(env, "LOG_LEVEL", "INFO").upper(),
        )
