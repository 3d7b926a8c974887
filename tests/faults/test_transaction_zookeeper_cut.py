"""A transaction coordinator cut off from ZooKeeper answers COORDINATOR_NOT_AVAILABLE at once
(its ids' state lives there), FindCoordinator for a transactional id asked of it too; once the
cut heals, the producer's transactions complete."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse

from pafka.zk.znodes import TransactionCoordinatorZNode, TransactionZNodes
from tests.faults.test_zookeeper_cuts import (
    COORDINATOR_NOT_AVAILABLE,
    PROMPT_S,
    SESSION_TIMEOUT_S,
    CutCluster,
    cut_cluster,
)
from tests.integration.wire import request_once

pytestmark = pytest.mark.faults

__all__ = ["cut_cluster"]  # the fixture, shared with the other cut tests


def test_a_transaction_coordinator_cut_off_from_zookeeper_answers_coordinator_not_available(
    cut_cluster: CutCluster,
) -> None:
    handle = cut_cluster.handle
    topic, tid = "txcut-" + uuid.uuid4().hex[:6], "tid-" + uuid.uuid4().hex[:6]
    handle.create_topic(topic, partitions=1, replication_factor=3)
    producer = Producer({"bootstrap.servers": handle.bootstrap, "transactional.id": tid})
    producer.init_transactions(60)
    data, _ = handle.zk.get(TransactionZNodes.coordinator_path(tid))
    coordinator = TransactionCoordinatorZNode.decode(tid, data).broker_id
    address = handle.broker_address(coordinator)
    proxy = cut_cluster.proxies[f"broker-{coordinator}"]
    proxy.blackhole()
    try:
        time.sleep(SESSION_TIMEOUT_S * 2 / 3 + 1)  # the broker notices the cut
        sent = time.monotonic()
        init: Any = request_once(
            address,
            InitProducerIdRequest[2](transactional_id=tid, transaction_timeout_ms=60_000),
            InitProducerIdResponse,
            2,
        )
        assert init.error_code == COORDINATOR_NOT_AVAILABLE
        assert time.monotonic() - sent < PROMPT_S  # at once, not once ZooKeeper is back
        sent = time.monotonic()
        found: Any = request_once(
            address, FindCoordinatorRequest[3](key=tid, key_type=1), FindCoordinatorResponse, 3
        )
        assert found.error_code == COORDINATOR_NOT_AVAILABLE
        assert time.monotonic() - sent < PROMPT_S
    finally:
        proxy.heal()
    producer.begin_transaction()
    producer.produce(topic, value=b"after", partition=0)
    producer.commit_transaction(90)
