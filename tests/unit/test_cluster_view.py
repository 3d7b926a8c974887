"""The controller's cluster view: snapshot to kafka_exporter's series (pure), the context it
starts from, and the per-broker offset lookups that lose only a failing broker's partitions
(against small servers speaking the Kafka protocol through pafka's own codec)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pafka.client.cluster import ClusterClient
from pafka.protocol.frames import SIZE
from pafka.protocol.messages import decode_request, encode_response, response_class
from pafka.protocol.versions import ApiKey
from pafka.zk.znodes import BrokerInfo, PartitionState
from services.controller.cluster_view import (
    ClusterSnapshot,
    ClusterViewCollector,
    PartitionView,
    lag,
    view_of,
)
from services.controller.cluster_view_sources import GroupOffsets, log_offsets
from services.controller.context import ControllerContext, PartitionEntry

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]

# kafka_exporter's names and the labels of each (besides none for kafka_brokers).
KAFKA_EXPORTER_LABELS = {
    "kafka_brokers": set(),
    "kafka_topic_partitions": {"topic"},
    "kafka_topic_partition_current_offset": {"topic", "partition"},
    "kafka_topic_partition_oldest_offset": {"topic", "partition"},
    "kafka_topic_partition_in_sync_replica": {"topic", "partition"},
    "kafka_topic_partition_replicas": {"topic", "partition"},
    "kafka_topic_partition_leader": {"topic", "partition"},
    "kafka_topic_partition_leader_is_preferred": {"topic", "partition"},
    "kafka_topic_partition_under_replicated_partition": {"topic", "partition"},
    "kafka_consumergroup_current_offset": {"consumergroup", "topic", "partition"},
    "kafka_consumergroup_current_offset_sum": {"consumergroup", "topic"},
    "kafka_consumergroup_lag": {"consumergroup", "topic", "partition"},
    "kafka_consumergroup_lag_sum": {"consumergroup", "topic"},
    "kafka_consumergroup_members": {"consumergroup"},
}


def scrape(snapshot: ClusterSnapshot | None) -> Series:
    """The collector's output as a Prometheus scrape would read it (text format, parsed)."""
    collector = ClusterViewCollector()
    collector.snapshot = snapshot
    registry = CollectorRegistry()
    registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(series: Series, name: str, **labels: str) -> float | None:
    return series.get((name, tuple(sorted(labels.items()))))


SNAPSHOT = ClusterSnapshot(
    brokers=3,
    partitions=(
        PartitionView("orders", 0, 1, (1, 2, 3), (1, 2, 3), 0, 120),
        PartitionView("orders", 1, 3, (2, 3, 1), (3, 1), 40, 95),
        # Its leader did not answer this round: no offsets.
        PartitionView("orders", 2, 3, (3, 1, 2), (3, 1, 2)),
        PartitionView("audit", 0, -1, (2,), ()),
    ),
    groups=(
        GroupOffsets("billing", 2, {("orders", 0): 100, ("orders", 1): 99}),
        GroupOffsets("search", 1, {("orders", 0): 120, ("orders", 2): 7}),
        GroupOffsets("idle", 0, {}),
    ),
)


def test_every_kafka_exporter_series_with_its_labels() -> None:
    series = scrape(SNAPSHOT)
    found: dict[str, set[str]] = {}
    for name, labels in series:
        found.setdefault(name, set()).update(k for k, _ in labels)
    assert found == KAFKA_EXPORTER_LABELS


def test_partition_series() -> None:
    s = scrape(SNAPSHOT)
    assert value(s, "kafka_brokers") == 3
    assert value(s, "kafka_topic_partitions", topic="orders") == 3
    assert value(s, "kafka_topic_partitions", topic="audit") == 1
    o1 = {"topic": "orders", "partition": "1"}
    assert value(s, "kafka_topic_partition_current_offset", **o1) == 95
    assert value(s, "kafka_topic_partition_oldest_offset", **o1) == 40
    assert value(s, "kafka_topic_partition_in_sync_replica", **o1) == 2
    assert value(s, "kafka_topic_partition_replicas", **o1) == 3
    assert value(s, "kafka_topic_partition_leader", **o1) == 3
    assert value(s, "kafka_topic_partition_leader_is_preferred", **o1) == 0
    assert value(s, "kafka_topic_partition_under_replicated_partition", **o1) == 1
    o0 = {"topic": "orders", "partition": "0"}
    assert value(s, "kafka_topic_partition_leader_is_preferred", **o0) == 1
    assert value(s, "kafka_topic_partition_under_replicated_partition", **o0) == 0
    offline = {"topic": "audit", "partition": "0"}
    assert value(s, "kafka_topic_partition_leader", **offline) == -1
    assert value(s, "kafka_topic_partition_leader_is_preferred", **offline) == 0
    assert value(s, "kafka_topic_partition_under_replicated_partition", **offline) == 1


