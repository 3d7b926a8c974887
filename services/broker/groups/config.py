"""The group coordinator's limits, part of the broker's settings (``PAFKA_BROKER_GROUP_*``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GroupConfig:
    # Kafka's group.initial.rebalance.delay.ms: members starting together land in one
    # generation instead of one rebalance each.
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 1_000_000
    offset_metadata_max_bytes: int = 4096
    # The seeds rebalance a group when a broker change moves the leadership of the partitions
    # it consumes; modern clients follow leaders without one, so it can be turned off.
    rebalance_on_broker_change: bool = True
    # How often member sessions and rebalance deadlines are checked.
    sweep_interval_ms: int = 200
