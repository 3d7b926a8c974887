"""Fetch requests decoded and Fetch responses encoded by hand: the broker's read path.

A fetch request is a few numbers per partition, decoded directly. A fetch response is a few
fixed fields around each partition's record bytes, which come from segment files: small ones
copied into the frame, large ones pieces of their own (file regions on the broker, sent with
``sendfile``). Tests check both directions against the generic codec
(kafka-python's schema walker) for every served version.

Request (header v1, or v2 from v12; flexible from v12, KIP-482)::

    replica_id int32, max_wait_ms int32, min_bytes int32, max_bytes int32 (v3+),
    isolation_level int8 (v4+), session_id int32 (v7+), session_epoch int32 (v7+),
    topics array of: topic string,
        partitions array of:
            partition int32, current_leader_epoch int32 (v9+), fetch_offset int64,
            last_fetched_epoch int32 (v12+), log_start_offset int64 (v5+),
            partition_max_bytes int32 [v12: tagged fields]
        [v12: tagged fields]
    forgotten_topics_data (v7+) array of: topic string, partitions array of int32
        [v12: tagged fields]
    rack_id string (v11+)
    [v12: tagged fields: cluster_id, not used]

Response (header: correlation_id int32 [v12: tagged fields], flexible from v12, KIP-482)::

    throttle_time_ms      int32   (v1+)
    error_code            int16   (v7+)
    session_id            int32   (v7+)
    responses             array of: topic string,
        partitions array of:
            partition_index int32, error_code int16, high_watermark int64,
            last_stable_offset int64 (v4+), log_start_offset int64 (v5+),
            aborted_transactions (v4+) nullable array of (producer_id int64, first_offset int64),
            preferred_read_replica int32 (v11+), records nullable bytes
            [v12: tagged fields]
        [v12: tagged fields]
    [v12: tagged fields]
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from pafka.errors import ProtocolError
from pafka.protocol.wire import (
    HEADER_FIXED_BYTES,
    INT16,
    INT32,
    INT64,
    NO_TAGGED_FIELDS,
    Buffer,
    Reader,
    start_response,
    write_array_length,
    write_bytes,
    write_bytes_length,
    write_string,
)
from pafka.storage.region import FileRegion

FLEXIBLE_FROM_VERSION = 12
# Record sets from this size on are written from their own buffer rather than copied into the
# frame; smaller ones cost less copied than as one more piece of the write.
SEPARATE_RECORDS_BYTES = 16 * 1024
ABORTED_TXN = struct.Struct(
    ">"
    "q"  # producer_id
    "q"  # first_offset
)


@dataclass(frozen=True, slots=True)
class FetchPartition:
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class FetchTopic:
    topic: str
    partitions: list[FetchPartition]


@dataclass(frozen=True, slots=True)
class ForgottenTopic:
    topic: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class FetchRequestBody:
    """A decoded Fetch request body; attribute names are the generic codec's."""

    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: list[FetchTopic]
    forgotten_topics_data: list[ForgottenTopic]
    rack_id: str


def decode_fetch_request(frame: memoryview, version: int) -> tuple[str | None, FetchRequestBody]:
    """(client_id, body) of a Fetch request frame whose header was already peeked."""
    flexible = version >= FLEXIBLE_FROM_VERSION
    r = Reader(frame, HEADER_FIXED_BYTES)
    client_id = r.nullable_string(compact=False)  # compact in no header version
    if flexible:
        r.skip_tagged_fields()
    replica_id, max_wait_ms, min_bytes = r.int32(), r.int32(), r.int32()
    # Before v3 only partitions were limited: no response-wide limit.
    max_bytes = r.int32() if version >= 3 else 0x7FFFFFFF
    isolation_level = r.int8() if version >= 4 else 0
    session_id, session_epoch = (r.int32(), r.int32()) if version >= 7 else (0, -1)
    topics = []
    for _ in range(r.array_length(flexible)):
        topic = r.string(flexible)
        partitions = []
        for _ in range(r.array_length(flexible)):
            partition = r.int32()
            leader_epoch = r.int32() if version >= 9 else -1
            fetch_offset = r.int64()
            last_fetched_epoch = r.int32() if version >= 12 else -1
            log_start_offset = r.int64() if version >= 5 else -1
            partitions.append(
                FetchPartition(
                    partition,
                    leader_epoch,
                    fetch_offset,
                    last_fetched_epoch,
                    log_start_offset,
                    r.int32(),
                )
            )
            if flexible:
                r.skip_tagged_fields()
        if flexible:
            r.skip_tagged_fields()
        topics.append(FetchTopic(topic, partitions))
    forgotten = []
    if version >= 7:
        for _ in range(r.array_length(flexible)):
            topic = r.string(flexible)
            forgotten.append(
                ForgottenTopic(topic, [r.int32() for _ in range(r.array_length(flexible))])
            )
            if flexible:
                r.skip_tagged_fields()
    rack_id = r.string(flexible) if version >= 11 else ""
    if flexible:
        r.skip_tagged_fields()
    if r.pos != len(frame):
        raise ProtocolError(f"{len(frame) - r.pos} bytes after the Fetch request")
    body = FetchRequestBody(
        replica_id,
        max_wait_ms,
        min_bytes,
        max_bytes,
        isolation_level,
        session_id,
        session_epoch,
        topics,
        forgotten,
        rack_id,
    )
    return client_id, body


