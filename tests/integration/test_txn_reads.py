"""read_committed on a real cluster: aborted records never returned, the last stable offset
held back by an open transaction, kafka-python and librdkafka consumers alike."""

from __future__ import annotations

import socket
import uuid

from pafka.records.encoding import build_batch
from tests.integration.txn_wire import (
    consume,
    consume_librdkafka,
    fetch_raw,
    init_producer_id,
    list_latest,
    produce,
    txn_batch,
    write_marker,
)


def test_read_committed_skips_aborted_and_stops_at_open_transactions(cluster) -> None:  # type: ignore[no-untyped-def]
    topic = f"txn-read-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=3)
    leader = cluster.leader_address(topic, 0)
    a, b, c = (init_producer_id(leader) for _ in range(3))
    with socket.create_connection(leader, timeout=15) as sock:
        assert produce(sock, topic, txn_batch([b"a1", b"a2"], a, 0, 0)).base_offset == 0
        assert produce(sock, topic, txn_batch([b"b1"], b, 0, 0)).base_offset == 2
        assert write_marker(leader, topic, a, 0, commit=False) == [0]  # offset 3
        assert write_marker(leader, topic, b, 0, commit=True) == [0]  # offset 4
        assert produce(sock, topic, build_batch([(None, b"p", ())])).base_offset == 5
        assert produce(sock, topic, txn_batch([b"c1"], c, 0, 0)).base_offset == 6
        assert produce(sock, topic, build_batch([(None, b"q", ())])).base_offset == 7

    everything = [(0, b"a1"), (1, b"a2"), (2, b"b1"), (5, b"p"), (6, b"c1"), (7, b"q")]
    assert consume(cluster.bootstrap, topic, committed=False) == everything
    assert consume(cluster.bootstrap, topic, committed=True) == [(2, b"b1"), (5, b"p")]
    assert list_latest(leader, topic, 1) == 6
    assert list_latest(leader, topic, 0) == 8
    for version, session in ((4, False), (11, False), (11, True), (12, True)):
        committed = fetch_raw(leader, topic, version, 1, session=session)
        assert committed.error_code == 0
        assert (committed.high_watermark, committed.last_stable_offset) == (8, 6)
        assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(a, 0)]
        uncommitted = fetch_raw(leader, topic, version, 0, session=session)
        assert uncommitted.aborted_transactions is None
        assert uncommitted.last_stable_offset == 6
        assert len(uncommitted.records) > len(committed.records)

    assert write_marker(leader, topic, c, 0, commit=True) == [0]  # offset 8
    assert consume(cluster.bootstrap, topic, committed=True) == [
        (2, b"b1"),
        (5, b"p"),
        (6, b"c1"),
        (7, b"q"),
    ]
    assert consume_librdkafka(cluster.bootstrap, topic, 4) == [
        (2, b"b1"),
        (5, b"p"),
        (6, b"c1"),
        (7, b"q"),
    ]
