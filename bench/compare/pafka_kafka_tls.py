"""pafka through the Kafka protocol over TLS (see :mod:`bench.compare.pafka_kafka_secure`)."""

from bench.compare.pafka_kafka import ClientDriver
from bench.compare.pafka_kafka_secure import TlsSystem as System

__all__ = ["ClientDriver", "System"]
