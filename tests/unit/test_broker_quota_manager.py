"""The broker's quota sensors: which sensor a client records into, throttles, idle expiry, and
the series they export (a simulated clock)."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from pafka.security.quotas import DEFAULT, INACTIVE_SENSOR_EXPIRATION_MS, RateConfig
from services.broker.quota_enforcement import TimedCoroutine, client_throttles_itself
from services.broker.quota_manager import QuotaCollector, QuotaManager


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def test_nothing_is_recorded_before_any_quota() -> None:
    manager = QuotaManager(RateConfig())
    assert manager.produce.record("ANONYMOUS", "c1", 1e9, 0) == 0
    assert not manager.produce.sensors


def test_clients_of_a_user_quota_share_one_sensor_and_its_throttle() -> None:
    manager = QuotaManager(RateConfig())
    manager.update({("alice", None): {"producer_byte_rate": "1000"}})
    assert manager.produce.record("alice", "c1", 6000, 0) == 0
    # 6000 + 6000 bytes over the 10 s the rate counts at least: 1200 B/s, 20% over.
    assert manager.produce.record("alice", "c2", 6000, 0) == 2000
    assert len(manager.produce.sensors) == 1
    # Another user is unlimited, on a sensor of its own; fetches are not produce quotas.
    assert manager.produce.record("bob", "c1", 1e9, 0) == 0
    assert manager.fetch.record("alice", "c1", 1e9, 0) == 0


def test_a_more_specific_quota_takes_over_and_a_removed_one_frees() -> None:
    manager = QuotaManager(RateConfig())
    manager.update({(None, DEFAULT): {"consumer_byte_rate": "100"}})
    assert manager.fetch.record("u", "c1", 5000, 0) > 0
    manager.update(
        {
            (None, DEFAULT): {"consumer_byte_rate": "100"},
            (None, "c1"): {"consumer_byte_rate": "1e6"},
        }
    )
    assert manager.fetch.record("u", "c1", 5000, 1) == 0
    manager.update({})
    assert manager.fetch.record("u", "c2", 1e9, 2) == 0


def test_an_unrecorded_fetch_no_longer_counts() -> None:
    manager = QuotaManager(RateConfig())
    manager.update({(None, "c"): {"consumer_byte_rate": "100"}})
    assert manager.fetch.record("u", "c", 2000, 0) > 0
    manager.fetch.unrecord("u", "c", 2000, 0)
    assert manager.fetch.record("u", "c", 500, 0) == 0


def test_request_time_throttles_are_bounded_by_a_window() -> None:
    manager = QuotaManager(RateConfig(11, 1000))
    manager.update({(None, "c"): {"request_percentage": "1"}})
    assert manager.request.record("u", "c", 1e6, 0) == 1000


def test_idle_sensors_expire() -> None:
    clock = Clock()
    manager = QuotaManager(RateConfig(), clock)
    manager.update({(None, DEFAULT): {"producer_byte_rate": "100"}})
    manager.produce.record("u", "old", 1, clock())
    clock.now_ms += INACTIVE_SENSOR_EXPIRATION_MS + 1
    manager.produce.record("u", "new", 1, clock())
    assert {t.client_id for t in manager.produce.sensors} == {"new"}


def test_series_carry_kafkas_names_and_tags() -> None:
    clock = Clock()
    manager = QuotaManager(RateConfig(), clock)
    manager.update({("alice", None): {"producer_byte_rate": "100"}})
    owed = manager.produce.record("alice", "c1", 2000, clock())
    manager.produce.throttled("alice", "c1", owed, clock())
    registry = CollectorRegistry()
    registry.register(QuotaCollector(manager))
    labels = {"user": "alice", "client_id": ""}
    assert registry.get_sample_value("kafka_server_produce_byte_rate", labels) == 200.0
    assert registry.get_sample_value("kafka_server_produce_throttle_time", labels) == owed
    assert registry.get_sample_value("kafka_server_fetch_byte_rate", labels) is None


def test_self_throttling_versions_are_kip_219s() -> None:
    assert not client_throttles_itself(0, 5) and client_throttles_itself(0, 6)  # Produce
    assert not client_throttles_itself(1, 7) and client_throttles_itself(1, 8)  # Fetch
    assert client_throttles_itself(48, 0)  # DescribeClientQuotas, newer than KIP-219


def test_timed_coroutine_counts_only_the_steps_it_ran() -> None:
    async def handler() -> str:
        await asyncio.sleep(0.2)  # waiting (for data, for replication) is not request time
        return "done"

    async def scenario() -> tuple[str, float]:
        timed = TimedCoroutine(handler())
        result = await timed
        return result, timed.busy_s

    result, busy_s = asyncio.run(scenario())
    assert result == "done"
    assert busy_s < 0.2


def test_timed_coroutine_passes_cancellation_to_the_handler() -> None:
    cleaned: list[bool] = []

    async def handler() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            cleaned.append(True)

    async def scenario() -> None:
        task = asyncio.ensure_future(TimedCoroutine(handler()))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert cleaned == [True]
