"""The pafka-rest bench consumer's decoding: both ways (record by record for a small answer,
Spark's column decoder for a large one) give the same values, only those in the range asked,
and refuse a batch whose CRC does not hold."""

from __future__ import annotations

import base64
import struct
import time

import orjson
import pytest

from bench.compare import pafka_rest
from pafka.errors import CorruptMessageError
from pafka.records.batch import iter_batches
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
    small = len(body) <= pafka_rest.SMALL_ANSWER_BYTES
    assert small == (batches * per_batch < 100)  # each case takes the way it names
    assert pafka_rest._values(body, "t", 0, 0, len(values)) == values
    # A batch may begin before the offset asked for, and reach past the records wanted.
    assert pafka_rest._values(body, "t", 0, 2, len(values) - 3) == values[2:-3]


def test_both_ways_agree_on_one_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    body, values = _answer(4, 30, 40)
    by_record = pafka_rest._values(body, "t", 0, 5, 100)
    monkeypatch.setattr(pafka_rest, "SMALL_ANSWER_BYTES", 0)
    assert pafka_rest._values(body, "t", 0, 5, 100) == by_record == values[5:100]


@pytest.mark.parametrize("small_answer_bytes", [0, 1 << 20])
def test_a_damaged_batch_is_refused(
    monkeypatch: pytest.MonkeyPatch, small_answer_bytes: int
) -> None:
    monkeypatch.setattr(pafka_rest, "SMALL_ANSWER_BYTES", small_answer_bytes)
    body, _ = _answer(2, 5, 16)
    damaged = bytearray(body)
    damaged[-1] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        pafka_rest._values(bytes(damaged), "t", 0, 0, 10)


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


def test_the_decoders_are_warmed_by_reading_back_what_they_are_given() -> None:
    for value_bytes in (8, 100, 4096):
        pafka_rest._warm_decoders(value_bytes)


def test_whole_batches_stop_before_a_batch_still_arriving() -> None:
    body, _ = _answer(3, 4, 16)
    sizes = [h.size for _, h in iter_batches(body)]
    assert pafka_rest._whole_batches(body) == (len(body), 12)
    assert pafka_rest._whole_batches(body[:-1]) == (sizes[0] + sizes[1], 8)
    assert pafka_rest._whole_batches(body[: sizes[0] - 1]) == (0, 0)
    assert pafka_rest._whole_batches(b"") == (0, 0)
