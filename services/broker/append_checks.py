"""The leader's record checks for one append, chosen by the topic's configuration.

A topic with Kafka's defaults (``delete``, CreateTime, no timestamp difference limit) passes
here without a record decoded or a byte copied. Otherwise the payload is validated first (a
corrupt batch is refused as CORRUPT_MESSAGE before its records are looked at, as in Kafka),
then checked and, for a LogAppendTime topic, stamped with the append time
(:mod:`pafka.records.append_validation`). Followers never come here: they keep the leader's
bytes, stamps included.
"""

from __future__ import annotations

from pafka.cluster.topic_config import TopicConfig
from pafka.records.append_validation import (
    LONG_MAX,
    AppendRules,
    check_records,
    producer_set_append_time,
    stamp_log_append_time,
)
from pafka.records.batch import BatchHeader, validate


def append_rules(config: TopicConfig) -> AppendRules:
    return AppendRules(
        log_append_time=config.message_timestamp_type == "LogAppendTime",
        timestamp_difference_max_ms=config.message_timestamp_difference_max_ms,
        compacted=config.compacted,
    )


def _plain(config: TopicConfig) -> bool:
    """Kafka's defaults for the three settings: the common case, told without building rules
    (``cleanup.policy`` is kept normalised, so one comparison suffices)."""
    return (
        config.cleanup_policy == "delete"
        and config.message_timestamp_type == "CreateTime"
        and config.message_timestamp_difference_max_ms == LONG_MAX
    )


def checked_for_append(
    records: bytes | memoryview,
    headers: list[BatchHeader],
    config: TopicConfig,
    now_ms: int,
    topic: str,
    partition: int,
) -> bytes | memoryview:
    """``records`` as the leader appends them, or the error Kafka refuses them with."""
    if _plain(config) and not producer_set_append_time(headers):
        return records
    rules = append_rules(config)
    if not rules.acts and not producer_set_append_time(headers):
        return records
    validate(records, config.max_message_bytes)
    check_records(records, rules, now_ms, f"{topic}-{partition}")
    if rules.log_append_time:
        return stamp_log_append_time(records, now_ms)
    return records
