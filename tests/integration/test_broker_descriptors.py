"""A real broker holds about one descriptor per hosted partition: its active segment's log.

Counted from ``/proc/<pid>/fd`` of each broker process, only descriptors open on files of the
test's own topic (the session's cluster hosts other tests' topics too).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from pathlib import Path

from pafka.storage import layout
from tests.integration.conftest import ClusterHandle
from tests.unit.fds_util import open_fds_under

PARTITIONS = 300
# A checkpoint fsyncing one log at the moment of counting holds three more for an instant.
TRANSIENT = 8


def _topic_descriptors(data_dir: Path, pid: int, topic: str) -> Counter[Path]:
    return Counter(
        {
            path: n
            for path, n in open_fds_under(data_dir, pid).items()
            if layout.parse_partition_dir(path.parent.name) is not None
            and path.parent.name.rsplit("-", 1)[0] == topic
        }
    )


def test_a_broker_holds_about_one_descriptor_per_hosted_partition(cluster: ClusterHandle) -> None:
    from confluent_kafka import Producer

    topic = f"fds-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3, timeout_s=120)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for partition in range(0, PARTITIONS, 10):
        for i in range(20):
            producer.produce(topic, value=b"v%d" % i * 50, partition=partition)
    assert producer.flush(60) == 0

    for broker in cluster.local.brokers():
        data_dir = Path(broker.data_dir)
        # Followers open their logs when LeaderAndIsr reaches them: wait for all of them.
        deadline = time.monotonic() + 60
        held = _topic_descriptors(data_dir, broker.pid, topic)
        while len({p.parent for p in held}) < PARTITIONS and time.monotonic() < deadline:
            time.sleep(0.2)
            held = _topic_descriptors(data_dir, broker.pid, topic)
        partitions_with_open_logs = {p.parent for p in held if p.suffix == layout.LOG_SUFFIX}
        assert len(partitions_with_open_logs) == PARTITIONS, broker.name
        assert PARTITIONS <= sum(held.values()) <= PARTITIONS + TRANSIENT, (
            broker.name,
            Counter(p.suffix for p in held.elements()),
        )
