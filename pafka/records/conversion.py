"""Converting between legacy message sets (magic 0 and 1) and v2 record batches, as Kafka does.

Pure functions over bytes. The broker stores v2 batches only: producers of Produce v0-v2 may
send legacy messages, which are up-converted once on append; consumers of Fetch v0-v3 read the
format their version allows, down-converted from the stored batches.

Up-conversion follows Kafka's ``LogValidator``:

* every message of the set must have the first one's magic (else INVALID_RECORD);
* a producer may not mark a magic 1 message or wrapper LogAppendTime (INVALID_TIMESTAMP);
* plain messages become one uncompressed batch; a compressed wrapper becomes one batch with the
  wrapper's codec, and a compressed set must hold exactly one wrapper (else INVALID_RECORD);
* keys, values (null ones too) and timestamps carry over; magic 0 has no timestamps, so its
  records get NO_TIMESTAMP (-1); inner offsets are dropped, the broker assigns offsets.

Down-conversion follows Kafka's ``RecordsUtil.downConvert`` and ``LazyDownConversionRecords``:

* one converted unit per batch: plain messages for an uncompressed batch (those below the fetch
  offset dropped), one wrapper keeping the batch's codec for a compressed one (all its records:
  old consumers skip the ones below their offset); offsets and timestamps kept, headers dropped,
  control batches skipped; a magic 1 wrapper's inner offsets are relative to its first record;
* zstd cannot be written in magic 0 or 1: UNSUPPORTED_COMPRESSION_TYPE when it is the first
  batch to convert, else the response stops before it (the consumer meets the error on its
  next fetch);
* the converted set takes as many bytes as the stored ones did, or the first converted unit if
  that is larger, and is cut there: a partial trailing message is what old consumers expect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from pafka.errors import InvalidRecordError, InvalidTimestampError, UnsupportedCompressionTypeError
from pafka.records.append_validation import REJECTED_TIMESTAMP
from pafka.records.batch import MAGIC_V2, TIMESTAMP_TYPE_BIT, Buffer, Codec, iter_batches
from pafka.records.encoding import RecordInput, build_batch, decode_records
from pafka.records.legacy import (
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    Message,
    inner_messages,
    iter_messages,
    write_message,
    write_wrapper,
)


class Converted(NamedTuple):
    records: bytes
    records_converted: int  # what Kafka's *MessageConversionsPerSec meters count


def is_legacy(records: Buffer) -> bool:
    """Whether a produce payload starts with a magic 0 or 1 message (one byte looked at)."""
    return len(records) > MAGIC_OFFSET and records[MAGIC_OFFSET] < MAGIC_V2


def up_convert(records: Buffer) -> Converted:
    """A legacy message set as the one v2 batch Kafka would append for it (base offset 0)."""
    shallow = list(iter_messages(records))
    if not shallow:
        raise InvalidRecordError("the produce request carries no message")
    magic = shallow[0].magic
    if any(m.magic != magic for m in shallow):
        raise InvalidRecordError("messages of different magic in one produce request")
    if any(m.log_append_time for m in shallow):
        raise InvalidTimestampError(REJECTED_TIMESTAMP)
    codecs = {m.codec for m in shallow}
    codec = Codec.NONE
    if codecs != {Codec.NONE}:
        if len(shallow) > 1:
            raise InvalidRecordError("a compressed message set must hold exactly one wrapper")
        codec = shallow[0].codec
    messages: list[Message] = []
    for message in shallow:
        messages += inner_messages(message)
    if not messages:
        raise InvalidRecordError("a compressed wrapper holds no message")
    inputs: list[RecordInput] = [(m.key, m.value, ()) for m in messages]
    stamps = [m.timestamp if magic > 0 else NO_TIMESTAMP for m in messages]
    batch = build_batch(inputs, timestamps_ms=stamps, compression=codec)
    return Converted(batch, len(messages))


def _convert_batch(batch: Buffer, codec: Codec, magic: int, fetch_offset: int) -> tuple[bytes, int]:
    """One stored batch as messages of ``magic``; (bytes, records converted)."""
    header = next(iter_batches(batch))[1]
    records = list(decode_records(batch))
    if codec is Codec.NONE:
        records = [r for r in records if r.offset >= fetch_offset]
    if not records:
        return b"", 0
    append_time = header.log_append_time and magic > 0
    out = bytearray()
    if codec is Codec.NONE:
        for r in records:
            write_message(
                out, r.offset, magic, r.key, r.value, timestamp=_stamp(r.timestamp, magic),
                attributes=_timestamp_type(append_time),
            )  # fmt: skip
        return bytes(out), len(records)
    base = records[0].offset
    inner = bytearray()
    for r in records:
        write_message(
            inner, r.offset - base if magic > 0 else r.offset, magic, r.key, r.value,
            timestamp=_stamp(r.timestamp, magic), attributes=_timestamp_type(append_time),
        )  # fmt: skip
    wrapper_stamp = header.max_timestamp if magic > 0 else NO_TIMESTAMP
    write_wrapper(
        out, codec, magic, bytes(inner), records[-1].offset, timestamp=wrapper_stamp,
        log_append_time=append_time,
    )  # fmt: skip
    return bytes(out), len(records)


def _stamp(timestamp: int, magic: int) -> int:
    return timestamp if magic > 0 else NO_TIMESTAMP


def _timestamp_type(log_append_time: bool) -> int:
    return TIMESTAMP_TYPE_BIT if log_append_time else 0


def _units(records: Buffer, magic: int, fetch_offset: int) -> Iterator[tuple[bytes, int]]:
    view = memoryview(records)
    produced = False
    for pos, header in iter_batches(view):
        if header.is_control:
            continue
        if header.codec is Codec.ZSTD:
            if not produced:
                raise UnsupportedCompressionTypeError(
                    f"zstd batches cannot be down-converted to message format v{magic}"
                )
            return
        batch = view[pos : pos + header.size]
        unit, count = _convert_batch(batch, header.codec, magic, fetch_offset)
        if unit:
            produced = True
            yield unit, count


def down_convert(
    records: Buffer, magic: int, fetch_offset: int, *, hard_limit_bytes: int | None = None
) -> Converted:
    """Whole stored v2 batches (a fetch's read) as a message set of ``magic`` (0 or 1).

    ``hard_limit_bytes`` is a partition limit that even the first batch must respect (Fetch
    v0-v2, where Kafka returns no whole message rather than exceed it).
    """
    if magic not in (0, 1):
        raise ValueError(f"down-conversion is to magic 0 or 1, not {magic}")
    if not records:
        return Converted(b"", 0)
    first = next(iter_batches(records))[1]
    if hard_limit_bytes is not None and first.size > hard_limit_bytes:
        return Converted(b"", 0)
    committed = len(records)
    out = bytearray()
    converted = 0
    for unit, count in _units(records, magic, fetch_offset):
        if not out:
            committed = max(committed, len(unit))
        out += unit
        converted += count
        if len(out) >= committed:
            break
    return Converted(bytes(out[:committed]), converted)
