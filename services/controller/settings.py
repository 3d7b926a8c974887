"""The controller's settings: one typed, immutable object read from ``PAFKA_CONTROLLER_*``."""

from __future__ import annotations

import socket
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from pafka.envconfig import Env
from pafka.net.deadlines import NetworkDeadlines, read_deadlines
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity, read_client_security
from pafka.zk.security import ZkSecurity, read_zk_security

PREFIX = "PAFKA_CONTROLLER_"


def _default_id() -> int:
    # Stable per host (a pod name in Kubernetes), so restarts keep their identity.
    return zlib.crc32(socket.gethostname().encode()) & 0x7FFFFFFF


@dataclass(frozen=True)
class ControllerSettings:
    controller_id: int
    zookeeper: str = "127.0.0.1:2181"
    host: str = "0.0.0.0"
    advertised_host: str = "127.0.0.1"
    http_port: int = 8090
    zk_session_timeout_ms: int = 6000
    # ZooKeeper digest authentication and the ACLs of created znodes (zookeeper.set.acl).
    zk_security: ZkSecurity = field(default_factory=ZkSecurity)
    # The control API's shared secret (pafka/control/secret.py); None: not checked.
    control_secret: str | None = field(default=None, repr=False)
    request_timeout_ms: int = 10_000
    # ISR-change notifications read in one pass of the event task; a broker failure arriving
    # meanwhile waits at most one pass.
    isr_notifications_per_pass: int = 1000
    preferred_rebalance_interval_ms: int = 300_000
    preferred_imbalance_ratio: float = 0.10
    # How often the active controller refreshes the cluster view it exports (kafka_exporter's
    # topic, partition and consumer-group series).
    cluster_view_interval_ms: int = 15_000
    # Each group's total lag kept by the active controller for the console (lag_history.py):
    # one point per interval (read at the cluster view's refreshes) over the window.
    lag_history_window_ms: int = 1_800_000
    lag_history_interval_ms: int = 15_000
    # controller.socket.timeout.ms bounds each control request; reconnect backoff between tries.
    network: NetworkDeadlines = field(default_factory=NetworkDeadlines)
    log_level: str = "INFO"
    # How the cluster view's Kafka requests (ListOffsets to leaders) reach brokers.
    kafka_security: ClientSecurity = PLAINTEXT_CLIENT

    @property
    def url(self) -> str:
        return f"http://{self.advertised_host}:{self.http_port}"

    @classmethod
    def from_env(cls, values: Mapping[str, str] | None = None) -> ControllerSettings:
        env = Env.of(PREFIX, values)
        return cls(
            controller_id=env.integer("ID", _default_id()),
            kafka_security=read_client_security(env),
            zookeeper=env.text("ZOOKEEPER", cls.zookeeper),
            host=env.text("HOST", cls.host),
            advertised_host=env.text("ADVERTISED_HOST", socket.gethostname()),
            http_port=env.integer("HTTP_PORT", cls.http_port),
            zk_session_timeout_ms=env.integer("ZK_SESSION_TIMEOUT_MS", 6000, minimum=1000),
            zk_security=read_zk_security(env),
            control_secret=env.secret("CONTROL_SECRET"),
            request_timeout_ms=env.integer("REQUEST_TIMEOUT_MS", 10_000, minimum=100),
            isr_notifications_per_pass=env.integer(
                "ISR_NOTIFICATIONS_PER_PASS", cls.isr_notifications_per_pass, minimum=1
            ),
            preferred_rebalance_interval_ms=env.integer(
                "PREFERRED_REBALANCE_INTERVAL_MS", 300_000, minimum=1000
            ),
            cluster_view_interval_ms=env.integer(
                "CLUSTER_VIEW_INTERVAL_MS", cls.cluster_view_interval_ms, minimum=100
            ),
            lag_history_window_ms=env.integer(
                "LAG_HISTORY_WINDOW_MS", cls.lag_history_window_ms, minimum=1000
            ),
            lag_history_interval_ms=env.integer(
                "LAG_HISTORY_INTERVAL_MS", cls.lag_history_interval_ms, minimum=100
            ),
            network=read_deadlines(
                env,
                controller_socket_timeout_ms=env.integer(
                    "SOCKET_TIMEOUT_MS", NetworkDeadlines.controller_socket_timeout_ms, minimum=1
                ),
            ),
            log_level=env.text("LOG_LEVEL", "INFO").upper(),
        )
