"""The gateway's settings: one typed, immutable object read from ``PAFKA_GATEWAY_*``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pafka.cpus import usable_cpus
from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.net.deadlines import NetworkDeadlines, read_deadlines
from pafka.security.acl_authorizer import read_authorizer_config, read_authorizer_name
from pafka.security.authorization import AuthorizerConfig
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity, read_client_security
from pafka.security.tls import ClientAuth, TlsFiles
from pafka.zk.security import ZkSecurity, read_zk_security

PREFIX = "PAFKA_GATEWAY_"


@dataclass(frozen=True)
class GatewaySettings:
    zookeeper: str | None = "127.0.0.1:2181"
    # HOST:PORT,... of brokers; used when no ZooKeeper is given (or before it answers).
    bootstrap: str | None = None
    host: str = "0.0.0.0"
    port: int = 8082
    # Worker processes serving the port (services/gateway/workers.py); from the environment
    # the default is the CPUs this process may use (affinity, cgroup quota).
    workers: int = 1
    # A keep-alive HTTP connection idle this long is closed: REST Proxy's idle.timeout.ms.
    idle_timeout_ms: int = 30_000
    zk_session_timeout_ms: int = 6000
    # ZooKeeper digest authentication and the ACLs of created znodes (zookeeper.set.acl).
    zk_security: ZkSecurity = field(default_factory=ZkSecurity)
    # How long concurrent produce requests wait to share one Produce request.
    linger_ms: float = 2.0
    request_timeout_ms: int = 30_000
    # How long a request waits for the brokers' metadata to show a topic (or partition) that
    # ZooKeeper already has, created a moment ago; the role of a Kafka producer's max.block.ms.
    metadata_wait_ms: int = 10_000
    max_body_bytes: int = 16 * 1024 * 1024
    max_records_per_request: int = 10_000
    max_poll_ms: int = 30_000
    max_fetch_bytes: int = 8 * 1024 * 1024
    consumer_instance_timeout_ms: int = 300_000
    # Bearer tokens (services/gateway/auth.py): a file of "TOKEN topic-glob[,topic-glob...]"
    # lines, and/or the same lines separated by ";"; neither: no authentication.
    tokens_file: Path | None = None
    tokens: str | None = field(default=None, repr=False)
    # Connect and call deadlines, keepalive, reconnect backoff of connections to brokers.
    network: NetworkDeadlines = field(default_factory=NetworkDeadlines)
    log_level: str = "INFO"
    # How the gateway's Kafka connections are secured (SECURITY_PROTOCOL, SSL_*, SASL_*,
    # LISTENER), as any Kafka client's.
    kafka_security: ClientSecurity = PLAINTEXT_CLIENT
    # HTTPS on the REST port (HTTPS_CERTFILE, HTTPS_KEYFILE; HTTPS_CAFILE and
    # HTTPS_CLIENT_AUTH for client certificates); none: plain HTTP.
    https: TlsFiles | None = None
    https_client_auth: ClientAuth = ClientAuth.NONE
    https_reload_interval_ms: int = 60_000
    # HTTP Basic against the SCRAM credentials in ZooKeeper (BASIC_AUTH), and the ACL
    # authorizer deciding every call (AUTHORIZER=acl, SUPER_USERS,
    # ALLOW_EVERYONE_IF_NO_ACL_FOUND: the brokers' settings, the same rules).
    basic_auth: bool = False
    authorizer: str = ""
    acl: AuthorizerConfig = field(default_factory=AuthorizerConfig)

    def read_bytes(self, asked: int | None) -> int:
        """A read's byte cap: what the caller asked for, never above ``max_fetch_bytes``."""
        return min(asked or self.max_fetch_bytes, self.max_fetch_bytes)

    def read_wait_ms(self, asked: int) -> int:
        """How long a read may wait for a first record: as asked, never above ``max_poll_ms``."""
        return min(asked, self.max_poll_ms)

    def bootstrap_addresses(self) -> list[tuple[str, int]]:
        found = []
        for item in (self.bootstrap or "").split(","):
            if not item.strip():
                continue
            host, _, port = item.strip().rpartition(":")
            if not host or not port.isdigit():
                raise ConfigError(f"{PREFIX}BOOTSTRAP entry {item!r} is not HOST:PORT")
            found.append((host, int(port)))
        return found

    @classmethod
    def from_env(cls, values: Mapping[str, str] | None = None) -> GatewaySettings:
        env = Env.of(PREFIX, values)
        settings = cls(
            zookeeper=env.raw("ZOOKEEPER")
            if env.raw("BOOTSTRAP")
            else env.text("ZOOKEEPER", "127.0.0.1:2181"),
            bootstrap=env.raw("BOOTSTRAP"),
            host=env.text("HOST", cls.host),
            port=env.integer("PORT", cls.port),
            workers=env.integer("WORKERS", 0, minimum=1) or usable_cpus(),
            idle_timeout_ms=env.integer("IDLE_TIMEOUT_MS", cls.idle_timeout_ms, minimum=1),
            zk_session_timeout_ms=env.integer("ZK_SESSION_TIMEOUT_MS", 6000, minimum=1000),
            zk_security=read_zk_security(env),
            linger_ms=env.integer("LINGER_MS", 2),
            request_timeout_ms=env.integer("REQUEST_TIMEOUT_MS", 30_000, minimum=100),
            metadata_wait_ms=env.integer("METADATA_WAIT_MS", cls.metadata_wait_ms, minimum=0),
            max_body_bytes=env.integer("MAX_BODY_BYTES", cls.max_body_bytes, minimum=1024),
            max_records_per_request=env.integer(
                "MAX_RECORDS_PER_REQUEST", cls.max_records_per_request, minimum=1
            ),
            max_poll_ms=env.integer("MAX_POLL_MS", cls.max_poll_ms),
            max_fetch_bytes=env.integer("MAX_FETCH_BYTES", cls.max_fetch_bytes, minimum=1024),
            consumer_instance_timeout_ms=env.integer(
                "CONSUMER_INSTANCE_TIMEOUT_MS", cls.consumer_instance_timeout_ms, minimum=1000
            ),
            tokens_file=Path(raw) if (raw := env.raw("TOKENS_FILE")) else None,
            tokens=env.raw("TOKENS"),
            network=read_deadlines(env),
            log_level=env.text("LOG_LEVEL", "INFO").upper(),
            kafka_security=read_client_security(env),
            https=TlsFiles(
                certfile=certfile,
                keyfile=env.raw("HTTPS_KEYFILE"),
                cafile=env.raw("HTTPS_CAFILE"),
                key_password=env.raw("HTTPS_KEY_PASSWORD"),
            )
            if (certfile := env.raw("HTTPS_CERTFILE"))
            else None,
            https_client_auth=ClientAuth.parse(env.text("HTTPS_CLIENT_AUTH", "none")),
            https_reload_interval_ms=env.integer("HTTPS_RELOAD_INTERVAL_MS", 60_000, minimum=100),
            basic_auth=env.flag("BASIC_AUTH", False),
            authorizer=read_authorizer_name(env),
            acl=read_authorizer_config(env),
        )
        settings.bootstrap_addresses()
        if (settings.basic_auth or settings.authorizer) and not settings.zookeeper:
            raise ConfigError(
                f"{PREFIX}BASIC_AUTH and {PREFIX}AUTHORIZER read users and ACLs from ZooKeeper: "
                f"set {PREFIX}ZOOKEEPER"
            )
        return settings
