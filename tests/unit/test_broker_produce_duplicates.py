"""A leader on a real log answers an idempotent producer's retries as Kafka 2.8 does: the exact
batch again gets its original offsets and nothing is appended; a batch that starts where a
written one did but holds other records is out of order, and nothing of it is appended."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from pafka.cluster.topic_config import TopicConfig
from pafka.control.messages import PartitionInfo
from pafka.errors import OutOfOrderSequenceError
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log_manager import LogManager
from services.broker.partition import Partition

ME = 1
PRODUCER_ID = 7


def idempotent_batch(base_sequence: int, count: int) -> bytes:
    return build_batch(
        [(None, f"v{base_sequence + i}".encode(), []) for i in range(count)],
        timestamp_ms=1000,
        producer_id=PRODUCER_ID,
        producer_epoch=0,
        base_sequence=base_sequence,
    )


def leader(tmp_path: Path) -> Partition:
    config = TopicConfig()
    log_ = LogManager(tmp_path, LogConfig()).get_or_create("t", 0, config.log_config())
    partition = Partition("t", 0, log_, config)
    partition.apply(PartitionInfo("t", uuid.uuid4(), 0, ME, 0, (ME,), (ME,), 0, 1), ME)
    return partition


def test_a_retried_batch_gets_its_original_offsets(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    first = partition.append_as_leader(idempotent_batch(0, 3), 1)
    second = partition.append_as_leader(idempotent_batch(3, 2), 1)
    again = partition.append_as_leader(idempotent_batch(0, 3), 1)
    assert (again.base_offset, again.last_offset) == (first.base_offset, first.last_offset)
    assert partition.log.log_end_offset == second.last_offset + 1 == 5


def test_same_first_sequence_with_other_records_is_out_of_order(tmp_path: Path) -> None:
    partition = leader(tmp_path)
    partition.append_as_leader(idempotent_batch(0, 3), 1)
    for count in (2, 5):
        with pytest.raises(OutOfOrderSequenceError):
            partition.append_as_leader(idempotent_batch(0, count), 1)
    assert partition.log.log_end_offset == 3
    assert partition.append_as_leader(idempotent_batch(3, 4), 1).base_offset == 3
