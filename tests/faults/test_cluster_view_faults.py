"""The controller's cluster view under faults, on a cluster of its own.

A paused broker (SIGSTOP: its connections accept requests that are never answered) costs only
its own partitions' offset series while it is still registered; the other partitions' offsets
keep being refreshed. When the active controller is killed, the new one exports the view, and
the restarted old one, now a standby, exports none of it.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from tests.integration.conftest import ClusterHandle, own_cluster
from tests.integration.test_metrics_scrape import CLUSTER_VIEW, Series, names, one, scrape

pytestmark = pytest.mark.faults

ACTIVE = "kafka_controller_kafkacontroller_activecontrollercount"
# Rounds short enough that several fit in the broker session timeout: a paused broker stays
# registered, and keeps its partitions' leadership, for that long.
CONTROLLER_ENV = {
    "PAFKA_CONTROLLER_CLUSTER_VIEW_INTERVAL_MS": "300",
    "PAFKA_CONTROLLER_REQUEST_TIMEOUT_MS": "2000",
}
BROKER_ENV = {"PAFKA_BROKER_ZK_SESSION_TIMEOUT_MS": "15000"}


@pytest.fixture(scope="module")
def view_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    # Processes inherit the environment; LocalCluster sets no controller variable of these.
    with pytest.MonkeyPatch.context() as patch:
        for key, value in CONTROLLER_ENV.items():
            patch.setitem(os.environ, key, value)
        with own_cluster(
            tmp_path_factory, "cluster-view", brokers=3, controllers=2, broker_env=BROKER_ENV
        ) as handle:
            patch.undo()
            yield handle


def wait_for(check: Callable[[], str | None], timeout_s: float, pause_s: float = 0.2) -> None:
    deadline = time.monotonic() + timeout_s
    while (why := check()) is not None:
        assert time.monotonic() < deadline, why
        time.sleep(pause_s)


def controller_scrapes(cluster: ClusterHandle) -> dict[str, Series]:
    return {c.name: scrape(c.http_url) for c in cluster.local.controllers() if c.alive()}


def active_view(cluster: ClusterHandle) -> tuple[str, Series]:
    (found,) = [(n, s) for n, s in controller_scrapes(cluster).items() if one(s, ACTIVE) == 1]
    return found


def produce(cluster: ClusterHandle, topic: str, partition: int, count: int) -> None:
    """Through the partition's leader as the only bootstrap server, so that a paused broker
    elsewhere cannot hold up the producer's first metadata request."""
    from kafka import KafkaProducer

    host, port = cluster.leader_address(topic, partition)
    producer = KafkaProducer(bootstrap_servers=f"{host}:{port}", acks=1)
    try:
        for future in [producer.send(topic, b"x", partition=partition) for _ in range(count)]:
            future.get(timeout=30)
    finally:
        producer.close(timeout=5)


def test_a_paused_broker_loses_only_its_own_offset_series(view_cluster: ClusterHandle) -> None:
    topic = f"paused-{uuid.uuid4().hex[:6]}"
    view_cluster.create_topic(topic, partitions=3, replication_factor=1)
    leaders = {p: view_cluster.partition_state(topic, p).leader for p in range(3)}
    for p in range(3):
        produce(view_cluster, topic, p, 5 + p)

    def offsets() -> dict[int, float | None]:
        view = active_view(view_cluster)[1]
        return {
            p: one(view, "kafka_topic_partition_current_offset", topic=topic, partition=str(p))
            for p in range(3)
        }

    wait_for(lambda: None if offsets() == {0: 5, 1: 6, 2: 7} else f"offsets {offsets()}", 30)
    paused_partition = 0
    paused = leaders[paused_partition]
    other = next(p for p in range(3) if leaders[p] != paused)
    service = view_cluster.local.broker(paused)
    view_cluster.local.send_signal(service, signal.SIGSTOP)
    try:
        # Records written elsewhere while the broker is paused must still show up.
        produce(view_cluster, topic, other, 10)
        expected_other = 5 + other + 10

        def only_the_paused_partition_is_missing() -> str | None:
            view = active_view(view_cluster)[1]
            tp = {"topic": topic, "partition": str(paused_partition)}
            leader = one(view, "kafka_topic_partition_leader", **tp)
            end = one(view, "kafka_topic_partition_current_offset", **tp)
            moved = one(
                view, "kafka_topic_partition_current_offset", topic=topic, partition=str(other)
            )
            if leader == paused and end is None and moved == expected_other:
                return None
            return f"leader {leader}, paused end {end}, other end {moved}"

        # Seen while the paused broker is still registered (its session has not expired).
        wait_for(only_the_paused_partition_is_missing, 10, pause_s=0.05)
    finally:
        view_cluster.local.send_signal(service, signal.SIGCONT)
    wait_for(lambda: None if offsets()[paused_partition] == 5 else f"offsets {offsets()}", 60)


def test_the_view_follows_the_active_controller(view_cluster: ClusterHandle) -> None:
    old, view = active_view(view_cluster)
    # No group has committed here: the partition half of the view.
    assert {n for n in CLUSTER_VIEW if not n.startswith("kafka_consumergroup")} <= names(view)
    view_cluster.local.kill(old, signal.SIGKILL)

    def successor_exports() -> str | None:
        scrapes = controller_scrapes(view_cluster)
        active = [s for s in scrapes.values() if one(s, ACTIVE) == 1]
        if len(active) == 1 and one(active[0], "kafka_brokers") == 3:
            return None
        return f"{len(active)} active controllers exporting"

    wait_for(successor_exports, 30)
    view_cluster.local.restart(old)

    def old_is_a_silent_standby() -> str | None:
        series = controller_scrapes(view_cluster)[old]
        if one(series, ACTIVE) == 0 and not set(CLUSTER_VIEW) & names(series):
            return None
        return f"{old}: active {one(series, ACTIVE)}"

    wait_for(old_is_a_silent_standby, 30)
    actives = [n for n, s in controller_scrapes(view_cluster).items() if one(s, ACTIVE) == 1]
    assert len(actives) == 1 and actives[0] != old
