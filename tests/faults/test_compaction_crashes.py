"""kill -9 of a broker at every point of a clean the cleaner's test hook offers, the broker
leading the partition or following (the default suite runs the leader halfway through a swap:
tests/integration/test_compaction_crash.py); and a cleaned log truncated after an unclean
leader election."""

from __future__ import annotations

import signal

import pytest

from pafka.admin import topics as admin
from tests.integration.compaction import (
    COMPACTED,
    ROLL_MS,
    Writer,
    assert_increasing,
    cleaned_to,
    latest_of,
    replica_records,
    roll_with,
    topic_name,
    updates,
    wait_until,
)
from tests.integration.conftest import ClusterHandle
from tests.integration.test_compaction_crash import (
    SEGMENT_BYTES,
    crash_in_a_clean,
    crashing,
    in_isr,
)

__all__ = ["crashing"]  # the module's cluster fixture

pytestmark = pytest.mark.faults


@pytest.mark.parametrize(
    ("point", "leader"),
    [
        ("before-manifest", False),
        ("before-manifest", True),
        ("after-manifest", False),
        ("after-manifest", True),
        ("mid-swap", False),
        ("after-swap", False),
        ("after-swap", True),
    ],
)
def test_broker_killed_in_a_clean_recovers_whole(
    crashing: ClusterHandle, point: str, leader: bool
) -> None:
    crash_in_a_clean(crashing, point, leader=leader)


def test_unclean_leader_makes_a_cleaned_log_truncate(crashing: ClusterHandle) -> None:
    """Broker 1 leads alone and cleans records broker 2 never got; it dies, broker 2 becomes
    leader uncleanly and is written to; broker 1 returns and truncates its cleaned log where
    broker 2's history departs: none of the lost records is left, and from there on it holds
    what broker 2 holds. (Below that point the cleaner may already have removed values the
    lost records superseded: an unclean election's loss, in Kafka too.)"""
    topic = topic_name("crash-unclean")
    config = {
        **COMPACTED,
        "segment.bytes": SEGMENT_BYTES,
        "max.compaction.lag.ms": str(ROLL_MS),
        "unclean.leader.election.enable": "true",
    }
    admin.create_topic(crashing.zk, topic, -1, -1, config, {0: (1, 2)})
    crashing.wait_for_leaders(topic, 1)
    writer = Writer(crashing)
    writer.send(topic, updates(300, 20), partition=0)
    diverged_at = max(offset for offset, _ in writer.of(topic).values()) + 1

    crashing.local.kill("broker-2", signal.SIGKILL)
    wait_until(lambda: not in_isr(crashing, topic, 2), "broker 2 leaves the ISR")
    writer.send(topic, updates(300, 20, tag="lost"), partition=0)
    roll_with(writer, topic, b"key-00000", b"lost too")
    cleaned_to(crashing, 1, topic, writer.of(topic), 300 + 1)

    crashing.local.kill("broker-1", signal.SIGKILL)
    crashing.local.restart("broker-2")
    wait_until(lambda: crashing.partition_state(topic, 0).leader == 2, "broker 2 leads")
    after = Writer(crashing)  # a new producer: broker 2 never saw the first one's later writes
    after.send(topic, updates(100, 2, tag="unclean"), partition=0)

    crashing.local.restart("broker-1")
    wait_until(lambda: in_isr(crashing, topic, 1), "broker 1 rejoins the ISR")
    leader = replica_records(crashing, 2, topic, 0)

    def caught_up() -> bool:
        follower = replica_records(crashing, 1, topic, 0)
        return [r for r in follower if r.offset >= diverged_at] == [
            r for r in leader if r.offset >= diverged_at
        ]

    wait_until(caught_up, "broker 1 holds broker 2's records past the divergence")
    records = replica_records(crashing, 1, topic, 0)
    assert_increasing(records, "broker 1's log")
    assert not any(r.value is not None and b"lost" in r.value for r in records)
    held = {r.offset: r for r in leader}
    assert all(held.get(r.offset, r) == r for r in records), "replicas differ at an offset"
    latest = latest_of(records)
    for key, value in after.of(topic).items():
        assert latest[key] == value
    admin.delete_topic(crashing.zk, topic)
