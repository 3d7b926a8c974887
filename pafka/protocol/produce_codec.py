"""Produce requests decoded and Produce responses encoded by hand: the broker's write path.

The generic codec (kafka-python's schema walker) costs tens of microseconds per request in
object building; a produce request is a handful of fields around the record batches, so it is
read here directly, with each partition's records left as a view into the frame (no copy).
Tests check both directions against the generic codec for every served version.

Request (header v1, or v2 from Produce v9: flexible, KIP-482)::

    api_key int16 | api_version int16 | correlation_id int32 | client_id nullable int16 string
    [v9: tagged fields]
    transactional_id  nullable string (v3+)
    acks              int16
    timeout_ms        int32
    topic_data        array of: name string,
                                partition_data array of: index int32, records nullable bytes
                                                         [v9: tagged fields]
                                [v9: tagged fields]
    [v9: tagged fields]

Response (header: correlation_id int32 [v9: tagged fields])::

    responses         array of: name string,
                                partition_responses array of:
                                    index int32, error_code int16, base_offset int64,
                                    log_append_time_ms int64 (v2+), log_start_offset int64 (v5+),
                                    record_errors array (v8+) of: batch_index int32,
                                        batch_index_error_message nullable [v9: tagged fields]
                                    error_message nullable (v8+)
                                    [v9: tagged fields]
                                [v9: tagged fields]
    throttle_time_ms  int32 (v1+)
    [v9: tagged fields]

Produce v0-v2 may carry legacy message sets (magic 0 and 1) in ``records``; the codec leaves
them as views like any other, and the handler converts them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pafka.errors import ProtocolError
from pafka.protocol.wire import (
    HEADER_FIXED_BYTES,
    INT16,
    INT32,
    INT64,
    NO_TAGGED_FIELDS,
    Reader,
    end_frame,
    start_response,
    write_array_length,
    write_string,
)

FLEXIBLE_FROM_VERSION = 9


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    index: int
    records: memoryview | None


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    name: str
    partition_data: list[PartitionProduceData]


@dataclass(frozen=True, slots=True)
class ProduceRequestBody:
    """A decoded Produce request body; attribute names are the generic codec's."""

    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[TopicProduceData]


def decode_produce_request(
    frame: memoryview, version: int
) -> tuple[str | None, ProduceRequestBody]:
    """(client_id, body) of a Produce request frame whose header was already peeked."""
    flexible = version >= FLEXIBLE_FROM_VERSION
    reader = Reader(frame, HEADER_FIXED_BYTES)
    client_id = reader.nullable_string(compact=False)  # compact in no header version
    if flexible:
        reader.skip_tagged_fields()
    transactional_id = reader.nullable_string(flexible) if version >= 3 else None
    acks = reader.int16()
    timeout_ms = reader.int32()
    topics = []
    for _ in range(reader.array_length(flexible)):
        name = reader.string(flexible)
        partitions = []
        for _ in range(reader.array_length(flexible)):
            index = reader.int32()
            partitions.append(PartitionProduceData(index, reader.nullable_bytes(flexible)))
            if flexible:
                reader.skip_tagged_fields()
        if flexible:
            reader.skip_tagged_fields()
        topics.append(TopicProduceData(name, partitions))
    if flexible:
        reader.skip_tagged_fields()
    if reader.pos != len(frame):
        raise ProtocolError(f"{len(frame) - reader.pos} bytes after the Produce request")
    return client_id, ProduceRequestBody(transactional_id, acks, timeout_ms, topics)


@dataclass(frozen=True, slots=True)
class PartitionProduceResponse:
    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    # KIP-467: (index of a refused record in its batch, why), v8+.
    record_errors: tuple[tuple[int, str | None], ...] = ()


@dataclass(frozen=True, slots=True)
class TopicProduceResponse:
    name: str
    partition_responses: list[PartitionProduceResponse]


@dataclass(frozen=True, slots=True)
class ProduceResponseBody:
    """A Produce response that encodes itself; attribute names are the generic codec's."""

    responses: list[TopicProduceResponse] = field(default_factory=list)
    throttle_time_ms: int = 0

    def encode_frame(self, version: int, correlation_id: int) -> bytearray:
        """The whole response frame: size, response header, body."""
        flexible = version >= FLEXIBLE_FROM_VERSION
        out = start_response(correlation_id, flexible)
        write_array_length(out, len(self.responses), flexible)
        for topic in self.responses:
            write_string(out, topic.name, flexible)
            write_array_length(out, len(topic.partition_responses), flexible)
            for p in topic.partition_responses:
                out += INT32.pack(p.index)
                out += INT16.pack(p.error_code)
                out += INT64.pack(p.base_offset)
                if version >= 2:
                    out += INT64.pack(p.log_append_time_ms)
                if version >= 5:
                    out += INT64.pack(p.log_start_offset)
                if version >= 8:
                    write_array_length(out, len(p.record_errors), flexible)
                    for batch_index, reason in p.record_errors:
                        out += INT32.pack(batch_index)
                        write_string(out, reason, flexible)
                        if flexible:
                            out += NO_TAGGED_FIELDS
                    write_string(out, p.error_message, flexible)
                if flexible:
                    out += NO_TAGGED_FIELDS
            if flexible:
                out += NO_TAGGED_FIELDS
        if version >= 1:
            out += INT32.pack(self.throttle_time_ms)
        if flexible:
            out += NO_TAGGED_FIELDS
        return end_frame(out)
