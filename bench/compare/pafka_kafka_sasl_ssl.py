"""pafka through the Kafka protocol over SASL_SSL with SCRAM-SHA-512 (see
:mod:`bench.compare.pafka_kafka_secure`)."""

from bench.compare.pafka_kafka import ClientDriver
from bench.compare.pafka_kafka_secure import SaslSslSystem as System

__all__ = ["ClientDriver", "System"]
