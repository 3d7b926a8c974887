"""Message-format conversion at the edge of the produce and fetch handlers (old clients only).

Produce v0-v2 may carry legacy message sets (magic 0 or 1): they are up-converted once per
partition before ``append_as_leader``, so the log holds v2 batches only. Fetch v0-v1 reads
magic 0 and Fetch v2-v3 magic 1: their records are read as bytes (never file regions) and
down-converted. Kafka's rules (``KafkaApis``):

* a consumer's fetch that needs conversion of a topic whose ``message.downconversion.enable`` is
  false gets UNSUPPORTED_VERSION for that partition; an empty read needs none;
* a topic whose ``compression.type`` is zstd cannot be read by consumers' Fetch below v10
  (KIP-110), these or v4-v9: UNSUPPORTED_COMPRESSION_TYPE (``check_zstd_readable``);
* follower fetches are never converted (they never come here);
* Fetch v0-v2 limit each partition strictly (no whole first batch beyond its max bytes), v3
  gives the first partition with data at least one whole batch, as v4+ does.

Records converted are counted as Kafka's ``*MessageConversionsPerSec`` are.
"""

from __future__ import annotations

from pafka.errors import UnsupportedCompressionTypeError, UnsupportedVersionError
from pafka.records.batch import Codec, iter_batches
from pafka.records.conversion import down_convert, is_legacy, up_convert
from pafka.storage.region import FileRegion
from services.broker.handlers.context import RequestContext
from services.broker.partition import Partition, ReadResult

# Versions below these carry legacy message sets.
FIRST_V2_PRODUCE_VERSION = 3
FIRST_V2_FETCH_VERSION = 4
FIRST_MAGIC_1_FETCH_VERSION = 2
FIRST_SOFT_LIMIT_FETCH_VERSION = 3  # KIP-74: a whole first batch even beyond the limits
FIRST_ZSTD_PRODUCE_VERSION = 7  # KIP-110: older producers cannot have meant zstd
FIRST_ZSTD_FETCH_VERSION = 10  # KIP-110: older consumers may not decode it


def produced_as_v2(
    ctx: RequestContext, topic: str, records: bytes | memoryview
) -> bytes | memoryview:
    """The records of a Produce v0-v2 partition as v2 batches (v2 ones pass unchanged)."""
    if not is_legacy(records):
        return records
    converted = up_convert(records)
    ctx.broker.metrics.produce_conversions.labels(topic).inc(converted.records_converted)
    return converted.records


def refuse_zstd(records: bytes | memoryview, version: int) -> None:
    """Produce v3-v6 carry v2 batches, but not zstd ones: Kafka refuses those
    (UNSUPPORTED_COMPRESSION_TYPE), one header read per batch."""
    for _, header in iter_batches(records):
        if header.codec is Codec.ZSTD:
            raise UnsupportedCompressionTypeError(
                f"zstd-compressed batches need Produce v{FIRST_ZSTD_PRODUCE_VERSION}+, "
                f"not v{version}"
            )


def check_zstd_readable(ctx: RequestContext, partition: Partition) -> None:
    """A consumer's Fetch below v10 of a topic configured zstd is refused, as Kafka does (by the
    topic's ``compression.type``, not the batches: one comparison per partition)."""
    if partition.config.compression_type == "zstd":
        raise UnsupportedCompressionTypeError(
            f"topic {partition.topic} is zstd-compressed; Fetch v{ctx.api_version} cannot read it"
        )


def read_legacy(ctx: RequestContext, partition: Partition, offset: int, limit: int) -> ReadResult:
    """A consumer's Fetch v0-v3 read of ``partition``, down-converted."""
    result = partition.read(offset, limit, up_to_high_watermark=True)
    if not result.records:
        return result
    if not partition.config.message_downconversion_enable:
        raise UnsupportedVersionError(
            f"topic {partition.topic} has message.downconversion.enable=false; "
            f"Fetch v{ctx.api_version} needs down-conversion"
        )
    version = ctx.api_version
    magic = 1 if version >= FIRST_MAGIC_1_FETCH_VERSION else 0
    hard_limit = None if version >= FIRST_SOFT_LIMIT_FETCH_VERSION else limit
    records = result.records
    stored = records.read() if isinstance(records, FileRegion) else records
    converted = down_convert(stored, magic, offset, hard_limit_bytes=hard_limit)
    ctx.broker.metrics.fetch_conversions.labels(partition.topic).inc(converted.records_converted)
    return ReadResult(
        converted.records, result.high_watermark, result.log_start_offset, result.log_end_offset
    )
