"""The checks every client's module runs through its driver, comparing with what pafka holds.

Topics are created through ZooKeeper (unless the client's own admin API is under test), so a
failing create does not hide the other operations; records are read back either by the same
client or, where it cannot read by assignment, by the reference reader (kafka-python at the
newest protocol)."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from tests.compat.drivers import Driver, key_values, make_records
from tests.integration.conftest import ClusterHandle

_seeds = itertools.count(1)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def check_metadata(driver: Driver, cluster: ClusterHandle) -> None:
    topic = unique("meta")
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    result = driver.run("metadata", bootstrap=cluster.bootstrap, topics=[topic])
    assert result["brokers"] == cluster.broker_ids()
    assert result["topics"][topic] == 3


def check_create_topic(driver: Driver, cluster: ClusterHandle) -> None:
    topic = unique("created")
    driver.run(
        "create_topic", bootstrap=cluster.bootstrap, topic=topic, partitions=3, replication_factor=2
    )
    cluster.wait_for_leaders(topic, 3)
    assert cluster.partition_state(topic, 0).leader in cluster.broker_ids()


def check_produce_consume(
    producer: Driver, reader: Driver, cluster: ClusterHandle, codec: str, partitions: int = 2
) -> None:
    """Keyed records to every partition with ``codec``, read back partition by partition."""
    topic = unique(f"codec-{codec}")
    cluster.create_topic(topic, partitions=partitions, replication_factor=2)
    sent = make_records(partitions, 12, seed=next(_seeds))
    producer.run("produce", bootstrap=cluster.bootstrap, topic=topic, codec=codec, records=sent)
    read: list[dict[str, Any]] = []
    for p in range(partitions):
        got = reader.run(
            "consume", bootstrap=cluster.bootstrap, topic=topic, partition=p, offset=0, count=12
        )["records"]
        assert [r["offset"] for r in got] == list(range(12)), f"partition {p} offsets"
        read += got
    assert key_values(read) == key_values(sent)


def check_consume_from_offset(driver: Driver, cluster: ClusterHandle) -> None:
    """Reading from the middle of a partition starts exactly there."""
    topic = unique("offset")
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    sent = make_records(1, 10, seed=next(_seeds))
    driver.run("produce", bootstrap=cluster.bootstrap, topic=topic, codec="none", records=sent)
    got = driver.run(
        "consume", bootstrap=cluster.bootstrap, topic=topic, partition=0, offset=6, count=4
    )["records"]
    assert [r["offset"] for r in got] == [6, 7, 8, 9]
    assert key_values(got) == key_values(sent[6:])


def check_group(
    driver: Driver,
    cluster: ClusterHandle,
    *,
    describes: bool = True,
    commits_reported: bool = True,
    offsets_reader: Driver | None = None,
    partitions: int = 4,
) -> dict[str, Any]:
    """Two members share the partitions; after one leaves, the other reads everything new."""
    topic = unique("group")
    group = unique("g")
    cluster.create_topic(topic, partitions=partitions, replication_factor=2)
    first = make_records(partitions, 5, seed=next(_seeds), tag="1")
    second = make_records(partitions, 3, seed=next(_seeds), tag="2")
    driver.run("produce", bootstrap=cluster.bootstrap, topic=topic, codec="none", records=first)
    result = driver.run(
        "group",
        timeout_s=180,
        bootstrap=cluster.bootstrap,
        zookeeper=cluster.zk_connect,
        topic=topic,
        group=group,
        first=len(first),
        second=second,
    )
    # Every record read (a rebalance may replay uncommitted ones: at least once, not exactly).
    assert set(key_values(result["first"])) == set(key_values(first))
    # After the leave, "a" resumes "b"'s partitions from their last commit: it may read some
    # first-phase records again, but must read every second-phase one.
    assert set(key_values(result["second"])) >= set(key_values(second))
    assert set(key_values(result["second"])) <= set(key_values(first + second))
    owners: dict[int, set[str]] = {}
    for r in result["first"]:
        owners.setdefault(r["partition"], set()).add(r["member"])
    members_used = {m for ms in owners.values() for m in ms}
    assert members_used == {"a", "b"}, f"partitions by member in the first phase: {owners}"
    assert {r["member"] for r in result["second"]} == {"a"}
    if describes:
        described = result["describe"]
        assert described["members"] == 2
        assert described["state"] == "Stable"
    if commits_reported:
        assert result["committed"] == {str(p): 8 for p in range(partitions)}
    if offsets_reader is not None:
        # The client cannot fetch offsets itself: another client reads what the group committed.
        committed = offsets_reader.run(
            "fetch_offsets",
            bootstrap=cluster.bootstrap,
            group=group,
            topic=topic,
            partitions=list(range(partitions)),
        )["offsets"]
        assert committed == {str(p): 8 for p in range(partitions)}
    return {**result, "topic": topic, "group": group}


def check_commit_fetch(driver: Driver, cluster: ClusterHandle) -> None:
    topic = unique("offsets")
    group = unique("g")
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    sent = make_records(3, 10, seed=next(_seeds))
    driver.run("produce", bootstrap=cluster.bootstrap, topic=topic, codec="none", records=sent)
    offsets = {"0": 3, "1": 7, "2": 10}
    driver.run(
        "commit",
        bootstrap=cluster.bootstrap,
        zookeeper=cluster.zk_connect,
        group=group,
        topic=topic,
        offsets=offsets,
    )
    got = driver.run(
        "fetch_offsets",
        bootstrap=cluster.bootstrap,
        zookeeper=cluster.zk_connect,
        group=group,
        topic=topic,
        partitions=[0, 1, 2],
    )
    assert got["offsets"] == offsets


def check_auto_create(driver: Driver, cluster: ClusterHandle) -> None:
    """Producing to a topic nobody created creates it (Kafka's auto.create.topics.enable, on by
    default) and delivers every record."""
    topic = unique("auto")
    sent = [{"key": f"k{i}", "value": f"auto-{i}-é", "partition": 0} for i in range(5)]
    driver.run("produce", bootstrap=cluster.bootstrap, topic=topic, codec="none", records=sent)
    got = driver.run(
        "consume", bootstrap=cluster.bootstrap, topic=topic, partition=0, offset=0, count=5
    )["records"]
    assert key_values(got) == key_values(sent)
    # Created with Kafka's default num.partitions (1), leaders on every broker's metadata.
    cluster.wait_for_leaders(topic, 1)
