"""pafka through the Kafka protocol over TLS, and over SASL_SSL with SCRAM-SHA-512: the same
cluster, clients and workloads as :mod:`bench.compare.pafka_kafka`, so ``pafka bench
--systems pafka-kafka,pafka-kafka-tls,pafka-kafka-sasl-ssl`` reports what security costs as a
ratio of the plaintext run beside it.

Every broker listens on a TLS listener (SSL, or SASL_SSL) besides the harness's PLAINTEXT one,
and that listener is also the inter-broker one, so replication pays the same price as clients
(as in a cluster secured end to end). The certificates come from a throwaway CA
(:mod:`pafka.local.certs`, RSA 2048); TLS 1.3 is what OpenSSL negotiates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench.compare import pafka_kafka
from bench.compare.driver import Endpoint, Workload

SASL_USER = "bench"
SASL_PASSWORD = "bench-secret"


class _SecureSystem(pafka_kafka.System):
    protocol = "SSL"

    def start(self, workdir: Path, workload: Workload) -> Endpoint:
        from kazoo.client import KazooClient

        from pafka.admin.scram_users import alter_user, upsert
        from pafka.local.certs import ThrowawayCa
        from pafka.local.cluster import LocalCluster
        from pafka.local.ports import free_port
        from pafka.local.zookeeper import ZooKeeperServer
        from pafka.security.scram_credentials import ScramCredential

        ca = ThrowawayCa.create(workdir / "pafka-tls" / "ca")
        server = ca.issue("broker", "/CN=localhost", server=True)
        self.zookeeper = ZooKeeperServer(workdir / "pafka-tls" / "zookeeper", port=0)
        try:
            self.zookeeper.start()
            zk = KazooClient(hosts=self.zookeeper.connect_string)
            zk.start(timeout=15)
            try:
                mechanism = "SCRAM-SHA-512"
                credential = ScramCredential.from_password(mechanism, SASL_PASSWORD)
                alter_user(zk, SASL_USER, upsert(mechanism, credential))
            finally:
                zk.stop()
                zk.close()
            brokers = max(1, workload.replication_factor)
            ports = {i: free_port() for i in range(1, brokers + 1)}
            self.cluster = LocalCluster(
                workdir / "pafka-tls",
                brokers=brokers,
                controllers=1,
                zookeeper=self.zookeeper.connect_string,
                broker_env={
                    **pafka_kafka.BROKER_ENV,
                    "PAFKA_BROKER_SSL_CERTFILE": str(server.cert),
                    "PAFKA_BROKER_SSL_KEYFILE": str(server.key),
                    "PAFKA_BROKER_SSL_CAFILE": str(ca.ca.cert),
                    "PAFKA_BROKER_INTER_BROKER_LISTENER_NAME": self.protocol,
                    "PAFKA_BROKER_INTER_BROKER_SASL_USERNAME": SASL_USER,
                    "PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD": SASL_PASSWORD,
                },
            )
            for broker_id, port in ports.items():
                plaintext = self.cluster.broker(broker_id).port
                self.cluster.service_env[f"broker-{broker_id}"] = {
                    "PAFKA_BROKER_LISTENERS": (
                        f"PLAINTEXT://127.0.0.1:{plaintext},{self.protocol}://127.0.0.1:{port}"
                    )
                }
            self.cluster.start()
        except BaseException:
            self.stop()
            raise
        config: dict[str, Any] = {
            "security.protocol": self.protocol,
            "ssl.ca.location": str(ca.ca.cert),
        }
        if self.protocol == "SASL_SSL":
            config.update(
                {
                    "sasl.mechanism": "SCRAM-SHA-512",
                    "sasl.username": SASL_USER,
                    "sasl.password": SASL_PASSWORD,
                }
            )
        address = ",".join(f"127.0.0.1:{p}" for p in ports.values())
        return Endpoint(
            system=self.name, address=address, extra={"kafka_config": json.dumps(config)}
        )

    def create_stream(self, endpoint: Endpoint, topic: str, workload: Workload) -> None:
        pafka_kafka.create_topic(
            endpoint.address, topic, workload, client_config=pafka_kafka.security_config(endpoint)
        )


class TlsSystem(_SecureSystem):
    name = "pafka-kafka-tls"
    protocol = "SSL"


class SaslSslSystem(_SecureSystem):
    name = "pafka-kafka-sasl-ssl"
    protocol = "SASL_SSL"
