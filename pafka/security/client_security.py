"""How pafka's own Kafka connections secure themselves: the broker's followers and transaction
markers, the gateway, the CLI and the benchmarks.

The names follow Kafka's client configs (``security.protocol``, ``ssl.truststore`` as a PEM CA
file, ``sasl.mechanism``, ...). When brokers are found in ZooKeeper rather than by a bootstrap
list, ``listener`` says which registered listener to use; by default the first one whose
security protocol is the client's own.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.security.listeners import Endpoint, SecurityProtocol
from pafka.security.tls import TlsFiles, client_context


@dataclass(frozen=True)
class ClientSecurity:
    protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    tls: TlsFiles = field(default_factory=TlsFiles)
    check_hostname: bool = True
    sasl_mechanism: str = "SCRAM-SHA-512"
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    listener: str | None = None

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.protocol.uses_tls:
            return None
        return client_context(self.tls, check_hostname=self.check_hostname)

    def endpoint(self, endpoints: Iterable[Endpoint]) -> Endpoint | None:
        """The registered endpoint this client connects to."""
        for e in endpoints:
            if (e.listener == self.listener) if self.listener else (e.protocol == self.protocol):
                return e
        return None

    def check(self) -> ClientSecurity:
        if self.protocol.uses_sasl and not self.sasl_username:
            raise ConfigError(f"{self.protocol} needs a SASL user name and password")
        return self


PLAINTEXT_CLIENT = ClientSecurity()


def read_client_security(env: Env, prefix: str = "") -> ClientSecurity:
    """``{prefix}SECURITY_PROTOCOL``, ``{prefix}SSL_CAFILE``, ``{prefix}SSL_CERTFILE``,
    ``{prefix}SSL_KEYFILE``, ``{prefix}SSL_CHECK_HOSTNAME``, ``{prefix}SASL_MECHANISM``,
    ``{prefix}SASL_USERNAME``, ``{prefix}SASL_PASSWORD`` (or ``..._PASSWORD_FILE``, for
    Kubernetes Secrets mounted as files) and ``{prefix}LISTENER`` of a service's environment."""
    password = env.raw(f"{prefix}SASL_PASSWORD")
    password_file = env.raw(f"{prefix}SASL_PASSWORD_FILE")
    if password is None and password_file:
        try:
            password = Path(password_file).read_text().rstrip("\n")
        except OSError as exc:
            raise ConfigError(f"cannot read the SASL password file {password_file}: {exc}") from exc
    return ClientSecurity(
        protocol=SecurityProtocol.parse(env.text(f"{prefix}SECURITY_PROTOCOL", "PLAINTEXT")),
        tls=TlsFiles(
            certfile=env.raw(f"{prefix}SSL_CERTFILE"),
            keyfile=env.raw(f"{prefix}SSL_KEYFILE"),
            cafile=env.raw(f"{prefix}SSL_CAFILE"),
        ),
        check_hostname=env.flag(f"{prefix}SSL_CHECK_HOSTNAME", True),
        sasl_mechanism=env.text(f"{prefix}SASL_MECHANISM", "SCRAM-SHA-512").upper(),
        sasl_username=env.text(f"{prefix}SASL_USERNAME", ""),
        sasl_password=password or "",
        listener=(env.raw(f"{prefix}LISTENER") or "").upper() or None,
    ).check()
