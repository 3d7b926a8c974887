"""Fetch responses encoded by hand: the broker's read path.

A fetch response is a few fixed fields around each partition's record bytes, which come from
segment files and are copied once, into the frame. Tests check the bytes against the generic
codec (kafka-python's schema walker) for every served version.

Response (header: correlation_id int32 [v12: tagged fields], flexible from v12, KIP-482)::

    throttle_time_ms      int32
    error_code            int16   (v7+)
    session_id            int32   (v7+)
    responses             array of: topic string,
        partitions array of:
            partition_index int32, error_code int16, high_watermark int64,
            last_stable_offset int64, log_start_offset int64 (v5+),
            aborted_transactions nullable array of (producer_id int64, first_offset int64),
            preferred_read_replica int32 (v11+), records nullable bytes
            [v12: tagged fields]
        [v12: tagged fields]
    [v12: tagged fields]
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pafka.protocol.wire import (
    INT16,
    INT32,
    INT64,
    NO_TAGGED_FIELDS,
    Buffer,
    end_frame,
    start_response,
    write_array_length,
    write_bytes,
    write_string,
)

FLEXIBLE_FROM_VERSION = 12


@dataclass(frozen=True, slots=True)
class PartitionData:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # Records are never null in a response: librdkafka refuses a null record set ("invalid
    # MessageSetSize -1") and drops the whole response; Kafka sends empty ones.
    records: Buffer = b""
    preferred_read_replica: int = -1


@dataclass(frozen=True, slots=True)
class FetchableTopicResponse:
    topic: str
    partitions: list[PartitionData]


@dataclass(frozen=True, slots=True)
class FetchResponseBody:
    """A Fetch response that encodes itself; attribute names are the generic codec's.

    No aborted transactions are ever reported (the broker has no transactions): the field is
    written as null, as the generic codec writes ``aborted_transactions=None``.
    """

    responses: list[FetchableTopicResponse] = field(default_factory=list)
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0

    def encode_frame(self, version: int, correlation_id: int) -> bytearray:
        """The whole response frame: size, response header, body."""
        flexible = version >= FLEXIBLE_FROM_VERSION
        out = start_response(correlation_id, flexible)
        out += INT32.pack(self.throttle_time_ms)
        if version >= 7:
            out += INT16.pack(self.error_code)
            out += INT32.pack(self.session_id)
        write_array_length(out, len(self.responses), flexible)
        for topic in self.responses:
            write_string(out, topic.topic, flexible)
            write_array_length(out, len(topic.partitions), flexible)
            for p in topic.partitions:
                out += INT32.pack(p.partition_index)
                out += INT16.pack(p.error_code)
                out += INT64.pack(p.high_watermark)
                out += INT64.pack(p.last_stable_offset)
                if version >= 5:
                    out += INT64.pack(p.log_start_offset)
                write_array_length(out, None, flexible)  # aborted_transactions
                if version >= 11:
                    out += INT32.pack(p.preferred_read_replica)
                write_bytes(out, p.records, flexible)
                if flexible:
                    out += NO_TAGGED_FIELDS
            if flexible:
                out += NO_TAGGED_FIELDS
        if flexible:
            out += NO_TAGGED_FIELDS
        return end_frame(out)
