"""Record batches built by kafka-python's encoder: an independent oracle for our parser."""

from __future__ import annotations

from kafka.record.default_records import DefaultRecordBatchBuilder

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def build_batch(
    values: list[bytes],
    *,
    codec: str = "none",
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int | None = None,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODEC_IDS[codec],
        is_transactional=False,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 24,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp_ms, key=None, value=value, headers=[])
    return bytes(builder.build())
