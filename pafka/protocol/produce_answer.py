"""A Produce v8 response, read by hand on the producer's side. Pure.

The generic codec builds an object per field through its schema walker, about 25 microseconds
for a one-partition answer, which every REST produce waits on. The answer is decoded into the
broker's own response types (:mod:`pafka.protocol.produce_codec`), so a test can check that
what the broker writes reads back whole. Layout of the frame (big-endian; response header v0)::

    correlation_id       int32
    responses            int32 count, then per topic:
      name               int16 length, UTF-8
      partition_responses int32 count, then per partition:
        index              int32
        error_code         int16
        base_offset        int64
        log_append_time_ms int64
        log_start_offset   int64
        record_errors      int32 count, then per refused record:
          batch_index        int32
          message            int16 length (-1: null), UTF-8
        error_message      int16 length (-1: null), UTF-8
    throttle_time_ms     int32

Malformed or truncated frames, and bytes after the end, raise :class:`ProtocolError`.
"""

from __future__ import annotations

import struct

from pafka.errors import ProtocolError
from pafka.protocol.produce_codec import (
    PartitionProduceResponse,
    ProduceResponseBody,
    TopicProduceResponse,
)
from pafka.protocol.wire import Reader

# A partition's answer up to its error message, read in one call: when it refused no record and
# has no message (most answers), that is all of it.
_PLAIN_PARTITION = struct.Struct(">ihqqqih")
_NO_RECORD_ERRORS, _NULL_MESSAGE = 0, -1


def decode_produce_answer(frame: memoryview) -> ProduceResponseBody:
    """The body of a Produce v8 response frame (from its correlation id on)."""
    reader = Reader(frame, 4)  # the correlation id was matched by the connection
    plain, plain_size = _PLAIN_PARTITION.unpack_from, _PLAIN_PARTITION.size
    topics = []
    for _ in range(reader.array_length(compact=False)):
        name = reader.string(compact=False)
        partitions = []
        for _ in range(reader.array_length(compact=False)):
            at = reader.pos
            if at + plain_size <= len(frame):
                *fields, record_errors_count, message_length = plain(frame, at)
                if record_errors_count == _NO_RECORD_ERRORS and message_length == _NULL_MESSAGE:
                    reader.pos = at + plain_size
                    partitions.append(PartitionProduceResponse(*fields))
                    continue
            index = reader.int32()
            error_code = reader.int16()
            base_offset = reader.int64()
            log_append_time_ms = reader.int64()
            log_start_offset = reader.int64()
            record_errors = tuple(
                (reader.int32(), reader.nullable_string(compact=False))
                for _ in range(reader.array_length(compact=False))
            )
            error_message = reader.nullable_string(compact=False)
            partitions.append(
                PartitionProduceResponse(
                    index,
                    error_code,
                    base_offset,
                    log_append_time_ms,
                    log_start_offset,
                    error_message,
                    record_errors,
                )
            )
        topics.append(TopicProduceResponse(name, partitions))
    throttle_time_ms = reader.int32()
    if reader.pos != len(frame):
        raise ProtocolError(f"{len(frame) - reader.pos} bytes after the Produce response")
    return ProduceResponseBody(topics, throttle_time_ms)
