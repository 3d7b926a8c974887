"""Which appends the leader checks, chosen by topic config: none for Kafka's defaults, and a
corrupt batch refused as corrupt before a LogAppendTime stamp could make its CRC good."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cluster.topic_config import TopicConfig, parse_topic_config
from pafka.errors import (
    CorruptMessageError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidTimestampError,
)
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC,
    CRC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    crc_of,
    read_header,
    validate,
)
from pafka.records.encoding import build_batch
from services.broker.append_checks import _plain, append_rules, checked_for_append

NOW_MS = 1_700_000_000_000
KEYLESS = build_batch([(None, b"v", ())], timestamp_ms=NOW_MS - 10)


def _check(records: bytes, config: TopicConfig) -> bytes | memoryview:
    return checked_for_append(records, [read_header(records)], config, NOW_MS, "t", 4)


@given(
    policy=st.sampled_from(["delete", "compact", "compact,delete", "delete,compact"]),
    kind=st.sampled_from(["CreateTime", "LogAppendTime"]),
    difference=st.sampled_from([None, "0", "1000", str(2**63 - 1)]),
)
def test_the_shortcut_agrees_with_the_rules(policy: str, kind: str, difference: str | None) -> None:
    overrides = {"cleanup.policy": policy, "message.timestamp.type": kind}
    if difference is not None:
        overrides["message.timestamp.difference.max.ms"] = difference
    config = parse_topic_config(overrides)
    assert _plain(config) == (not append_rules(config).acts)


def test_default_topics_append_the_producers_bytes_untouched() -> None:
    assert _check(KEYLESS, TopicConfig()) is KEYLESS


def test_log_append_time_topics_get_stamped_batches() -> None:
    stamped = _check(KEYLESS, parse_topic_config({"message.timestamp.type": "LogAppendTime"}))
    (header,) = validate(stamped, 2**20)
    assert header.log_append_time and header.max_timestamp == NOW_MS


def test_a_corrupt_batch_is_refused_as_corrupt_not_stamped() -> None:
    corrupt = bytearray(KEYLESS)
    corrupt[-1] ^= 0xFF
    config = parse_topic_config({"message.timestamp.type": "LogAppendTime"})
    with pytest.raises(CorruptMessageError):
        _check(bytes(corrupt), config)


def test_compacted_topics_name_the_partition() -> None:
    with pytest.raises(InvalidRecordError) as refused:
        _check(KEYLESS, parse_topic_config({"cleanup.policy": "compact,delete"}))
    assert refused.value.record_errors == (
        (0, "Compacted topic cannot accept message without key in topic partition t-4."),
    )


def test_producers_setting_log_append_time_are_refused_on_default_topics() -> None:
    batch = bytearray(KEYLESS)
    batch[ATTRIBUTES_OFFSET + 1] |= TIMESTAMP_TYPE_BIT
    CRC.pack_into(batch, CRC_OFFSET, crc_of(batch, 0, read_header(batch)))
    with pytest.raises(InvalidTimestampError):
        _check(bytes(batch), TopicConfig())


def test_the_difference_limit_is_a_dynamic_broker_default() -> None:
    from pafka.cluster import broker_config

    key = "log.message.timestamp.difference.max.ms"
    broker_config.validate({key: "60000"})
    with pytest.raises(InvalidRequestError):
        broker_config.validate({key: "-1"})
    assert broker_config.topic_defaults({key: "5"}) == {"message.timestamp.difference.max.ms": "5"}