@dataclass(frozen=True, slots=True)
class PartitionData:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # Records are never null in a response: librdkafka refuses a null record set ("invalid
    # MessageSetSize -1") and drops the whole response; Kafka sends empty ones.
    # A file region (a record set of SEPARATE_RECORDS_BYTES or more on the broker's wire path)
    # is written by the transport with sendfile where it can.
    records: Buffer | FileRegion = b""
    preferred_read_replica: int = -1
    # (producer_id, first_offset) of the aborted transactions a read_committed consumer must
    # drop from these records; None (null on the wire) for read_uncommitted, as Kafka sends.
    aborted_transactions: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class FetchableTopicResponse:
    topic: str
    partitions: list[PartitionData]


@dataclass(frozen=True, slots=True)
class FetchResponseBody:
    """A Fetch response that encodes itself; attribute names are the generic codec's.

    Aborted transactions are written only for read_committed fetches; otherwise the field is
    null, as the generic codec writes ``aborted_transactions=None``.
    """

    responses: list[FetchableTopicResponse] = field(default_factory=list)
    throttle_time_ms: int = 0
    error_code: int = 0
    session_id: int = 0

    def encode_frame(self, version: int, correlation_id: int) -> bytearray:
        """The whole response frame: size, response header, body."""
        parts = self.encode_parts(version, correlation_id)
        return bytearray(b"".join(p.read() if isinstance(p, FileRegion) else p for p in parts))

    def encode_parts(self, version: int, correlation_id: int) -> list[Buffer | FileRegion]:
        """The whole response frame as pieces to write in order.

        Record sets of ``SEPARATE_RECORDS_BYTES`` or more are pieces of their own, so that the
        transport hands them to the socket together with the fields around them (one writev)
        instead of Python copying them into the frame first; a file region is always one.
        """
        flexible = version >= FLEXIBLE_FROM_VERSION
        first = out = start_response(correlation_id, flexible)
        parts: list[Buffer | FileRegion] = []
        if version >= 1:
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
                if version >= 4:
                    out += INT64.pack(p.last_stable_offset)
                if version >= 5:
                    out += INT64.pack(p.log_start_offset)
                if version >= 4:
                    _write_aborted(out, p.aborted_transactions, flexible)
                if version >= 11:
                    out += INT32.pack(p.preferred_read_replica)
                records = p.records
                if isinstance(records, FileRegion) or len(records) >= SEPARATE_RECORDS_BYTES:
                    write_bytes_length(out, len(records), flexible)
                    parts += (out, records)
                    out = bytearray()
                else:
                    write_bytes(out, records, flexible)
                if flexible:
                    out += NO_TAGGED_FIELDS
            if flexible:
                out += NO_TAGGED_FIELDS
        if flexible:
            out += NO_TAGGED_FIELDS
        parts.append(out)
        INT32.pack_into(first, 0, sum(len(part) for part in parts) - INT32.size)
        return parts


def _write_aborted(
    out: bytearray, aborted: tuple[tuple[int, int], ...] | None, flexible: bool
) -> None:
    """aborted_transactions: a nullable array of (producer_id int64, first_offset int64)."""
    if aborted is None:
        write_array_length(out, None, flexible)
        return
    write_array_length(out, len(aborted), flexible)
    for producer_id, first_offset in aborted:
        out += ABORTED_TXN.pack(producer_id, first_offset)
        if flexible:
            out += NO_TAGGED_FIELDS