def test_a_partition_without_offsets_keeps_its_other_series() -> None:
    s = scrape(SNAPSHOT)
    o2 = {"topic": "orders", "partition": "2"}
    assert value(s, "kafka_topic_partition_current_offset", **o2) is None
    assert value(s, "kafka_topic_partition_oldest_offset", **o2) is None
    assert value(s, "kafka_topic_partition_in_sync_replica", **o2) == 3
    assert value(s, "kafka_topic_partition_leader", **o2) == 3


def test_group_series_lag_is_the_gap_and_never_negative() -> None:
    s = scrape(SNAPSHOT)
    b = {"consumergroup": "billing", "topic": "orders"}
    assert value(s, "kafka_consumergroup_current_offset", **b, partition="0") == 100
    assert value(s, "kafka_consumergroup_lag", **b, partition="0") == 20
    # Committed 99 past a log end of 95 (read a moment apart): lag 0, not -4.
    assert value(s, "kafka_consumergroup_lag", **b, partition="1") == 0
    assert value(s, "kafka_consumergroup_lag_sum", **b) == 20
    assert value(s, "kafka_consumergroup_current_offset_sum", **b) == 199
    assert value(s, "kafka_consumergroup_members", consumergroup="billing") == 2
    assert value(s, "kafka_consumergroup_members", consumergroup="idle") == 0


def test_lag_sum_is_left_out_when_a_partition_log_end_is_unknown() -> None:
    s = scrape(SNAPSHOT)
    g = {"consumergroup": "search", "topic": "orders"}
    assert value(s, "kafka_consumergroup_lag", **g, partition="0") == 0
    assert value(s, "kafka_consumergroup_lag", **g, partition="2") is None
    assert value(s, "kafka_consumergroup_current_offset", **g, partition="2") == 7
    assert value(s, "kafka_consumergroup_current_offset_sum", **g) == 127
    assert value(s, "kafka_consumergroup_lag_sum", **g) is None


def test_no_snapshot_no_series() -> None:
    assert scrape(None) == {}
    # Still declared, so registering it beside other metrics checks for name clashes.
    described = {m.name for m in ClusterViewCollector().describe()}
    assert described == KAFKA_EXPORTER_LABELS.keys()


@given(end=st.integers(0, 2**62), committed=st.integers(0, 2**62))
def test_lag_property(end: int, committed: int) -> None:
    assert lag(end, committed) >= 0
    assert lag(end, committed) == (end - committed if committed <= end else 0)


partition_keys = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5))


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    keys = sorted(draw(st.sets(partition_keys, min_size=1, max_size=10)))
    partitions = []
    for topic, partition in keys:
        replicas = tuple(draw(st.permutations([1, 2, 3])))[: draw(st.integers(1, 3))]
        isr = tuple(r for r in replicas if draw(st.booleans()))
        leader = isr[0] if isr else -1
        start = draw(st.integers(0, 1000))
        end = start + draw(st.integers(0, 1000))
        known = leader >= 0 and draw(st.booleans())
        partitions.append(
            PartitionView(
                topic, partition, leader, replicas, isr, start if known else None,
                end if known else None,
            )
        )  # fmt: skip
    groups = tuple(
        GroupOffsets(
            f"g{i}",
            draw(st.integers(0, 5)),
            draw(st.dictionaries(st.sampled_from(keys), st.integers(0, 2500))),
        )
        for i in range(draw(st.integers(0, 3)))
    )
    return ClusterSnapshot(draw(st.integers(0, 5)), tuple(partitions), groups)


