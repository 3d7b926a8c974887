"""The fault suite on a cluster secured end to end: ``PAFKA_FAULTS_SECURITY=SASL_SSL``.

Every broker gets a SASL_SSL listener (TLS from a throwaway CA, SCRAM-SHA-512) that is also its
inter-broker listener, so replication, leader changes and the workload's producers and
consumers all run over SASL_SSL. Each broker keeps its PLAINTEXT listener for the harness alone
(ClusterHandle's metadata checks and raw requests).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

from pafka.admin.scram_users import alter_user, upsert
from pafka.local.certs import ThrowawayCa
from pafka.local.cluster import LocalCluster
from pafka.local.ports import free_port
from pafka.security.scram_credentials import ScramCredential

MODE_VARIABLE = "PAFKA_FAULTS_SECURITY"
USER, PASSWORD = "faults", "faults-secret"
MECHANISM = "SCRAM-SHA-512"


def requested() -> bool:
    mode = os.environ.get(MODE_VARIABLE, "").upper()
    if mode not in ("", "PLAINTEXT", "SASL_SSL"):
        raise ValueError(f"{MODE_VARIABLE} is PLAINTEXT or SASL_SSL, not {mode!r}")
    return mode == "SASL_SSL"


@dataclass(frozen=True)
class ClientSide:
    """What the workload's clients need: the secured bootstrap and their security options."""

    bootstrap: str
    # broker id -> its SASL_SSL port, the one replication runs over
    inter_broker_ports: dict[int, int]
    confluent: dict[str, Any]
    kafka_python: dict[str, Any]


def secure(local: LocalCluster, workdir: Path, zk_connect: str) -> ClientSide:
    """Configure ``local`` (not started yet) for SASL_SSL and create the SCRAM user."""
    ca = ThrowawayCa.create(workdir / "ca")
    server = ca.issue("broker", "/CN=localhost", server=True)
    zk = KazooClient(hosts=zk_connect)
    zk.start(timeout=15)
    try:
        alter_user(zk, USER, upsert(MECHANISM, ScramCredential.from_password(MECHANISM, PASSWORD)))
    finally:
        zk.stop()
        zk.close()
    local.broker_env.update(
        {
            "PAFKA_BROKER_SSL_CERTFILE": str(server.cert),
            "PAFKA_BROKER_SSL_KEYFILE": str(server.key),
            "PAFKA_BROKER_SSL_CAFILE": str(ca.ca.cert),
            "PAFKA_BROKER_INTER_BROKER_LISTENER_NAME": "SASL_SSL",
            "PAFKA_BROKER_INTER_BROKER_SASL_USERNAME": USER,
            "PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD": PASSWORD,
        }
    )
    secured_ports: dict[int, int] = {}
    for broker in local.brokers():
        port = free_port()
        secured_ports[broker.id] = port
        local.service_env.setdefault(broker.name, {})["PAFKA_BROKER_LISTENERS"] = (
            f"PLAINTEXT://{broker.host}:{broker.port},SASL_SSL://{broker.host}:{port}"
        )
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in secured_ports.values())
    return ClientSide(
        bootstrap=bootstrap,
        inter_broker_ports=secured_ports,
        confluent={
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(ca.ca.cert),
            "sasl.mechanism": MECHANISM,
            "sasl.username": USER,
            "sasl.password": PASSWORD,
        },
        kafka_python={
            "security_protocol": "SASL_SSL",
            "ssl_cafile": str(ca.ca.cert),
            "sasl_mechanism": MECHANISM,
            "sasl_plain_username": USER,
            "sasl_plain_password": PASSWORD,
        },
    )
