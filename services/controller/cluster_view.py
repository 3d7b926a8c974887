"""kafka_exporter's cluster view, exported once per cluster by the active controller.

Dashboards built for kafka_exporter (``kafka_topic_partition_*``, ``kafka_consumergroup_*``)
work unchanged against pafka, and since only the active controller exports these series, a
dashboard may sum over every controller it scrapes.

A scrape never waits on the cluster: :class:`ClusterViewCollector` renders the latest
:class:`ClusterSnapshot`, and :class:`ClusterView` replaces that snapshot every refresh
interval from three sources: partition state (leader, ISR, replicas) from the controller's
context, log start and end offsets from each partition's leader (ListOffsets, one request per
broker and offset kind), and committed offsets and members from ZooKeeper (``/consumers``). A
broker that cannot answer in time costs only its partitions' offset series for that round.
Turning a snapshot into metric families (:func:`render`) is pure.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from pafka.client.cluster import ClusterClient
from pafka.errors import PafkaError
from pafka.security.client_security import PLAINTEXT_CLIENT, ClientSecurity
from pafka.zk.client import ZkClient
from pafka.zk.znodes import now_ms
from services.controller.cluster_view_sources import GroupOffsets, log_offsets, read_groups
from services.controller.context import ControllerContext, TopicPartition
from services.controller.lag_history import LagHistory, total_lags

log = logging.getLogger(__name__)

# -- the snapshot (plain values) -----------------------------------------------------------------


@dataclass(frozen=True)
class PartitionView:
    topic: str
    partition: int
    leader: int  # -1: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # None when the leader could not be asked this round (or there is no leader).
    log_start_offset: int | None = None
    log_end_offset: int | None = None


@dataclass(frozen=True)
class ClusterSnapshot:
    brokers: int
    partitions: tuple[PartitionView, ...]
    groups: tuple[GroupOffsets, ...]


def lag(log_end_offset: int, committed_offset: int) -> int:
    """How far a committed position trails the log end; never negative (a commit may run ahead
    of a high watermark read a moment earlier, or of a log truncated since)."""
    return max(log_end_offset - committed_offset, 0)


# -- rendering (pure) ----------------------------------------------------------------------------

PARTITION_LABELS = ["topic", "partition"]
GROUP_PARTITION_LABELS = ["consumergroup", "topic", "partition"]
GROUP_TOPIC_LABELS = ["consumergroup", "topic"]


def _gauge(name: str, documentation: str, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, labels=labels)


def render(snapshot: ClusterSnapshot) -> list[Metric]:
    """kafka_exporter's metric families, with its names and labels, for one snapshot."""
    brokers = _gauge("kafka_brokers", "Number of brokers in the cluster")
    brokers.add_metric([], snapshot.brokers)
    topics = _gauge("kafka_topic_partitions", "Number of partitions of a topic", ["topic"])
    per_partition = {
        "current_offset": "Log end offset (high watermark) of a partition",
        "oldest_offset": "Log start offset of a partition",
        "in_sync_replica": "Number of in-sync replicas of a partition",
        "leader": "Broker id leading a partition (-1: none)",
        "replicas": "Number of replicas of a partition",
        "leader_is_preferred": "1 if a partition is led by its preferred (first) replica",
        "under_replicated_partition": "1 if a partition has fewer in-sync replicas than replicas",
    }
    families = {
        key: _gauge(f"kafka_topic_partition_{key}", text, PARTITION_LABELS)
        for key, text in per_partition.items()
    }
    partition_count: dict[str, int] = defaultdict(int)
    log_ends: dict[TopicPartition, int] = {}
    for p in snapshot.partitions:
        partition_count[p.topic] += 1
        labels = [p.topic, str(p.partition)]
        if p.log_end_offset is not None:
            families["current_offset"].add_metric(labels, p.log_end_offset)
            log_ends[(p.topic, p.partition)] = p.log_end_offset
        if p.log_start_offset is not None:
            families["oldest_offset"].add_metric(labels, p.log_start_offset)
        families["in_sync_replica"].add_metric(labels, len(p.isr))
        families["leader"].add_metric(labels, p.leader)
        families["replicas"].add_metric(labels, len(p.replicas))
        preferred = p.leader >= 0 and bool(p.replicas) and p.leader == p.replicas[0]
        families["leader_is_preferred"].add_metric(labels, int(preferred))
        families["under_replicated_partition"].add_metric(
            labels, int(len(set(p.isr)) < len(p.replicas))
        )
    for topic, count in sorted(partition_count.items()):
        topics.add_metric([topic], count)
    return [brokers, topics, *families.values(), *_group_families(snapshot.groups, log_ends)]


