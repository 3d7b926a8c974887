"""The log cleaner's metrics on real brokers, read from /metrics as Prometheus reads them: every
broker hosting a compacted topic reports its partition's compaction delay after the cleaner's
next check, a plain topic gets no such series, and the Kafka gauges are there with their labels.
"""

from __future__ import annotations

import time
import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import ClusterHandle

# The broker's default log.cleaner.backoff.ms is 15 s: the next check comes within that.
CHECK_WAIT_S = 40.0

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Series:
    with urllib.request.urlopen(url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def produce_keyed(bootstrap: str, topic: str, records: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(records):
        producer.produce(topic, f"value-{i}".encode(), f"key-{i % 10}".encode())
    assert producer.flush(30) == 0


def test_every_replica_of_a_compacted_topic_reports_its_compaction_delay(
    cluster: ClusterHandle,
) -> None:
    compacted, plain = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("cleaned", "plain"))
    config = {"cleanup.policy": "compact", "max.compaction.lag.ms": "3600000"}
    cluster.create_topic(compacted, partitions=1, replication_factor=3, config=config)
    cluster.create_topic(plain, partitions=1, replication_factor=3)
    produce_keyed(cluster.bootstrap, compacted, 100)
    produce_keyed(cluster.bootstrap, plain, 100)

    delay = "pafka_broker_log_compaction_delay_seconds"
    labels = frozenset({("topic", compacted), ("partition", "0")})
    brokers = {b: cluster.local.broker(b) for b in cluster.broker_ids()}
    pending = set(brokers)
    deadline = time.monotonic() + CHECK_WAIT_S
    while pending and time.monotonic() < deadline:
        for broker_id in sorted(pending):
            # Fresh records are not past max.compaction.lag.ms: the delay is 0.
            if scrape(brokers[broker_id].http_url).get((delay, labels)) == 0:
                pending.discard(broker_id)
        time.sleep(0.5)
    assert not pending, f"brokers {sorted(pending)} never reported {compacted}'s delay"

    for broker in brokers.values():
        series = scrape(broker.http_url)
        assert not [k for k in series if k[0] == delay and ("topic", plain) in k[1]]
        log_dir = frozenset({("logDirectory", broker.data_dir)})
        uncleanable = "kafka_log_logcleanermanager_uncleanable_partitions_count"
        assert series[(uncleanable, log_dir)] == 0
        assert series[("kafka_log_logcleaner_deadthreadcount", frozenset())] == 0
        since_ms = series[("kafka_log_logcleanermanager_time_since_last_run_ms", frozenset())]
        assert 0 <= since_ms < CHECK_WAIT_S * 1000
        assert ("kafka_log_logcleanermanager_max_dirty_percent", frozenset()) in series
