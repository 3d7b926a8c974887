"""The transaction coordinator's metrics, read from it when Prometheus scrapes.

Kafka 2.8 exports no count of transactional ids (its coordinator is measured through the
``__transaction_state`` partitions it leads), so these are pafka's own: the ids this broker
coordinates by state (Ongoing is Kafka's "active transactions"), the transactions whose markers
are being written, and the transactions aborted for passing their timeout.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from services.broker.transactions.coordinator import TransactionCoordinator


class TransactionMetrics(Collector):
    def __init__(self, coordinator: TransactionCoordinator) -> None:
        self._coordinator = coordinator

    def collect(self) -> Iterator[Metric]:
        c = self._coordinator
        ids = GaugeMetricFamily(
            "pafka_transaction_coordinator_transactional_ids",
            "Transactional ids this broker coordinates, by transaction state",
            labels=["state"],
        )
        for state, count in sorted(c.counts_by_state().items()):
            ids.add_metric([state], count)
        yield ids
        yield GaugeMetricFamily(
            "pafka_transaction_coordinator_markers_in_flight",
            "Transactions whose commit or abort markers are being written",
            value=c.markers_in_flight(),
        )
        yield CounterMetricFamily(
            "pafka_transaction_coordinator_timed_out_aborts",
            "Transactions aborted for passing their transaction.timeout.ms",
            value=c.timed_out_aborts,
        )


def register(registry: CollectorRegistry, coordinator: TransactionCoordinator) -> None:
    registry.register(TransactionMetrics(coordinator))
