"""The transaction coordinator on a cluster of its own: real transactional producers
(librdkafka, kafka-python), its answers over the wire, zombie fencing, timeouts, failover.

What is stored is read back from ZooKeeper (``/transactions/{id}``); what partitions hold is
read by offsets: each completed transaction leaves one control batch (offset) per partition.
"""

from __future__ import annotations

import signal
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import InitProducerIdRequest, InitProducerIdResponse
from kafka.protocol.producer.transaction import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    EndTxnRequest,
    EndTxnResponse,
)

from pafka.admin import topics as admin
from pafka.transactions.metadata import TxnMetadata
from pafka.transactions.state import TxnState
from pafka.zk.znodes import TransactionCoordinatorZNode, TransactionStateZNode, TransactionZNodes
from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.wire import request_once

NOT_COORDINATOR = 16
INVALID_REQUEST = 42
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
INVALID_PRODUCER_ID_MAPPING = 49
INVALID_TRANSACTION_TIMEOUT = 50
CONCURRENT_TRANSACTIONS = 51
OPERATION_NOT_ATTEMPTED = 55
PRODUCER_FENCED = 90
UNKNOWN_TOPIC_OR_PARTITION = 3

BROKER_ENV = {
    "PAFKA_BROKER_GROUP_INITIAL_REBALANCE_DELAY_MS": "300",
    "PAFKA_BROKER_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS": "300",
    # Long enough for every other test's id to stay in use; short enough to watch one expire.
    "PAFKA_BROKER_TRANSACTIONAL_ID_EXPIRATION_MS": "8000",
    "PAFKA_BROKER_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS": "500",
}


@pytest.fixture(scope="module")
def txn_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with own_cluster(
        tmp_path_factory, "txn", brokers=3, controllers=1, broker_env=BROKER_ENV
    ) as handle:
        yield handle


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _state(cluster: ClusterHandle, tid: str) -> TxnMetadata:
    data, _ = cluster.zk.get(TransactionZNodes.state_path(tid))
    meta = TransactionStateZNode.decode(tid, data)
    assert meta is not None
    return meta


def _holder(cluster: ClusterHandle, tid: str) -> int:
    data, _ = cluster.zk.get(TransactionZNodes.coordinator_path(tid))
    return TransactionCoordinatorZNode.decode(tid, data).broker_id


def _wait_state(
    cluster: ClusterHandle, tid: str, states: set[TxnState], timeout_s: float
) -> TxnMetadata:
    deadline = time.monotonic() + timeout_s
    while True:
        meta = _state(cluster, tid)
        if meta.state in states:
            return meta
        if time.monotonic() > deadline:
            raise AssertionError(f"{tid} stayed {meta.state.value}, wanted {states}")
        time.sleep(0.1)


def _producer(cluster: ClusterHandle, tid: str, **extra: Any) -> Producer:
    return Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid, **extra})


def _initialised(cluster: ClusterHandle, prefix: str, **extra: Any) -> tuple[str, str, Producer]:
    """A new topic (1 partition, RF 3) and a transactional producer initialised on a new id."""
    topic, tid = _name(prefix), _name("tid")
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = _producer(cluster, tid, **extra)
    producer.init_transactions(30)
    return topic, tid, producer


