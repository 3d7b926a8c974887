"""Named listeners, as Kafka configures them: ``listeners``, ``advertised.listeners``,
``listener.security.protocol.map`` and ``inter.broker.listener.name``.

A listener is a name, a host and a port (``INTERNAL://0.0.0.0:9093``); its security protocol
comes from the map, where each of Kafka's four protocols also names itself, so
``SASL_SSL://:9094`` needs no map entry. A broker registers every advertised listener in
``/brokers/ids/{id}``, and a client is told the endpoints of the listener it connected through.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pafka.errors import ConfigError


class SecurityProtocol(enum.StrEnum):
    PLAINTEXT = "PLAINTEXT"
    SSL = "SSL"
    SASL_PLAINTEXT = "SASL_PLAINTEXT"
    SASL_SSL = "SASL_SSL"

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)

    @classmethod
    def parse(cls, text: str) -> SecurityProtocol:
        try:
            return cls(text.strip().upper())
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise ConfigError(f"unknown security protocol {text!r} (one of {names})") from None


DEFAULT_PROTOCOL_MAP: Mapping[str, SecurityProtocol] = {p.value: p for p in SecurityProtocol}


@dataclass(frozen=True)
class Endpoint:
    """One listener's address: where a broker binds, or what it advertises."""

    listener: str
    protocol: SecurityProtocol
    host: str
    port: int

    @property
    def url(self) -> str:
        """As ``/brokers/ids/{id}`` lists it (Kafka spells the listener name, not the
        protocol)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


def parse_protocol_map(text: str) -> dict[str, SecurityProtocol]:
    """``INTERNAL:SASL_SSL,EXTERNAL:SSL``, added to Kafka's default map (each protocol names
    itself)."""
    mapping = dict(DEFAULT_PROTOCOL_MAP)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, protocol = item.partition(":")
        if not sep or not _valid_name(name):
            raise ConfigError(f"listener.security.protocol.map entry {item!r} is not NAME:PROTOCOL")
        mapping[name.upper()] = SecurityProtocol.parse(protocol)
    return mapping


def parse_listeners(
    text: str, protocol_map: Mapping[str, SecurityProtocol], *, default_host: str = ""
) -> tuple[Endpoint, ...]:
    """``NAME://host:port,...``; an empty host means ``default_host`` (all interfaces for a
    bind, the broker's host name when advertised). Names and ports must be unique."""
    endpoints: list[Endpoint] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, address = item.partition("://")
        name = name.upper()
        if not sep or not _valid_name(name):
            raise ConfigError(f"listener {item!r} is not of the form NAME://host:port")
        host, port = _split_address(item, address)
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ConfigError(
                f"listener {name} has no security protocol: add {name}:PROTOCOL to "
                "the listener security protocol map"
            )
        endpoints.append(Endpoint(name, protocol, host or default_host, port))
    if not endpoints:
        raise ConfigError("no listener configured")
    _require_unique([e.listener for e in endpoints], "listener name")
    return tuple(endpoints)


def advertise(
    bound: Iterable[Endpoint], advertised: Iterable[Endpoint], advertised_host: str
) -> tuple[Endpoint, ...]:
    """The endpoints a broker registers: its advertised listeners where given, else each bound
    listener with ``advertised_host`` in place of a wildcard or empty host, at the port it
    actually bound (so port 0 advertises the port the system chose)."""
    given = {e.listener: e for e in advertised}
    out: list[Endpoint] = []
    for endpoint in bound:
        named = given.pop(endpoint.listener, None)
        if named is not None:
            out.append(named)
        elif endpoint.host in ("", "0.0.0.0", "::"):
            out.append(
                Endpoint(endpoint.listener, endpoint.protocol, advertised_host, endpoint.port)
            )
        else:
            out.append(endpoint)
    if given:
        names = ", ".join(sorted(given))
        raise ConfigError(f"advertised listeners {names} are not among the listeners")
    return tuple(out)


def inter_broker_listener(endpoints: Iterable[Endpoint], name: str | None) -> str:
    """The listener followers and the transaction coordinator use: the named one, else
    PLAINTEXT (Kafka's default ``security.inter.broker.protocol``) when present, else the first."""
    names = [e.listener for e in endpoints]
    if name is not None:
        if name.upper() not in names:
            raise ConfigError(f"inter-broker listener {name} is not among the listeners {names}")
        return name.upper()
    return "PLAINTEXT" if "PLAINTEXT" in names else names[0]


def _valid_name(name: str) -> bool:
    return bool(name) and all(c.isalnum() or c in "_-" for c in name)


def _split_address(item: str, address: str) -> tuple[str, int]:
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"listener {item!r} has no valid port")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port_text)


def _require_unique(values: list[str], what: str) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{what} {value} is configured twice")
        seen.add(value)


def address_of(endpoints: Iterable[Endpoint], listener: str) -> tuple[str, int] | None:
    for endpoint in endpoints:
        if endpoint.listener == listener:
            return endpoint.host, endpoint.port
    return None


def parse_registered(
    urls: Iterable[str], protocol_map: Mapping[str, str] | None
) -> tuple[Endpoint, ...]:
    """The endpoints of a ``/brokers/ids/{id}`` registration (Kafka's ``endpoints`` and
    ``listener_security_protocol_map``; registrations before Kafka 0.10.2 have no map, their
    endpoint names being protocols)."""
    mapping = dict(DEFAULT_PROTOCOL_MAP)
    for name, protocol in (protocol_map or {}).items():
        mapping[str(name).upper()] = SecurityProtocol.parse(str(protocol))
    return parse_listeners(",".join(urls), mapping)


def plaintext(host: str, port: int) -> Endpoint:
    """One PLAINTEXT listener (a broker's default, and tests')."""
    return Endpoint("PLAINTEXT", SecurityProtocol.PLAINTEXT, host, port)