def _group_families(
    groups: Iterable[GroupOffsets], log_ends: Mapping[TopicPartition, int]
) -> list[Metric]:
    current = _gauge(
        "kafka_consumergroup_current_offset",
        "Committed offset of a consumer group on a partition",
        GROUP_PARTITION_LABELS,
    )
    current_sum = _gauge(
        "kafka_consumergroup_current_offset_sum",
        "Sum of a consumer group's committed offsets over a topic",
        GROUP_TOPIC_LABELS,
    )
    lags = _gauge(
        "kafka_consumergroup_lag",
        "Log end offset less the committed offset of a consumer group on a partition",
        GROUP_PARTITION_LABELS,
    )
    lag_sum = _gauge(
        "kafka_consumergroup_lag_sum",
        "Sum of a consumer group's lag over a topic",
        GROUP_TOPIC_LABELS,
    )
    members = _gauge(
        "kafka_consumergroup_members", "Members of a consumer group", ["consumergroup"]
    )
    for group in sorted(groups, key=lambda g: g.name):
        members.add_metric([group.name], group.members)
        by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for (topic, partition), offset in sorted(group.committed.items()):
            by_topic[topic].append((partition, offset))
        for topic, committed in by_topic.items():
            current_sum.add_metric([group.name, topic], sum(o for _, o in committed))
            known = 0
            total = 0
            for partition, offset in committed:
                current.add_metric([group.name, topic, str(partition)], offset)
                end = log_ends.get((topic, partition))
                if end is not None:
                    known += 1
                    total += lag(end, offset)
                    lags.add_metric([group.name, topic, str(partition)], lag(end, offset))
            # A sum over only some partitions would read as a fall in lag: leave it out.
            if known == len(committed):
                lag_sum.add_metric([group.name, topic], total)
    return [current, current_sum, lags, lag_sum, members]


EMPTY = ClusterSnapshot(brokers=0, partitions=(), groups=())


class ClusterViewCollector(Collector):
    """Renders the latest snapshot; no snapshot (a standby controller) means no series."""

    def __init__(self) -> None:
        self.snapshot: ClusterSnapshot | None = None

    def collect(self) -> Iterator[Metric]:
        snapshot = self.snapshot  # one read: a refresh may replace it meanwhile
        if snapshot is not None:
            yield from render(snapshot)

    def describe(self) -> Iterator[Metric]:
        # The names this collector may export, for the registry's duplicate check.
        yield from render(EMPTY)


# -- refreshing (I/O) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextView:
    """What the context says when a refresh begins (read without awaiting, so consistent)."""

    brokers: dict[int, tuple[str, int]]
    partitions: tuple[PartitionView, ...]
    # Leader epoch of each partition with a live leader, checked by the leader on ListOffsets.
    leader_epochs: dict[TopicPartition, int]


