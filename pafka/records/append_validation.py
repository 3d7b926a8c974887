"""The leader's checks and rewrite of a producer's v2 batches before they are appended.

Pure functions over a produce payload that :func:`pafka.records.batch.validate` has already
accepted (whole batches, CRCs intact), following Kafka's ``LogValidator`` for client appends.
Legacy payloads (Produce v0-v2) come here already up-converted to one v2 batch.

* **LogAppendTime** topics: each batch's timestamp type becomes LogAppendTime and its
  ``max_timestamp`` the broker's time; the CRC is recomputed, since it covers both fields.
  Records and ``base_timestamp`` are left alone and a compressed batch is not recompressed:
  readers take every record's timestamp from ``max_timestamp`` when the type is LogAppendTime.
* A producer may not set the LogAppendTime type itself: INVALID_TIMESTAMP.
* **CreateTime** topics with ``message.timestamp.difference.max.ms``: each record's timestamp,
  unless it is NO_TIMESTAMP (-1, a magic 0 message up-converted), must be within that many ms
  of the broker's time, else INVALID_TIMESTAMP.
* **Compacted** topics: every record needs a key, else INVALID_RECORD (Kafka 2.8 answers 87 at
  every Produce version). Control batches carry no client records and are not checked.

Errors are gathered per batch, one per refused record (its index in the batch and the reason,
what Produce v8+ answers as record errors); the first batch with any refuses the payload, with
INVALID_TIMESTAMP if one of them is about a timestamp, else INVALID_RECORD.

Only a topic whose rules :attr:`AppendRules.inspect_records` decodes records; a topic with
Kafka's defaults costs one attribute test per batch header.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from pafka.errors import InvalidRecordError, InvalidTimestampError, RecordError
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CRC,
    CRC_OFFSET,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    Buffer,
    iter_batches,
)
from pafka.records.encoding import decode_records

LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1
ATTRIBUTES = struct.Struct(">h")
MAX_TIMESTAMP = struct.Struct(">q")
MAX_TIMESTAMP_OFFSET = struct.calcsize(">qiibIhiq")  # 35: after base_timestamp

REJECTED = "One or more records have been rejected"
REJECTED_TIMESTAMP = "One or more records have been rejected due to invalid timestamp"


@dataclass(frozen=True, slots=True)
class AppendRules:
    """What a topic's configuration asks of the records appended to it."""

    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    timestamp_difference_max_ms: int = LONG_MAX  # message.timestamp.difference.max.ms
    compacted: bool = False  # cleanup.policy contains compact

    @property
    def limits_timestamps(self) -> bool:
        return not self.log_append_time and self.timestamp_difference_max_ms < LONG_MAX

    @property
    def inspect_records(self) -> bool:
        return self.compacted or self.limits_timestamps

    @property
    def acts(self) -> bool:
        """Whether appends to the topic need more than the batch checks every topic gets."""
        return self.log_append_time or self.inspect_records


def producer_set_append_time(headers: list[BatchHeader]) -> bool:
    """Whether a producer marked a batch LogAppendTime, which only the broker may do."""
    return any(h.attributes & TIMESTAMP_TYPE_BIT for h in headers)


def check_records(records: Buffer, rules: AppendRules, now_ms: int, topic_partition: str) -> None:
    """Refuse the payload if a batch breaks ``rules`` (or claims LogAppendTime itself)."""
    view = memoryview(records)
    for pos, header in iter_batches(view):
        errors, about_timestamp = _batch_errors(
            view[pos : pos + header.size], header, rules, now_ms, topic_partition
        )
        if about_timestamp:
            raise InvalidTimestampError(REJECTED_TIMESTAMP, record_errors=errors)
        if errors:
            raise InvalidRecordError(REJECTED, record_errors=errors)


def _batch_errors(
    batch: Buffer, header: BatchHeader, rules: AppendRules, now_ms: int, topic_partition: str
) -> tuple[list[RecordError], bool]:
    """The batch's record errors, and whether one of them is about a timestamp."""
    producer_append_time = header.log_append_time
    if header.is_control or not (producer_append_time or rules.inspect_records):
        return [], False
    if not rules.compacted and not rules.limits_timestamps:
        # Only the type is wrong: every record is refused for it, no record decoded.
        return [(i, _append_time_refused(i)) for i in range(header.records_count)], True
    errors: list[RecordError] = []
    about_timestamp = False
    max_ms = rules.timestamp_difference_max_ms
    for index, record in enumerate(decode_records(batch)):
        if rules.compacted and record.key is None:
            errors.append(
                (
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{topic_partition}.",
                )
            )
        elif (
            rules.limits_timestamps
            and record.timestamp != NO_TIMESTAMP
            and abs(record.timestamp - now_ms) > max_ms
        ):
            errors.append(
                (
                    index,
                    f"Timestamp {record.timestamp} of message with offset {record.offset} is "
                    f"out of range. The timestamp should be within [{now_ms - max_ms}, "
                    f"{now_ms + max_ms}]",
                )
            )
            about_timestamp = True
        elif producer_append_time:
            errors.append((index, _append_time_refused(index)))
            about_timestamp = True
    return errors, about_timestamp


def _append_time_refused(index: int) -> str:
    return (
        f"Invalid timestamp type in message {index}. Producer should not set timestamp type "
        "to LogAppendTime."
    )


def stamp_log_append_time(records: Buffer, now_ms: int) -> bytes:
    """Each batch marked LogAppendTime with ``now_ms`` as its max timestamp, CRC recomputed.

    Only header fields change (the type bit in ``attributes`` and ``max_timestamp``), so a
    compressed batch keeps its compressed records byte for byte.
    """
    out = bytearray(records)
    view = memoryview(out)
    for pos, header in iter_batches(out):
        ATTRIBUTES.pack_into(out, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_BIT)
        MAX_TIMESTAMP.pack_into(out, pos + MAX_TIMESTAMP_OFFSET, now_ms)
        crc = crc32c.crc32c(view[pos + ATTRIBUTES_OFFSET : pos + header.size])
        CRC.pack_into(out, pos + CRC_OFFSET, crc)
    view.release()
    return bytes(out)
