"""The transaction coordinator's settings, part of the broker's (``PAFKA_BROKER_TRANSACTION*``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TransactionConfig:
    # Kafka's transaction.max.timeout.ms: InitProducerId asking for more is refused.
    max_timeout_ms: int = 900_000
    # Kafka's transactional.id.expiration.ms: an id unused this long with no transaction in
    # flight is forgotten.
    id_expiration_ms: int = 604_800_000
    # Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms.
    abort_timed_out_interval_ms: int = 10_000
    # Kafka's transaction.remove.expired.transaction.cleanup.interval.ms.
    remove_expired_interval_ms: int = 3_600_000
    # Between rounds of WriteTxnMarkers while some partition has not acknowledged.
    marker_retry_backoff_ms: int = 100
