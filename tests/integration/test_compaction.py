"""Compacted topics on real processes (issue 17): a cluster of its own (three brokers, a
controller, a gateway; the tests restart brokers), its cleaner looking for work every 300 ms.

* RF 3: librdkafka writes 100,000 updates over 1,000 keys; every replica, read from its own
  files, is cleaned to the 1,000 latest records (plus the one the active segment holds) and
  holds the same latest value of every key at the same offset; librdkafka, kafka-python, the
  gateway's range reads and a REST consumer see exactly the latest values, offsets increasing
  with gaps; a replica whose cleaner was off cleans later, independently, and leads: the same
  again; ``retention.ms`` of one second deletes nothing of the compacted topic, while
  ``delete`` and ``compact,delete`` topics beside it lose their old segments.
* Tombstones are read as such until ``delete.retention.ms`` has passed and the cleaner ran
  again; then their keys are gone, on every replica.
* A replica added to a cleaned partition, or restarted with its copy gone, copies the
  leader's gaps and joins the ISR.
* A topic deleted while a (throttled) clean of it runs, and created again, is cleaned.
"""

from __future__ import annotations

import base64
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pafka.admin import topics as admin
from tests.integration.compaction import (
    COMPACTED,
    COMPACTION_BROKER_ENV,
    ROLL_MS,
    Latest,
    Stored,
    Writer,
    assert_increasing,
    cleaned_to,
    consume_confluent,
    consume_kafka_python,
    latest_of,
    partition_dir,
    replica_records,
    roll_with,
    topic_name,
    updates,
    wait_until,
)
from tests.integration.conftest import ClusterHandle, own_cluster

KEYS = 1_000
ROUNDS = 100
BINARY = "application/vnd.kafka.binary.v2+json"
V2 = "application/vnd.kafka.v2+json"


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory,
        "compaction",
        brokers=3,
        controllers=1,
        gateways=1,
        broker_env=COMPACTION_BROKER_ENV,
    ) as handle:
        wait_until(lambda: len(handle.broker_ids()) == 3, "every broker registered", 30)
        yield handle


def create(own: ClusterHandle, topic: str, replicas: tuple[int, ...], **config: str) -> None:
    overrides = {**COMPACTED, "max.compaction.lag.ms": str(ROLL_MS), **config}
    admin.create_topic(own.zk, topic, -1, -1, overrides, {0: replicas})
    own.wait_for_leaders(topic, 1)


def gateway_records(own: ClusterHandle, topic: str) -> list[Stored]:
    """The partition read through the gateway's range endpoint, page by page."""
    out: list[Stored] = []
    offset = 0
    while True:
        page = httpx.get(
            f"{own.gateways[0]}/topics/{topic}/partitions/0/records",
            params={"offset": offset, "max_records": 300},
            headers={"Accept": BINARY},
            timeout=30,
        )
        assert page.status_code == 200, page.text
        body = page.json()
        out += [
            Stored(
                r["offset"],
                base64.b64decode(r["key"]),
                None if r["value"] is None else base64.b64decode(r["value"]),
            )
            for r in body["records"]
        ]
        if body["next_offset"] >= body["high_watermark"]:
            return out
        assert body["next_offset"] > offset, f"the gateway's read stalled at {offset}"
        offset = body["next_offset"]


def gateway_consumer_records(own: ClusterHandle, topic: str, end: int) -> list[Stored]:
    """The partition read by a REST Proxy v2 consumer instance from the beginning to ``end``."""
    out: list[Stored] = []
    with httpx.Client(base_url=own.gateways[0], timeout=30, headers={"Content-Type": V2}) as gw:
        created = gw.post(
            f"/consumers/{topic}-reader",
            json={"format": "binary", "auto.offset.reset": "earliest", "auto.commit.enable": False},
        )
        assert created.status_code == 200, created.text
        path = f"/consumers/{topic}-reader/instances/{created.json()['instance_id']}"
        assigned = gw.post(
            f"{path}/assignments", json={"partitions": [{"topic": topic, "partition": 0}]}
        )
        assert assigned.status_code == 204, assigned.text
        deadline = time.monotonic() + 120
        while (not out or out[-1].offset < end - 1) and time.monotonic() < deadline:
            got = gw.get(f"{path}/records", params={"timeout": 1000}, headers={"Accept": BINARY})
            assert got.status_code == 200, got.text
            out += [
                Stored(
                    r["offset"],
                    base64.b64decode(r["key"]),
                    None if r["value"] is None else base64.b64decode(r["value"]),
                )
                for r in got.json()
            ]
        assert gw.delete(path).status_code == 204
    return out


