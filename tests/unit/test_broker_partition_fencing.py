"""A leader on a real log fenced for lack of footing: acks=all refused at once, waiting writes
failed, acks=1 taken, and everything back once ZooKeeper or a follower is."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

import pytest

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import PartitionInfo
from pafka.errors import NotEnoughReplicasAfterAppendError, NotLeaderOrFollowerError
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log_manager import LogManager
from services.broker.leader_fencing import reason
from services.broker.partition import Partition

ME = 1
LAG_MS = 100


def batch() -> bytes:
    return build_batch([(None, b"v", [])], timestamp_ms=1000)


def leader(tmp_path: Path, isr: tuple[int, ...] = (1, 2, 3)) -> Partition:
    config = TopicConfig()
    log_ = LogManager(tmp_path, LogConfig()).get_or_create("t", 0, config.log_config())
    partition = Partition("t", 0, log_, config)
    info = PartitionInfo("t", uuid.uuid4(), 0, ME, 0, isr, (1, 2, 3), 0, 1)
    partition.apply(info, ME)
    return partition


def now_ms() -> int:
    return int(time.time() * 1000)


def footing(partition: Partition, zk_connected: bool, at_ms: int | None = None) -> bool:
    at = now_ms() if at_ms is None else at_ms
    return partition.update_footing(zk_connected, at, LAG_MS, reason(LAG_MS))


def test_fenced_only_without_zookeeper_once_the_followers_lag(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_as_leader(batch(), 1)  # nobody fetched it: the followers lag from now
    assert not footing(partition, zk_connected=True, at_ms=now_ms() + 10 * LAG_MS)
    assert not footing(partition, zk_connected=False)  # within the lag time
    assert footing(partition, zk_connected=False, at_ms=now_ms() + 10 * LAG_MS)
    assert partition.fenced_why is not None
    # Once per change: the same footing again changes nothing.
    assert not footing(partition, zk_connected=False, at_ms=now_ms() + 10 * LAG_MS)
    with pytest.raises(NotLeaderOrFollowerError, match=r"replica\.lag\.time\.max\.ms"):
        partition.append_as_leader(batch(), -1)
    partition.append_as_leader(batch(), 1)  # acks=1 is taken, as Kafka takes it
    partition.append_as_leader(batch(), 0)
    # ZooKeeper back: unfenced.
    assert footing(partition, zk_connected=True)
    assert partition.fenced_why is None
    partition.append_as_leader(batch(), -1)


def test_a_follower_catching_up_unfences(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_as_leader(batch(), 1)
    later = now_ms() + 10 * LAG_MS
    assert footing(partition, zk_connected=False, at_ms=later)
    partition.on_follower_fetch(2, partition.log.log_end_offset, later)
    assert footing(partition, zk_connected=False, at_ms=later)
    assert partition.fenced_why is None


def test_a_leader_alone_in_its_isr_is_never_fenced(tmp_path: Path) -> None:
    partition = leader(tmp_path, isr=(1,))
    partition.append_as_leader(batch(), 1)
    assert not footing(partition, zk_connected=False, at_ms=now_ms() + 10 * LAG_MS)
    partition.append_as_leader(batch(), -1)


def test_a_waiting_acks_all_write_fails_when_the_leader_is_fenced(tmp_path: Path) -> None:
    async def run() -> None:
        partition = leader(tmp_path)
        appended = partition.append_as_leader(batch(), -1)
        waiting = asyncio.create_task(partition.wait_replicated(appended.last_offset, 30_000))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        footing(partition, zk_connected=False, at_ms=now_ms() + 10 * LAG_MS)
        with pytest.raises(NotEnoughReplicasAfterAppendError):
            await asyncio.wait_for(waiting, 5)

    asyncio.run(run())


def test_a_follower_is_never_fenced(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_as_leader(batch(), 1)
    assert footing(partition, zk_connected=False, at_ms=now_ms() + 10 * LAG_MS)
    partition.apply(PartitionInfo("t", uuid.uuid4(), 0, 2, 1, (2, 3), (1, 2, 3), 0, 2), ME)
    assert partition.fenced_why is None
