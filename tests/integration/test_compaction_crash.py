"""kill -9 of a broker in the middle of a clean (issue 17), at a point the cleaner's test hook
names (``PAFKA_BROKER_LOG_CLEANER_TEST_PAUSE_AT``): the broker announces it has stopped there
with a marker file in its data directory, the test kills it, writes on, and restarts it without
the hook. Its log recovers consistent (no file of the clean left), with every key's latest
value, it rejoins the ISR and the replicas converge.

This module runs the riskiest point by default: the leader killed halfway through the swap's
renames. ``tests/faults/test_compaction_crashes.py`` runs every point (``make test-faults``).
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from pafka.admin import topics as admin
from tests.integration.compaction import (
    COMPACTED,
    COMPACTION_BROKER_ENV,
    Writer,
    assert_increasing,
    consume_confluent,
    latest_of,
    leftovers,
    partition_dir,
    replica_records,
    topic_name,
    updates,
    wait_until,
)
from tests.integration.conftest import ClusterHandle, own_cluster

VICTIM = 2
SEGMENT_BYTES = str(16 * 1024)


@pytest.fixture(scope="module")
def crashing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "compaction-crash", brokers=3, controllers=1,
        broker_env=COMPACTION_BROKER_ENV,
    ) as handle:  # fmt: skip
        wait_until(lambda: len(handle.broker_ids()) == 3, "every broker registered", 30)
        yield handle


def in_isr(cluster: ClusterHandle, topic: str, broker: int) -> bool:
    return broker in cluster.partition_state(topic, 0).isr


def crash_in_a_clean(cluster: ClusterHandle, point: str, *, leader: bool) -> None:
    """The whole scenario, the victim (broker 2) leading the partition or following."""
    victim = f"broker-{VICTIM}"
    topic = topic_name(f"crash-{point}")
    replicas = (VICTIM, 1, 3) if leader else (1, VICTIM, 3)
    # Written while the policy is delete, so that no replica cleans before the victim has its
    # hook; made compact afterwards, when every replica cleans it.
    admin.create_topic(cluster.zk, topic, -1, -1, {"segment.bytes": SEGMENT_BYTES}, {0: replicas})
    cluster.wait_for_leaders(topic, 1)
    writer = Writer(cluster)
    writer.send(topic, updates(500, 40), partition=0)
    before = writer.of(topic)

    cluster.local.restart(victim, extra_env={"PAFKA_BROKER_LOG_CLEANER_TEST_PAUSE_AT": point})
    wait_until(lambda: in_isr(cluster, topic, VICTIM), f"{victim} back in the ISR")
    if leader:
        admin.request_preferred_election(cluster.zk, [(topic, 0)])
        wait_until(lambda: cluster.partition_state(topic, 0).leader == VICTIM, f"{victim} leads")
    admin.alter_topic_config(cluster.zk, topic, {**COMPACTED, "segment.bytes": SEGMENT_BYTES})

    data_dir = Path(cluster.local.broker(VICTIM).data_dir)
    marker = data_dir / f"cleaner-paused-at-{point}"
    wait_until(marker.exists, f"{victim}'s cleaner stops at {point}", 60)
    assert marker.read_text() == partition_dir(cluster, VICTIM, topic, 0).name
    cluster.local.kill(victim, signal.SIGKILL)
    marker.unlink()
    unfinished = leftovers(partition_dir(cluster, VICTIM, topic, 0))
    assert unfinished, f"the kill at {point} left no clean unfinished"

    # New latest values for half the keys while the victim is down.
    writer.send(topic, updates(250, 1, tag="while-down"), partition=0)
    # Back without the hook, its cleaner off for now: what is on disk is recovery's alone.
    cluster.local.restart(victim, extra_env={"PAFKA_BROKER_LOG_CLEANER_ENABLE": "false"})
    assert leftovers(partition_dir(cluster, VICTIM, topic, 0)) == []
    recovered = replica_records(cluster, VICTIM, topic, 0)
    assert_increasing(recovered, f"{victim}'s recovered log")
    held = latest_of(recovered)
    for key, (offset, value) in before.items():
        assert key in held, f"{victim} lost {key!r}"
        assert held[key][0] > offset or held[key] == (offset, value), f"{victim} lost {key!r}"

    wait_until(lambda: in_isr(cluster, topic, VICTIM), f"{victim} rejoins the ISR")
    expected = writer.of(topic)
    for broker in (1, 2, 3):
        wait_until(
            lambda b=broker: latest_of(replica_records(cluster, b, topic, 0)) == expected,  # type: ignore[misc]
            f"broker {broker} holds every latest value",
        )
    end = max(offset for offset, _ in expected.values()) + 1
    assert latest_of(consume_confluent(cluster, topic, 0, end)) == expected
    # Its cleaner back on, the victim cleans as the others did.
    cluster.local.restart(victim)
    wait_until(
        lambda: len(replica_records(cluster, VICTIM, topic, 0)) < end // 4,
        f"{victim} cleans again",
    )
    admin.delete_topic(cluster.zk, topic)  # nothing of it left for the next victim to clean


def test_leader_killed_halfway_through_a_swap_recovers_whole(crashing: ClusterHandle) -> None:
    crash_in_a_clean(crashing, "mid-swap", leader=True)
