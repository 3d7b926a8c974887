"""The broker's listeners and how each is secured, from ``PAFKA_BROKER_*``.

Kafka's configs under pafka's names: ``LISTENERS`` (``listeners``; default one PLAINTEXT
listener at ``HOST:PORT``), ``ADVERTISED_LISTENERS``, ``LISTENER_SECURITY_PROTOCOL_MAP``,
``INTER_BROKER_LISTENER_NAME``; TLS from PEM files (``SSL_CERTFILE``, ``SSL_KEYFILE``,
``SSL_KEY_PASSWORD``, ``SSL_CAFILE``, ``SSL_CLIENT_AUTH``); SASL (``SASL_ENABLED_MECHANISMS``,
``CONNECTIONS_MAX_REAUTH_MS``); and the broker's own credentials on the inter-broker listener
(``SASL_MECHANISM_INTER_BROKER_PROTOCOL``, ``INTER_BROKER_SASL_USERNAME``,
``INTER_BROKER_SASL_PASSWORD`` or ``..._FILE``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pafka.envconfig import Env
from pafka.errors import ConfigError
from pafka.security.client_security import ClientSecurity, read_client_security
from pafka.security.listeners import (
    Endpoint,
    inter_broker_listener,
    parse_listeners,
    parse_protocol_map,
)
from pafka.security.sasl_mechanisms import MECHANISMS
from pafka.security.tls import ClientAuth, TlsFiles


@dataclass(frozen=True)
class ListenerSettings:
    listeners: tuple[Endpoint, ...]
    advertised: tuple[Endpoint, ...] = ()
    inter_broker_listener: str = "PLAINTEXT"
    tls: TlsFiles = field(default_factory=TlsFiles)
    client_auth: ClientAuth = ClientAuth.NONE
    sasl_mechanisms: tuple[str, ...] = MECHANISMS
    # Kafka's connections.max.reauth.ms: 0 leaves SASL sessions unbounded.
    reauth_ms: int = 0
    # A connection that has not finished its TLS handshake and SASL exchange by then is closed.
    authentication_timeout_ms: int = 30_000
    # Kafka's connection.failed.authentication.delay.ms: a refused login's connection closes
    # this long after its answer is written, so the answer is read before the close (a close
    # with the client's next request unread resets the connection, losing the answer) and
    # password guessing is slowed.
    failed_authentication_delay_ms: int = 100
    # How often the TLS files are checked for renewal.
    tls_reload_interval_ms: int = 60_000
    # How this broker connects to the others' inter-broker listener.
    inter_broker: ClientSecurity = field(default_factory=ClientSecurity)

    @classmethod
    def from_env(cls, env: Env, *, host: str, port: int) -> ListenerSettings:
        protocol_map = parse_protocol_map(env.text("LISTENER_SECURITY_PROTOCOL_MAP", ""))
        listeners = parse_listeners(
            env.text("LISTENERS", f"PLAINTEXT://{host}:{port}"), protocol_map
        )
        advertised_text = env.text("ADVERTISED_LISTENERS", "")
        advertised = parse_listeners(advertised_text, protocol_map) if advertised_text else ()
        inter_name = inter_broker_listener(listeners, env.raw("INTER_BROKER_LISTENER_NAME"))
        tls = TlsFiles(
            certfile=env.raw("SSL_CERTFILE"),
            keyfile=env.raw("SSL_KEYFILE"),
            cafile=env.raw("SSL_CAFILE"),
            key_password=env.raw("SSL_KEY_PASSWORD"),
        )
        mechanisms = tuple(
            m.strip().upper()
            for m in env.text("SASL_ENABLED_MECHANISMS", ",".join(MECHANISMS)).split(",")
            if m.strip()
        )
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown:
            raise ConfigError(
                f"SASL mechanisms {', '.join(unknown)} are not supported "
                f"(only {', '.join(MECHANISMS)})"
            )
        if any(e.protocol.uses_tls for e in listeners) and not tls.certfile:
            raise ConfigError("a TLS listener needs PAFKA_BROKER_SSL_CERTFILE and SSL_KEYFILE")
        inter_protocol = next(e.protocol for e in listeners if e.listener == inter_name)
        inter_broker = replace(
            read_client_security(_inter_broker_env(env, inter_protocol.value), "INTER_BROKER_"),
            tls=TlsFiles(tls.certfile, tls.keyfile, tls.cafile, tls.key_password),
            listener=inter_name,
        )
        return cls(
            listeners=listeners,
            advertised=advertised,
            inter_broker_listener=inter_name,
            tls=tls,
            client_auth=ClientAuth.parse(env.text("SSL_CLIENT_AUTH", "none")),
            sasl_mechanisms=mechanisms,
            reauth_ms=env.integer("CONNECTIONS_MAX_REAUTH_MS", 0),
            authentication_timeout_ms=env.integer("AUTHENTICATION_TIMEOUT_MS", 30_000, minimum=100),
            failed_authentication_delay_ms=env.integer(
                "CONNECTION_FAILED_AUTHENTICATION_DELAY_MS", 100, minimum=0
            ),
            tls_reload_interval_ms=env.integer("SSL_RELOAD_INTERVAL_MS", 60_000, minimum=100),
            inter_broker=inter_broker,
        )


def _inter_broker_env(env: Env, protocol: str) -> Env:
    """The broker's environment as its inter-broker client reads it: the protocol is the
    inter-broker listener's, the mechanism Kafka's ``sasl.mechanism.inter.broker.protocol``."""
    overlay = {
        f"{env.prefix}INTER_BROKER_SECURITY_PROTOCOL": protocol,
        f"{env.prefix}INTER_BROKER_SASL_MECHANISM": env.text(
            "SASL_MECHANISM_INTER_BROKER_PROTOCOL", "SCRAM-SHA-512"
        ),
    }
    return Env(env.prefix, {**env.values, **overlay})