def view_of(context: ControllerContext, security: ClientSecurity = PLAINTEXT_CLIENT) -> ContextView:
    """The partitions (no offsets yet) and live brokers of the controller's context; a leader
    that is not a live broker is reported as none (-1)."""
    views = []
    epochs: dict[TopicPartition, int] = {}
    for (topic, partition), entry in sorted(context.partitions.items()):
        state = entry.state
        if state is not None and state.leader in context.brokers:
            views.append(PartitionView(topic, partition, state.leader, entry.replicas, state.isr))
            epochs[(topic, partition)] = state.leader_epoch
        else:
            isr = state.isr if state is not None else ()
            views.append(PartitionView(topic, partition, -1, entry.replicas, isr))
    brokers = {
        b.id: (endpoint.host, endpoint.port)
        for b in context.brokers.values()
        if (endpoint := security.endpoint(b.listeners)) is not None
    }
    return ContextView(brokers, tuple(views), epochs)


class ClusterView:
    """Keeps :attr:`collector`'s snapshot current while a context is bound (this controller
    is active); the controller binds its context once loaded and unbinds it on resigning."""

    def __init__(
        self,
        zk: ZkClient,
        *,
        interval_ms: int,
        request_timeout_ms: int,
        security: ClientSecurity = PLAINTEXT_CLIENT,
        history: LagHistory | None = None,
    ) -> None:
        self.collector = ClusterViewCollector()
        # Each group's total lag over time, recorded from the refreshes (lag_history.py).
        self.history = history or LagHistory(window_ms=interval_ms, interval_ms=interval_ms)
        self._zk = zk
        self._context: ControllerContext | None = None
        self._interval_s = interval_ms / 1000
        self._timeout_s = request_timeout_ms / 1000
        self._wake = asyncio.Event()
        self._security = security
        self._client = ClusterClient(client_id="pafka-controller-cluster-view", security=security)

    def bind(self, context: ControllerContext) -> None:
        self._context = context
        self._wake.set()  # a new term exports its view at once, not an interval later

    def unbind(self) -> None:
        """Stop exporting at once: a standby exports no cluster view."""
        self._context = None
        self.collector.snapshot = None
        self.history.clear()

    async def run(self) -> None:
        while True:
            self._wake.clear()
            try:
                await self.refresh()
            except PafkaError as exc:
                log.warning("cluster view not refreshed: %s", exc)
            except Exception:
                # A bug in one round must not end the view for the rest of this term.
                log.exception("cluster view refresh failed")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._interval_s):
                    await self._wake.wait()

    async def close(self) -> None:
        self.unbind()
        await self._client.close()

    async def refresh(self) -> None:
        context = self._context
        if context is None:
            return
        begun = view_of(context, self._security)
        self._client.brokers = begun.brokers
        offsets, groups = await asyncio.gather(self._log_offsets(begun), self._groups())
        if self._context is not context:
            return  # resigned or re-activated meanwhile: this round describes nothing current
        partitions = tuple(
            replace(p, log_start_offset=found[0], log_end_offset=found[1])
            if (found := offsets.get((p.topic, p.partition))) is not None
            else p
            for p in begun.partitions
        )
        self.collector.snapshot = ClusterSnapshot(len(begun.brokers), partitions, groups)
        ends = {(p.topic, p.partition): p.log_end_offset for p in partitions}
        known = {tp: end for tp, end in ends.items() if end is not None}
        self.history.record(now_ms(), total_lags(groups, known))

    async def _groups(self) -> tuple[GroupOffsets, ...]:
        try:
            return await self._zk.run(read_groups, self._zk.kazoo)
        except PafkaError as exc:
            # Partition series are still worth exporting without the groups.
            log.warning("cluster view: consumer groups not read this round: %s", exc)
            return ()

    async def _log_offsets(self, begun: ContextView) -> dict[TopicPartition, tuple[int, int]]:
        led: dict[int, dict[TopicPartition, int]] = defaultdict(dict)
        for p in begun.partitions:
            if p.leader >= 0:
                led[p.leader][(p.topic, p.partition)] = begun.leader_epochs[(p.topic, p.partition)]
        return await log_offsets(self._client, led, self._timeout_s)