def check_reads(own: ClusterHandle, topic: str, expected: Latest, end: int) -> None:
    """librdkafka, kafka-python, the gateway's range reads and a REST consumer read the latest
    value of every key, offsets strictly increasing with gaps."""
    for name, records in (
        ("librdkafka", consume_confluent(own, topic, 0, end)),
        ("kafka-python", consume_kafka_python(own, topic, 0, end)),
        ("kafka-python 0.10", consume_kafka_python(own, topic, 0, end, (0, 10, 1))),
        ("gateway", gateway_records(own, topic)),
        ("gateway consumer", gateway_consumer_records(own, topic, end)),
    ):
        assert_increasing(records, name)
        assert latest_of(records) == expected, f"{name} read other latest values"
        assert len(records) < end / 10, f"{name} read {len(records)} records of {end}"


def test_rf3_compacted_topic_is_cleaned_on_every_replica_and_reads_see_latest_values(
    own: ClusterHandle,
) -> None:
    topic = topic_name("compact-rf3")
    # Broker 3, the preferred leader, has its cleaner off while the topic is written: it
    # cleans later than the others and then leads.
    create(own, topic, (3, 1, 2), **{"retention.ms": "1000"})
    own.local.restart("broker-3", extra_env={"PAFKA_BROKER_LOG_CLEANER_ENABLE": "false"})
    wait_until(lambda: 3 in own.partition_state(topic, 0).isr, "broker 3 back in the ISR")
    # Topics beside it whose policy has delete: the same one-second retention does delete
    # their old segments (distinct keys: compaction removes nothing of compact,delete).
    controls = {policy: topic_name("retention-control") for policy in ("delete", "compact,delete")}
    for policy, control in controls.items():
        config = {"cleanup.policy": policy, "segment.bytes": "1024", "retention.ms": "1000"}
        admin.create_topic(own.zk, control, 1, 3, config, None)
        own.wait_for_leaders(control, 1)

    writer = Writer(own)
    started = time.monotonic()
    writer.send(topic, updates(KEYS, ROUNDS), partition=0)
    for control in controls.values():
        for i in range(12):  # a batch each: segments of about three
            writer.send(control, [(b"c%d" % i, b"x" * 200)], partition=0)
    roll_with(writer, topic, b"key-00000", b"final")
    expected = writer.of(topic)
    assert len(expected) == KEYS
    end = max(offset for offset, _ in expected.values()) + 1
    assert end == KEYS * ROUNDS + 1

    # The cleaned section keeps one record per key; the active segment holds the last update.
    cleaned = {b: cleaned_to(own, b, topic, expected, KEYS + 1) for b in (1, 2)}
    assert cleaned[1] == cleaned[2]
    late = replica_records(own, 3, topic, 0)
    assert latest_of(late) == expected
    assert len(late) == end, "broker 3 cleaned with its cleaner off"
    check_reads(own, topic, expected, end)

    # Broker 3 cleans (its cleaner on again), then leads: the same values at the same offsets.
    own.local.restart("broker-3")
    assert cleaned_to(own, 3, topic, expected, KEYS + 1) == cleaned[1]
    wait_until(lambda: 3 in own.partition_state(topic, 0).isr, "broker 3 back in the ISR")
    admin.request_preferred_election(own.zk, [(topic, 0)])
    wait_until(lambda: own.partition_state(topic, 0).leader == 3, "broker 3 leads")
    check_reads(own, topic, expected, end)

    # Retention of one second applies to the delete policies only, long after it expired.
    for policy, control in controls.items():
        wait_until(
            lambda c=control: replica_records(own, 1, c, 0)[0].offset > 0,  # type: ignore[misc]
            f"retention deletes segments of the {policy} topic",
        )
    time.sleep(max(0.0, started + 6 - time.monotonic()))  # six retention periods at least
    for broker in (1, 2, 3):
        assert latest_of(replica_records(own, broker, topic, 0)) == expected