@given(snapshots())
def test_sums_and_flags_agree_with_the_partition_series(snapshot: ClusterSnapshot) -> None:
    s = scrape(snapshot)
    ends = {
        (p.topic, p.partition): p.log_end_offset
        for p in snapshot.partitions
        if p.log_end_offset is not None
    }
    for view in snapshot.partitions:
        labels = {"topic": view.topic, "partition": str(view.partition)}
        under = value(s, "kafka_topic_partition_under_replicated_partition", **labels)
        assert under == (1 if len(view.isr) < len(view.replicas) else 0)
    for group in snapshot.groups:
        for topic in {t for t, _ in group.committed}:
            mine = {p: o for (t, p), o in group.committed.items() if t == topic}
            labels = {"consumergroup": group.name, "topic": topic}
            assert value(s, "kafka_consumergroup_current_offset_sum", **labels) == sum(
                mine.values()
            )
            lags = {
                p: value(s, "kafka_consumergroup_lag", **labels, partition=str(p)) for p in mine
            }
            for p, got in lags.items():
                end = ends.get((topic, p))
                assert got == (None if end is None else lag(end, mine[p]))
            expected_sum = None if None in lags.values() else sum(v or 0 for v in lags.values())
            assert value(s, "kafka_consumergroup_lag_sum", **labels) == expected_sum


def test_view_of_context_reports_a_dead_leader_as_none() -> None:
    context = ControllerContext(epoch=4)
    for broker_id in (1, 2):
        context.brokers[broker_id] = BrokerInfo(broker_id, "127.0.0.1", 9090 + broker_id, "")
    context.partitions[("t", 0)] = PartitionEntry((1, 2), PartitionState(1, 7, (1, 2), 4))
    context.partitions[("t", 1)] = PartitionEntry((3, 1), PartitionState(3, 2, (3,), 4))
    context.partitions[("t", 2)] = PartitionEntry((2, 1))  # no state written yet
    view = view_of(context)
    assert view.brokers == {1: ("127.0.0.1", 9091), 2: ("127.0.0.1", 9092)}
    assert view.partitions == (
        PartitionView("t", 0, 1, (1, 2), (1, 2)),
        PartitionView("t", 1, -1, (3, 1), (3,)),
        PartitionView("t", 2, -1, (2, 1), ()),
    )
    assert view.leader_epochs == {("t", 0): 7}


# -- offsets from brokers: one failing broker costs only its own partitions ----------------------

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]


@contextlib.asynccontextmanager
async def serving(handler: Handler) -> AsyncIterator[int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()


async def answer_list_offsets(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    offsets: dict[tuple[str, int], tuple[int, int]],
) -> None:
    """Answer ListOffsets as a leader of ``offsets`` (start, end) would; other partitions get
    NOT_LEADER_OR_FOLLOWER."""
    with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
        while True:
            (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
            request = decode_request(await reader.readexactly(size))
            cls = response_class(ApiKey.LIST_OFFSETS, request.header.api_version)
            topic_cls = cls.ListOffsetsTopicResponse
            part_cls = topic_cls.ListOffsetsPartitionResponse
            topics = []
            for t in request.body.topics:
                parts = []
                for p in t.partitions:
                    found = offsets.get((t.name, p.partition_index))
                    if found is None:
                        parts.append(part_cls(partition_index=p.partition_index, error_code=6))
                        continue
                    offset = found[0] if p.timestamp == -2 else found[1]
                    parts.append(
                        part_cls(
                            partition_index=p.partition_index,
                            error_code=0,
                            timestamp=-1,
                            offset=offset,
                            leader_epoch=p.current_leader_epoch,
                        )
                    )
                topics.append(topic_cls(name=t.name, partitions=parts))
            writer.write(encode_response(request.header, cls(throttle_time_ms=0, topics=topics)))
            await writer.drain()


async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        await reader.read()  # holds the connection open until the client gives up


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("failing", ["refused", "stalled"])
def test_a_failing_broker_loses_only_its_own_partitions(failing: str) -> None:
    healthy = {("a", 0): (0, 10), ("b", 3): (5, 8)}

    async def run() -> dict[tuple[str, int], tuple[int, int]]:
        async with (
            serving(lambda r, w: answer_list_offsets(r, w, healthy)) as good,
            serving(never_answer) as stalled,
        ):
            client = ClusterClient(client_id="test")
            bad = closed_port() if failing == "refused" else stalled
            client.brokers = {1: ("127.0.0.1", good), 2: ("127.0.0.1", bad)}
            led = {
                # ("a", 1) is not led by broker 1 after all: its error drops only it.
                1: {("a", 0): 3, ("b", 3): 1, ("a", 1): 2},
                2: {("c", 0): 1},
            }
            try:
                loop = asyncio.get_running_loop()
                began = loop.time()
                found = await log_offsets(client, led, timeout_s=1.0)
                assert loop.time() - began < 5
                return found
            finally:
                await client.close()

    assert asyncio.run(run()) == healthy
