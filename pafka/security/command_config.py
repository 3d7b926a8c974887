"""A Kafka tool's ``--command-config`` file: the client properties of a secured cluster, as
``kafka-topics.sh`` and its companions read them, turned into pafka's :class:`ClientSecurity`.

Understood: ``security.protocol``; PEM files as ``ssl.ca.location``,
``ssl.certificate.location``, ``ssl.key.location`` (librdkafka's names) or
``ssl.truststore.location`` / ``ssl.keystore.location`` when they name PEM files (Kafka 2.7+
accepts PEM stores; JKS and PKCS12 stores are refused with a clear error);
``ssl.endpoint.identification.algorithm`` (empty turns hostname checks off);
``sasl.mechanism`` and the credentials either as ``sasl.username``/``sasl.password``
(librdkafka) or inside ``sasl.jaas.config`` (Kafka's login modules).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pafka.errors import ConfigError
from pafka.security.client_security import ClientSecurity
from pafka.security.listeners import SecurityProtocol
from pafka.security.tls import TlsFiles

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def parse_properties(text: str) -> dict[str, str]:
    """Java properties as Kafka's tools write them: ``key=value``, ``key: value`` or
    ``key value`` lines, ``#``/``!`` comments, a trailing backslash continuing a line."""
    props: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        line, pending = pending + line, ""
        found = re.match(r"([^=:\s]+)\s*(?:[=:]|\s)\s*(.*)$", line)
        if found is None:
            props[line] = ""
        else:
            props[found.group(1)] = found.group(2)
    return props


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    protocol = SecurityProtocol.parse(props.get("security.protocol", "PLAINTEXT"))
    username = props.get("sasl.username", "")
    password = props.get("sasl.password", "")
    jaas = props.get("sasl.jaas.config")
    if jaas:
        options = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(jaas)}
        username = options.get("username", username)
        password = options.get("password", password)
    tls = TlsFiles(
        cafile=_pem(props, "ssl.ca.location", "ssl.truststore.location"),
        certfile=_pem(props, "ssl.certificate.location", "ssl.keystore.location"),
        keyfile=props.get("ssl.key.location") or _pem(props, "", "ssl.keystore.location"),
        key_password=props.get("ssl.key.password"),
    )
    return ClientSecurity(
        protocol=protocol,
        tls=tls,
        check_hostname=props.get("ssl.endpoint.identification.algorithm", "https") != "",
        sasl_mechanism=props.get("sasl.mechanism", "SCRAM-SHA-512").upper(),
        sasl_username=username,
        sasl_password=password,
        listener=props.get("pafka.listener") or None,
    ).check()


def _pem(props: Mapping[str, str], librdkafka_name: str, store_name: str) -> str | None:
    if librdkafka_name and props.get(librdkafka_name):
        return props[librdkafka_name]
    store = props.get(store_name)
    if not store:
        return None
    store_type = props.get(
        store_name.replace("location", "type"), "PEM" if store.endswith(".pem") else "JKS"
    )
    if store_type.upper() != "PEM":
        raise ConfigError(
            f"{store_name} {store} is a {store_type} store; pafka's tools read PEM files "
            "(set ssl.ca.location, ssl.certificate.location and ssl.key.location)"
        )
    return store


def read_command_config(path: str) -> ClientSecurity:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read --command-config {path}: {exc}") from exc
    return client_security(parse_properties(text))
