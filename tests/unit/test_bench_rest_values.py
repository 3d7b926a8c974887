"""The pafka-rest bench consumer's decoding (aiokafka's record decoder over the batch format):
the values pafka wrote, only those in the range asked, none of a control batch, and a batch
whose CRC does not hold refused."""

from __future__ import annotations

import base64
import struct
import time

import orjson
import pytest

from bench.compare import pafka_rest
from pafka.errors import CorruptMessageError
from pafka.records.batch import iter_batches
from pafka.records.control import build_marker
from pafka.records.encoding import build_batch


def _answer(batches: int, per_batch: int, value_bytes: int) -> tuple[bytes, list[bytes]]:
    values = [f"{n:08d}".encode() * (value_bytes // 8) for n in range(batches * per_batch)]
    body = b"".join(
        build_batch(
            [(None, v, ()) for v in values[b * per_batch : (b + 1) * per_batch]],
            base_offset=b * per_batch,
        )
        for b in range(batches)
    )
    return body, values


@pytest.mark.parametrize(("batches", "per_batch", "value_bytes"), [(3, 4, 16), (5, 200, 96)])
def test_values_in_the_range_asked(batches: int, per_batch: int, value_bytes: int) -> None:
    body, values = _answer(batches, per_batch, value_bytes)
    assert pafka_rest._values(body, 0, len(values)) == values
    # A batch may begin before the offset asked for, and reach past the records wanted.
    assert pafka_rest._values(body, 2, len(values) - 3) == values[2:-3]
    assert pafka_rest._values(body, per_batch, 2 * per_batch) == values[per_batch : 2 * per_batch]
    assert pafka_rest._values(body, len(values), len(values) + 5) == []


def test_a_control_batch_holds_no_values() -> None:
    body, values = _answer(1, 3, 16)
    marker = bytearray(
        build_marker(
            producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=0, timestamp_ms=0
        )
    )
    struct.pack_into(">q", marker, 0, 3)  # the base offset, outside the CRC
    assert pafka_rest._values(body + bytes(marker), 0, 10) == values


def test_a_damaged_batch_is_refused() -> None:
    body, _ = _answer(2, 5, 16)
    damaged = bytearray(body)
    damaged[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        pafka_rest._values(bytes(damaged), 0, 10)


@pytest.mark.parametrize("records", [0, 1, 3, 500])
def test_a_produce_body_holds_the_records_asked_all_stamped_alike(records: int) -> None:
    body = orjson.loads(pafka_rest._produce_body(100, records))
    values = [base64.b64decode(r["value"], validate=True) for r in body["records"]]
    assert len(values) == records
    assert all(len(v) == 100 for v in values)
    assert len(set(values)) == min(records, 1)  # one stamp: the request goes out whole
    if values:
        (sent_ns,) = struct.unpack_from(">q", values[0])
        assert abs(time.time_ns() - sent_ns) < 60 * 10**9


def test_whole_batches_stop_before_a_batch_still_arriving() -> None:
    body, _ = _answer(3, 4, 16)
    sizes = [h.size for _, h in iter_batches(body)]
    assert pafka_rest._whole_batches(body) == (len(body), 12)
    assert pafka_rest._whole_batches(body[:-1]) == (sizes[0] + sizes[1], 8)
    assert pafka_rest._whole_batches(body[: sizes[0] - 1]) == (0, 0)
    assert pafka_rest._whole_batches(b"") == (0, 0)