def test_tombstones_are_read_until_delete_retention_then_their_keys_disappear(
    own: ClusterHandle,
) -> None:
    topic = topic_name("compact-tomb")
    retention_ms = 8_000
    create(own, topic, (1, 2, 3), **{"delete.retention.ms": str(retention_ms)})
    writer = Writer(own, compression="gzip")
    writer.send(topic, updates(200, 5), partition=0)
    deleted = [b"key-%05d" % k for k in range(0, 200, 2)]
    writer.send(topic, [(k, None) for k in deleted], partition=0)
    roll_with(writer, topic, b"key-00001", b"after the deletes")
    expected = writer.of(topic)
    assert sum(v is None for _, v in expected.values()) == len(deleted)
    end = max(offset for offset, _ in expected.values()) + 1

    # Cleaned, tombstones kept: read as records without a value.
    for broker in (1, 2, 3):
        cleaned_to(own, broker, topic, expected, 200 + 1)
    for name, records in (
        ("librdkafka", consume_confluent(own, topic, 0, end)),
        ("kafka-python", consume_kafka_python(own, topic, 0, end)),
        ("kafka-python 0.10", consume_kafka_python(own, topic, 0, end, (0, 10, 1))),
    ):
        assert latest_of(records) == expected, name
        assert {r.key for r in records if r.value is None} == set(deleted), name

    # Past delete.retention.ms, a clean (due to a new update) removes them.
    time.sleep(retention_ms / 1000)
    roll_with(writer, topic, b"key-00003", b"later")
    expected = {k: v for k, v in writer.of(topic).items() if v[1] is not None}
    for broker in (1, 2, 3):
        cleaned_to(own, broker, topic, expected, 100 + 1)
    end = max(offset for offset, _ in expected.values()) + 1
    for name, records in (
        ("librdkafka", consume_confluent(own, topic, 0, end)),
        ("kafka-python", consume_kafka_python(own, topic, 0, end)),
        ("kafka-python 0.10", consume_kafka_python(own, topic, 0, end, (0, 10, 1))),
    ):
        assert latest_of(records) == expected, name
        assert not any(r.key in deleted for r in records), name


def test_replicas_added_or_restarted_empty_copy_a_cleaned_leaders_gaps(
    own: ClusterHandle,
) -> None:
    topic = topic_name("compact-grow")
    create(own, topic, (1, 2))
    writer = Writer(own)
    writer.send(topic, updates(300, 30), partition=0)
    roll_with(writer, topic, b"key-00000", b"final")
    expected = writer.of(topic)
    leader = cleaned_to(own, 1, topic, expected, 300 + 1)
    admin.reassign_partitions(own.zk, {(topic, 0): (1, 2, 3)})
    wait_until(lambda: 3 in own.partition_state(topic, 0).isr, "broker 3 joins the ISR")
    added = replica_records(own, 3, topic, 0)
    assert latest_of(added) == expected
    assert [r.offset for r in added] == [r.offset for r in leader]

    # Broker 2 loses its copy (its disk replaced, say) and fetches it all again.
    own.local.kill("broker-2", signal.SIGKILL)
    shutil.rmtree(partition_dir(own, 2, topic, 0))
    own.local.restart("broker-2")
    wait_until(lambda: 2 in own.partition_state(topic, 0).isr, "broker 2 back in the ISR")
    wait_until(
        lambda: replica_records(own, 2, topic, 0) == leader, "broker 2 holds the leader's records"
    )


def clean_workers(parent_pid: int) -> list[int]:
    """Pids of the cleaner's worker processes a broker runs now."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent_pid and b"pafka.storage.clean_worker" in cmdline:
            found.append(int(entry.name))
    return found


def test_a_topic_deleted_during_a_clean_and_created_again_is_cleaned(own: ClusterHandle) -> None:
    """Kafka aborts the clean of a deleted log; a log of the same name later is cleaned as any
    other."""
    topic = topic_name("compact-again")
    # Broker 1's cleaner throttled to 1 MB/s: its clean of the whole topic takes seconds.
    throttled = {"PAFKA_BROKER_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND": str(1_000_000)}
    own.local.restart("broker-1", extra_env=throttled)
    try:
        # Written while the policy is delete, then made compact: one clean of it all.
        admin.create_topic(own.zk, topic, -1, -1, {"segment.bytes": "65536"}, {0: (1,)})
        own.wait_for_leaders(topic, 1)
        Writer(own).send(topic, updates(KEYS, ROUNDS), partition=0)
        admin.alter_topic_config(own.zk, topic, COMPACTED)
        broker_pid = own.local.broker(1).pid
        wait_until(lambda: bool(clean_workers(broker_pid)), "broker 1 cleans", 60)
        admin.delete_topic(own.zk, topic)
        wait_until(lambda: topic not in admin.list_topics(own.zk), "the topic is gone", 60)
        wait_until(lambda: not clean_workers(broker_pid), "the clean ends", 120)

        create(own, topic, (1,))
        writer = Writer(own)
        writer.send(topic, updates(100, 10), partition=0)
        roll_with(writer, topic, b"key-00000", b"final")
        cleaned_to(own, 1, topic, writer.of(topic), 100 + 1)
    finally:
        own.local.restart("broker-1")