def _log_end(cluster: ClusterHandle, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": _name("probe")})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1])
    finally:
        consumer.close()


def _read_committed(cluster: ClusterHandle, topic: str) -> list[bytes]:
    """Every record a read_committed consumer gets from partition 0, read to the log end."""
    end = _log_end(cluster, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": _name("rc"),
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while consumer.position([TopicPartition(topic, 0)])[0].offset < end:
            assert time.monotonic() < deadline, f"read_committed of {topic} stopped before {end}"
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(bytes(message.value() or b""))
    finally:
        consumer.close()
    return values


def _coordinator(cluster: ClusterHandle, tid: str, version: int = 1) -> int:
    any_broker = cluster.broker_address(cluster.broker_ids()[0])
    R = FindCoordinatorRequest[version]
    if version >= 4:
        resp = request_once(
            any_broker, R(key_type=1, coordinator_keys=[tid]), FindCoordinatorResponse, version
        )
        (found,) = resp.coordinators
        assert found.error_code == 0 and found.key == tid
        return int(found.node_id)
    resp = request_once(any_broker, R(key=tid, key_type=1), FindCoordinatorResponse, version)
    assert resp.error_code == 0, resp
    return int(resp.node_id)


def _init(
    cluster: ClusterHandle,
    broker: int,
    tid: str,
    version: int = 3,
    timeout_ms: int = 60_000,
    **ids: int,
) -> Any:
    R = InitProducerIdRequest[version]
    fields: dict[str, Any] = {"transactional_id": tid, "transaction_timeout_ms": timeout_ms}
    if version >= 3:
        fields.update(
            producer_id=ids.get("producer_id", -1), producer_epoch=ids.get("producer_epoch", -1)
        )
    return request_once(
        cluster.broker_address(broker), R(**fields), InitProducerIdResponse, version
    )


def _add_partitions(
    cluster: ClusterHandle,
    broker: int,
    tid: str,
    pid: int,
    epoch: int,
    topic: str,
    version: int = 1,
) -> dict[int, int]:
    R = AddPartitionsToTxnRequest[version]
    req = R(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[R.AddPartitionsToTxnTopic(name=topic, partitions=[0])],
    )
    resp = request_once(cluster.broker_address(broker), req, AddPartitionsToTxnResponse, version)
    return {
        p.partition_index: p.partition_error_code
        for t in resp.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }


def _end(
    cluster: ClusterHandle,
    broker: int,
    tid: str,
    pid: int,
    epoch: int,
    commit: bool,
    version: int = 1,
) -> int:
    R = EndTxnRequest[version]
    req = R(transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    return int(
        request_once(cluster.broker_address(broker), req, EndTxnResponse, version).error_code
    )


def test_librdkafka_commits_and_aborts(txn_cluster: ClusterHandle) -> None:
    topic, tid, producer = _initialised(txn_cluster, "txn-rd")
    meta = _state(txn_cluster, tid)
    assert (meta.state, meta.producer_epoch) == (TxnState.EMPTY, 0)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(topic, value=b"c%d" % i, partition=0)
    producer.commit_transaction(30)
    # EndTxn is answered once PrepareCommit is stored; the markers complete it.
    done = _wait_state(txn_cluster, tid, {TxnState.COMPLETE_COMMIT}, 15)
    assert not done.partitions
    producer.begin_transaction()
    producer.produce(topic, value=b"a0", partition=0)
    producer.flush(10)
    ongoing = _state(txn_cluster, tid)
    assert ongoing.state is TxnState.ONGOING and ongoing.partitions == {(topic, 0)}
    producer.abort_transaction(30)
    _wait_state(txn_cluster, tid, {TxnState.COMPLETE_ABORT}, 15)
    # Three records and a COMMIT marker, one record and an ABORT marker.
    assert _log_end(txn_cluster, topic) == 6
    assert _read_committed(txn_cluster, topic) == [b"c0", b"c1", b"c2"]
    url = txn_cluster.local.broker(_holder(txn_cluster, tid)).http_url + "/metrics"
    with urllib.request.urlopen(url, timeout=5) as response:
        scraped = response.read().decode()
    line = next(
        x
        for x in scraped.splitlines()
        if x.startswith('pafka_transaction_coordinator_transactional_ids{state="CompleteAbort"}')
    )
    assert float(line.split()[-1]) >= 1
    producer.flush(5)


def test_an_unused_transactional_id_expires(txn_cluster: ClusterHandle) -> None:
    tid = _name("tid")
    coordinator = _coordinator(txn_cluster, tid)
    first = _init(txn_cluster, coordinator, tid)
    assert first.error_code == 0
    path = TransactionZNodes.state_path(tid)
    deadline = time.monotonic() + 30
    while txn_cluster.zk.exists(path) is not None:
        assert time.monotonic() < deadline, f"{tid} never expired"
        time.sleep(0.2)
    # Forgotten: the id starts again under a new producer id.
    again = _init(txn_cluster, _coordinator(txn_cluster, tid), tid)
    assert again.error_code == 0 and again.producer_id != first.producer_id
    assert again.producer_epoch == 0


def test_kafka_python_commits(txn_cluster: ClusterHandle) -> None:
    from kafka import KafkaProducer

    topic, tid = _name("txn-kp"), _name("tid")
    txn_cluster.create_topic(topic, partitions=1, replication_factor=3)
    producer = KafkaProducer(bootstrap_servers=txn_cluster.bootstrap, transactional_id=tid)
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"kp", partition=0)
        producer.commit_transaction()
    finally:
        producer.close(timeout=10)
    _wait_state(txn_cluster, tid, {TxnState.COMPLETE_COMMIT}, 15)
    assert _log_end(txn_cluster, topic) == 2


def test_answers_over_the_wire(txn_cluster: ClusterHandle) -> None:
    topic, tid = _name("txn-wire"), _name("tid")
    txn_cluster.create_topic(topic, partitions=1, replication_factor=3)
    coordinator = _coordinator(txn_cluster, tid, version=1)
    assert _coordinator(txn_cluster, tid, version=4) == coordinator
    other = next(b for b in txn_cluster.broker_ids() if b != coordinator)
    assert _init(txn_cluster, other, tid).error_code == NOT_COORDINATOR
    assert _init(txn_cluster, coordinator, "").error_code == INVALID_REQUEST
    assert (
        _init(txn_cluster, coordinator, tid, timeout_ms=900_001).error_code
        == INVALID_TRANSACTION_TIMEOUT
    )
    assert _end(txn_cluster, coordinator, tid, 5, 0, True) == INVALID_PRODUCER_ID_MAPPING
    init = _init(txn_cluster, coordinator, tid)
    assert init.error_code == 0 and init.producer_epoch == 0
    pid = init.producer_id
    assert _state(txn_cluster, tid).producer_id == pid
    assert _end(txn_cluster, coordinator, tid, pid, 0, True) == INVALID_TXN_STATE
    assert _add_partitions(txn_cluster, coordinator, tid, pid + 1, 0, topic) == {
        0: INVALID_PRODUCER_ID_MAPPING
    }
    R = AddPartitionsToTxnRequest[1]
    mixed = R(
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=pid,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=[
            R.AddPartitionsToTxnTopic(name=topic, partitions=[0]),
            R.AddPartitionsToTxnTopic(name=f"missing-{topic}", partitions=[0]),
        ],
    )
    resp = request_once(
        txn_cluster.broker_address(coordinator), mixed, AddPartitionsToTxnResponse, 1
    )
    codes = {
        t.name: t.results_by_partition[0].partition_error_code
        for t in resp.results_by_topic_v3_and_below
    }
    assert codes == {topic: OPERATION_NOT_ATTEMPTED, f"missing-{topic}": UNKNOWN_TOPIC_OR_PARTITION}
    assert _add_partitions(txn_cluster, coordinator, tid, pid, 0, topic, version=3) == {0: 0}
    Offsets = AddOffsetsToTxnRequest[2]
    added = request_once(
        txn_cluster.broker_address(coordinator),
        Offsets(transactional_id=tid, producer_id=pid, producer_epoch=0, group_id="g-wire"),
        AddOffsetsToTxnResponse,
        2,
    )
    assert added.error_code == 0
    ongoing = _state(txn_cluster, tid)
    assert ongoing.state is TxnState.ONGOING and ongoing.groups == {"g-wire"}
    assert (topic, 0) in ongoing.partitions and len(ongoing.partitions) == 2
    # KIP-360: a producer id that is not the id's is fenced; KIP-588: named so from v4.
    stranger = {"producer_id": pid + 7, "producer_epoch": 0}
    assert _init(txn_cluster, coordinator, tid, version=4, **stranger).error_code == PRODUCER_FENCED
    assert (
        _init(txn_cluster, coordinator, tid, version=3, **stranger).error_code
        == INVALID_PRODUCER_EPOCH
    )
    assert _end(txn_cluster, coordinator, tid, pid, 0, False, version=3) == 0
    assert _state(txn_cluster, tid).state in (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)


def test_a_new_producer_fences_the_zombie(txn_cluster: ClusterHandle) -> None:
    topic, tid, zombie = _initialised(txn_cluster, "txn-zombie")
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(10)
    old = _state(txn_cluster, tid)
    assert (old.state, old.producer_epoch) == (TxnState.ONGOING, 0)
    newer = _producer(txn_cluster, tid)
    newer.init_transactions(30)  # aborts the zombie's transaction first (epoch 1), then epoch 2
    meta = _state(txn_cluster, tid)
    assert (meta.producer_id, meta.producer_epoch, meta.state) == (
        old.producer_id,
        2,
        TxnState.EMPTY,
    )
    coordinator = _coordinator(txn_cluster, tid)
    pid = old.producer_id
    # The zombie's requests get the error its API version knows (KIP-588).
    assert _add_partitions(txn_cluster, coordinator, tid, pid, 0, topic, version=1) == {
        0: INVALID_PRODUCER_EPOCH
    }
    assert _add_partitions(txn_cluster, coordinator, tid, pid, 0, topic, version=2) == {
        0: PRODUCER_FENCED
    }
    assert _end(txn_cluster, coordinator, tid, pid, 0, True, version=1) == INVALID_PRODUCER_EPOCH
    assert _end(txn_cluster, coordinator, tid, pid, 0, True, version=2) == PRODUCER_FENCED
    assert (
        _init(
            txn_cluster, coordinator, tid, version=3, producer_id=pid, producer_epoch=0
        ).error_code
        == INVALID_PRODUCER_EPOCH
    )
    # And through the client: its produce and its commit fail fatally.
    zombie.produce(topic, value=b"zombie-2", partition=0)
    with pytest.raises(KafkaException) as produced:
        zombie.flush(10)  # the leader refuses the old epoch: librdkafka turns fatal
    assert produced.value.args[0].fatal()
    with pytest.raises(KafkaException) as committed:
        zombie.commit_transaction(30)
    assert committed.value.args[0].fatal()
    # The new producer works; the zombie's record was aborted by the marker of epoch 1.
    newer.begin_transaction()
    newer.produce(topic, value=b"new", partition=0)
    newer.commit_transaction(30)
    _wait_state(txn_cluster, tid, {TxnState.COMPLETE_COMMIT}, 15)
    # zombie record, ABORT marker, new record, COMMIT marker
    assert _log_end(txn_cluster, topic) == 4
    assert _read_committed(txn_cluster, topic) == [b"new"]


def test_a_hanging_transaction_times_out(txn_cluster: ClusterHandle) -> None:
    topic, tid, producer = _initialised(txn_cluster, "txn-hang", **{"transaction.timeout.ms": 2000})
    producer.begin_transaction()
    producer.produce(topic, value=b"hangs", partition=0)
    producer.flush(10)
    assert _state(txn_cluster, tid).state is TxnState.ONGOING
    meta = _wait_state(txn_cluster, tid, {TxnState.COMPLETE_ABORT}, 15)
    assert meta.producer_epoch == 1  # bumped: the producer that let it hang is fenced
    assert _log_end(txn_cluster, topic) == 2  # the record and the ABORT marker
    assert _read_committed(txn_cluster, topic) == []
    with pytest.raises(KafkaException):
        producer.commit_transaction(30)


def test_the_coordinator_moves_when_its_broker_dies(txn_cluster: ClusterHandle) -> None:
    topic, tid, producer = _initialised(txn_cluster, "txn-failover")
    coordinator = _holder(txn_cluster, tid)
    assert _coordinator(txn_cluster, tid) == coordinator
    producer.begin_transaction()
    producer.produce(topic, value=b"before", partition=0)
    producer.flush(10)
    txn_cluster.local.kill(f"broker-{coordinator}", signal.SIGKILL)
    try:
        try:
            producer.commit_transaction(60)
            outcome = TxnState.COMPLETE_COMMIT
        except KafkaException as exc:
            assert exc.args[0].txn_requires_abort(), exc
            producer.abort_transaction(60)
            outcome = TxnState.COMPLETE_ABORT
        meta = _wait_state(txn_cluster, tid, {outcome}, 30)
        assert meta.producer_epoch == 0
        committed = outcome is TxnState.COMPLETE_COMMIT
        assert _read_committed(txn_cluster, topic) == ([b"before"] if committed else [])
        assert _holder(txn_cluster, tid) != coordinator
        assert _coordinator(txn_cluster, tid) != coordinator
    finally:
        txn_cluster.local.restart(f"broker-{coordinator}")


def test_a_new_coordinator_resumes_the_markers_of_a_prepared_commit(
    txn_cluster: ClusterHandle,
) -> None:
    """The commit is stored (PrepareCommit) but its partition's only replica is down, so no
    marker lands; the coordinator dies too. Another broker adopts the id without any client
    asking, and once the partition is back its marker is written: CompleteCommit."""
    partition_broker = txn_cluster.broker_ids()[0]
    topic = _name("txn-resume")
    admin.create_topic(txn_cluster.zk, topic, 1, 1, {}, assignment={0: (partition_broker,)})
    txn_cluster.wait_for_leaders(topic, 1)
    tid = next(
        t
        for t in (_name("tid") for _ in range(100))
        if _coordinator(txn_cluster, t) != partition_broker
    )
    producer = _producer(txn_cluster, tid)
    producer.init_transactions(30)
    coordinator = _holder(txn_cluster, tid)
    producer.begin_transaction()
    producer.produce(topic, value=b"held", partition=0)
    producer.flush(10)
    txn_cluster.local.kill(f"broker-{partition_broker}", signal.SIGKILL)
    try:
        producer.commit_transaction(30)  # answered once PrepareCommit is stored
        assert _state(txn_cluster, tid).state is TxnState.PREPARE_COMMIT
        txn_cluster.local.kill(f"broker-{coordinator}", signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _holder(txn_cluster, tid) == coordinator:
            assert time.monotonic() < deadline, "no broker adopted the prepared transaction"
            time.sleep(0.2)
        assert _state(txn_cluster, tid).state is TxnState.PREPARE_COMMIT
        txn_cluster.local.restart(f"broker-{partition_broker}")
        _wait_state(txn_cluster, tid, {TxnState.COMPLETE_COMMIT}, 60)
        # Read now: once unused for the module's short expiration the id is forgotten.
        adopter = _holder(txn_cluster, tid)
    finally:
        for broker in (partition_broker, coordinator):
            if not txn_cluster.local.broker(broker).alive():
                txn_cluster.local.restart(f"broker-{broker}")
    assert adopter not in (coordinator, partition_broker)
    assert _read_committed(txn_cluster, topic) == [b"held"]
