"""Client quota precedence, sensor sharing, Kafka's rate and throttle time, against models.

The rate's model is kafka-python's port of Kafka's ``Rate`` and ``SampledTotal``
(``kafka.metrics``), an independent implementation of the same Java classes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.metrics.metric_config import MetricConfig
from kafka.metrics.stats.rate import Rate as ModelRate

from pafka.errors import InvalidRequestError
from pafka.security.quotas import (
    DEFAULT,
    EnabledLevels,
    MetricTags,
    QuotaEntity,
    Rate,
    RateConfig,
    find_quota,
    level_of,
    metric_tags,
    parse_quota_value,
    quota_limit,
    quotas_of,
    record_and_throttle,
    throttle_time_ms,
)

USERS = st.sampled_from(["alice", "bob"])
CLIENTS = st.sampled_from(["c1", "c2"])
ENTITIES = st.sampled_from(
    [
        QuotaEntity(u, c)
        for u in ("alice", "bob", DEFAULT, None)
        for c in ("c1", "c2", DEFAULT, None)
        if u is not None or c is not None
    ]
)
QUOTAS = st.dictionaries(ENTITIES, st.integers(1, 10**9).map(float), max_size=8)

# The precedence as Kafka's documentation lists it, as (user, client) patterns.
_ORDER = [
    ("U", "C"),
    ("U", DEFAULT),
    ("U", None),
    (DEFAULT, "C"),
    (DEFAULT, DEFAULT),
    (DEFAULT, None),
    (None, "C"),
    (None, DEFAULT),
]


def _model_find(user: str, client: str, quotas: dict[QuotaEntity, float]) -> float | None:
    def rank(entity: QuotaEntity) -> int | None:
        for i, (u, c) in enumerate(_ORDER):
            want_u = user if u == "U" else u
            want_c = client if c == "C" else c
            if entity.user == want_u and entity.client_id == want_c:
                return i
        return None

    ranked = sorted((r, e) for e in quotas if (r := rank(e)) is not None)
    return quotas[ranked[0][1]] if ranked else None


@given(USERS, CLIENTS, QUOTAS)
def test_find_quota_follows_kafkas_precedence(
    user: str, client: str, quotas: dict[QuotaEntity, float]
) -> None:
    assert find_quota(user, client, quotas) == _model_find(user, client, quotas)


def _levels(quotas: dict[QuotaEntity, float]) -> EnabledLevels:
    levels = EnabledLevels.NONE
    for entity in quotas:
        levels |= level_of(entity)
    return levels


@given(USERS, CLIENTS, QUOTAS)
def test_sensor_bound_is_the_quota_that_applies(
    user: str, client: str, quotas: dict[QuotaEntity, float]
) -> None:
    """The sensor a client records into is bounded by exactly the quota the precedence finds
    for it (Kafka's quotaMetricTags and quotaLimit agree with findQuota)."""
    tags = metric_tags(user, client, quotas, _levels(quotas))
    assert quota_limit(tags, quotas) == find_quota(user, client, quotas)


@given(st.lists(st.tuples(USERS, CLIENTS), min_size=2, max_size=2), QUOTAS)
def test_clients_sharing_a_sensor_share_a_quota(
    pair: list[tuple[str, str]], quotas: dict[QuotaEntity, float]
) -> None:
    levels = _levels(quotas)
    (u1, c1), (u2, c2) = pair
    if metric_tags(u1, c1, quotas, levels) == metric_tags(u2, c2, quotas, levels):
        assert find_quota(u1, c1, quotas) == find_quota(u2, c2, quotas)


def test_a_user_quota_is_shared_by_all_the_users_clients() -> None:
    quotas = {QuotaEntity("alice", None): 1000.0}
    levels = _levels(quotas)
    assert metric_tags("alice", "c1", quotas, levels) == MetricTags("alice", "")
    assert metric_tags("alice", "c2", quotas, levels) == MetricTags("alice", "")


def test_a_default_client_quota_gives_each_client_its_own_sensor() -> None:
    quotas = {QuotaEntity(None, DEFAULT): 1000.0}
    levels = _levels(quotas)
    assert metric_tags("alice", "c1", quotas, levels) == MetricTags("", "c1")
    assert metric_tags("alice", "c2", quotas, levels) == MetricTags("", "c2")


def test_quota_values_are_validated_as_kafka_does() -> None:
    assert parse_quota_value("producer_byte_rate", "1024") == 1024.0
    assert parse_quota_value("request_percentage", "12.5") == 12.5
    for key, value in [
        ("producer_byte_rate", "fast"),
        ("consumer_byte_rate", "0"),
        ("consumer_byte_rate", "1.5"),
        ("request_percentage", "-1"),
        ("bogus", "1"),
    ]:
        with pytest.raises(InvalidRequestError):
            parse_quota_value(key, value)


def test_other_keys_of_an_entity_are_not_quotas() -> None:
    configs = {
        QuotaEntity("alice", None): {"SCRAM-SHA-256": "salt=x", "producer_byte_rate": "10"},
        QuotaEntity("bob", None): {"producer_byte_rate": "nonsense"},
    }
    assert quotas_of(configs, "producer_byte_rate") == {QuotaEntity("alice", None): 10.0}


_STEPS = st.lists(st.tuples(st.integers(0, 2500), st.floats(0, 1e6, allow_nan=False)), max_size=60)


@settings(max_examples=300)
@given(st.integers(2, 12), st.integers(1, 2000), _STEPS)
def test_rate_matches_kafkas_rate(
    samples: int, window_ms: int, steps: list[tuple[int, float]]
) -> None:
    ours = Rate(RateConfig(samples, window_ms))
    model, config = ModelRate(), MetricConfig(samples=samples, time_window_ms=window_ms)
    now = 1_000_000
    for gap, value in steps:
        now += gap
        ours.record(value, now)
        model.record(config, value, now)
        assert ours.window_size_ms(now) == model.window_size(config, now)
        assert ours.measure(now) == pytest.approx(model.measure(config, now))
    later = now + window_ms * samples
    assert ours.measure(later) == pytest.approx(model.measure(config, later))


def test_throttle_time_is_kafkas() -> None:
    # QuotaUtilsTest: twice the quota over a 1 s window owes the whole window.
    assert throttle_time_ms(100.0, 50.0, 1000) == 1000
    assert throttle_time_ms(55.0, 50.0, 1000) == 100
    assert throttle_time_ms(16.5, 16.5, 1000) == 0


@settings(max_examples=200)
@given(
    st.integers(100, 10**6),
    st.lists(st.tuples(st.integers(0, 300), st.integers(1, 10**6)), min_size=1, max_size=40),
)
def test_throttle_is_owed_exactly_above_the_quota(bound: int, steps: list[tuple[int, int]]) -> None:
    """Every recording over the quota owes (rate - quota) / quota of the rate's window, as
    Kafka's QuotaUtils.throttleTime; one within it owes nothing."""
    rate, model = Rate(), ModelRate()
    config = MetricConfig(samples=11, time_window_ms=1000)
    now = 0
    for gap, value in steps:
        now += gap
        owed = record_and_throttle(rate, value, float(bound), now)
        model.record(config, value, now)
        measured = model.measure(config, now)
        if measured <= bound:
            assert owed == 0
        else:
            window = model.window_size(config, now)
            assert owed == max(0, round((measured - bound) / bound * window))


def test_unlimited_sensor_never_throttles() -> None:
    rate = Rate()
    assert record_and_throttle(rate, 1e12, None, 0) == 0


def test_bounded_throttle_for_request_time() -> None:
    rate = Rate()
    assert record_and_throttle(rate, 1e6, 1.0, 0, max_ms=1000) == 1000
