"""The pure parts of the controller's batched ZooKeeper work and control payloads."""

from __future__ import annotations

import itertools
import json
import uuid

from hypothesis import given
from hypothesis import strategies as st

from pafka.control import messages as control
from pafka.zk.znodes import IsrChangeNotificationZNode, TopicPartitionsPayload
from services.controller.fencing import chunk_units
from services.controller.isr_notifications import notified_partitions


@given(st.lists(st.integers(1, 7), max_size=80), st.integers(1, 12))
def test_chunks_cover_every_unit_in_order_within_the_op_budget(
    sizes: list[int], max_ops: int
) -> None:
    chunks = chunk_units(sizes, max_ops)
    assert [i for c in chunks for i in c] == list(range(len(sizes)))
    for chunk in chunks:
        ops = sum(sizes[i] for i in chunk)
        assert ops <= max_ops or len(chunk) == 1
    # As few as fit: no chunk could have taken the next one's first unit.
    for first, second in itertools.pairwise(chunks):
        assert sum(sizes[i] for i in first) + sizes[second[0]] > max_ops


def test_ten_thousand_single_op_units_make_ten_multis() -> None:
    assert [len(c) for c in chunk_units([1] * 10_000)] == [1000] * 10


def test_notified_partitions_skip_gone_and_unknown_and_drop_malformed_ones() -> None:
    path = IsrChangeNotificationZNode.path
    good = TopicPartitionsPayload((("a", 0), ("a", 1), ("zz", 0))).encode()
    again = TopicPartitionsPayload((("a", 1), ("b", 2))).encode()
    reads: list[tuple[str, bytes | None]] = [
        (path("isr_change_0000000001"), good),
        (path("isr_change_0000000002"), None),
        (path("isr_change_0000000003"), b"not json"),
        (path("isr_change_0000000004"), b'{"version": 1}'),
        (path("isr_change_0000000005"), again),
    ]
    changed, handled = notified_partitions(reads, {("a", 0), ("a", 1), ("b", 2)})
    assert changed == [("a", 0), ("a", 1), ("b", 2)]
    assert handled == [p for p, data in reads if data is not None]


partitions = st.builds(
    control.PartitionInfo,
    topic=st.sampled_from(["a", "b", "c"]),
    topic_id=st.sampled_from([uuid.UUID(int=1), uuid.UUID(int=2)]),
    partition=st.integers(0, 10_000),
    leader=st.integers(-1, 5),
    leader_epoch=st.integers(0, 2**31 - 1),
    isr=st.lists(st.integers(0, 5), max_size=3).map(tuple),
    replicas=st.lists(st.integers(0, 5), max_size=3).map(tuple),
    zk_version=st.integers(-1, 1000),
    controller_epoch=st.integers(0, 1000),
)
brokers = st.builds(
    control.LiveBroker,
    id=st.integers(0, 5),
    host=st.text(max_size=5),
    port=st.integers(1, 65535),
    rack=st.none() | st.text(max_size=3),
)


def wire(message: object) -> dict:
    return json.loads(json.dumps(control.encode(message)))  # type: ignore[arg-type]


@given(
    st.lists(partitions, max_size=5).map(tuple),
    st.lists(brokers, max_size=3).map(tuple),
    st.lists(st.sampled_from(["a", "b"]), max_size=2).map(tuple),
    st.booleans(),
)
def test_control_requests_survive_json(
    parts: tuple[control.PartitionInfo, ...],
    live: tuple[control.LiveBroker, ...],
    deleted: tuple[str, ...],
    full: bool,
) -> None:
    lai = control.LeaderAndIsr(1, 2, parts, live)
    assert control.decode_leader_and_isr(wire(lai)) == lai
    um = control.UpdateMetadata(1, 2, live, parts, deleted, full, {"a": {"k": "v"}})
    assert control.decode_update_metadata(wire(um)) == um
    stop = control.StopReplica(1, 2, tuple((p.topic, p.partition) for p in parts), full)
    assert control.decode_stop_replica(wire(stop)) == stop
