"""The one place that defines how long a network wait may last.

A network wait without a deadline turns a silent packet loss into an outage: a connection whose
peer vanished sits in TCP retransmission backoff for minutes. Every connect, request and
reconnect in pafka takes its bound from a :class:`NetworkDeadlines`, under Kafka's config
names and defaults where Kafka has them. Each service reads one from its own
``PAFKA_<SERVICE>_*`` variables (:func:`read_deadlines`) into its settings object.
"""

from __future__ import annotations

from dataclasses import dataclass

from pafka.envconfig import Env
from pafka.errors import ConfigError


@dataclass(frozen=True)
class KeepAlive:
    """TCP keepalive of a long-lived connection: after ``idle_ms`` without traffic, a probe
    every ``interval_ms``; ``count`` unanswered probes end the connection."""

    idle_ms: int = 10_000
    interval_ms: int = 5_000
    count: int = 3

    @property
    def dead_after_ms(self) -> int:
        """How long an idle connection to a vanished peer lives at most."""
        return self.idle_ms + self.interval_ms * self.count


@dataclass(frozen=True)
class NetworkDeadlines:
    # socket.connection.setup.timeout.ms: how long one connection may take to establish.
    connection_setup_timeout_ms: int = 10_000
    # default.api.timeout.ms: a client call that names no deadline of its own. Longer than
    # Kafka's request.timeout.ms (30 s) because a call may ask the broker to hold it that long
    # (CreateTopics, acks=all Produce); services with a request.timeout.ms of their own
    # (gateway, controller) keep it in their settings.
    default_api_timeout_ms: int = 60_000
    # replica.socket.timeout.ms: a follower's request to its leader.
    replica_socket_timeout_ms: int = 30_000
    # controller.socket.timeout.ms: the controller's connect and read on a broker's control API.
    controller_socket_timeout_ms: int = 30_000
    # reconnect.backoff.ms / reconnect.backoff.max.ms: the first and the longest pause before a
    # new connection to a peer that failed (exponential, with jitter).
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    # connections.max.idle.ms: the broker closes client connections idle for this long.
    connections_max_idle_ms: int = 600_000
    keepalive: KeepAlive = KeepAlive()

    def __post_init__(self) -> None:
        if self.reconnect_backoff_max_ms < self.reconnect_backoff_ms:
            raise ConfigError(
                f"reconnect.backoff.max.ms ({self.reconnect_backoff_max_ms}) is below "
                f"reconnect.backoff.ms ({self.reconnect_backoff_ms})"
            )

    def check_replica_fetch_wait(self, replica_fetch_wait_max_ms: int) -> None:
        """Kafka refuses a follower socket timeout that a leader holding a fetch for
        replica.fetch.wait.max.ms would always run out: every idle fetch would time out."""
        if self.replica_socket_timeout_ms < replica_fetch_wait_max_ms:
            raise ConfigError(
                f"replica.socket.timeout.ms ({self.replica_socket_timeout_ms}) must be at least "
                f"replica.fetch.wait.max.ms ({replica_fetch_wait_max_ms})"
            )


DEFAULT_DEADLINES = NetworkDeadlines()


def read_deadlines(env: Env, **own: int) -> NetworkDeadlines:
    """The deadlines every service reads (``{prefix}SOCKET_CONNECTION_SETUP_TIMEOUT_MS`` and its
    siblings) plus ``own``: the ones only one service has, read by it under its own name (the
    broker's ``REPLICA_SOCKET_TIMEOUT_MS``, the controller's ``SOCKET_TIMEOUT_MS``)."""
    d = DEFAULT_DEADLINES
    k = d.keepalive
    return NetworkDeadlines(
        connection_setup_timeout_ms=env.integer(
            "SOCKET_CONNECTION_SETUP_TIMEOUT_MS", d.connection_setup_timeout_ms, minimum=1
        ),
        default_api_timeout_ms=env.integer(
            "DEFAULT_API_TIMEOUT_MS", d.default_api_timeout_ms, minimum=1
        ),
        reconnect_backoff_ms=env.integer("RECONNECT_BACKOFF_MS", d.reconnect_backoff_ms),
        reconnect_backoff_max_ms=env.integer(
            "RECONNECT_BACKOFF_MAX_MS", d.reconnect_backoff_max_ms
        ),
        connections_max_idle_ms=env.integer(
            "CONNECTIONS_MAX_IDLE_MS", d.connections_max_idle_ms, minimum=1
        ),
        keepalive=KeepAlive(
            idle_ms=env.integer("SOCKET_KEEPALIVE_IDLE_MS", k.idle_ms, minimum=1000),
            interval_ms=env.integer("SOCKET_KEEPALIVE_INTERVAL_MS", k.interval_ms, minimum=1000),
            count=env.integer("SOCKET_KEEPALIVE_COUNT", k.count, minimum=1),
        ),
        **own,
    )
