"""The leader's append-time checks and LogAppendTime stamping (Kafka's LogValidator rules),
with kafka-python's record reader as the independent decoder of stamped batches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from pafka.errors import InvalidRecordError, InvalidTimestampError, KafkaApiError
from pafka.records.append_validation import (
    MAX_TIMESTAMP_OFFSET,
    REJECTED,
    REJECTED_TIMESTAMP,
    AppendRules,
    check_records,
    producer_set_append_time,
    stamp_log_append_time,
)
from pafka.records.batch import (
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    CRC,
    CRC_OFFSET,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    Codec,
    crc_of,
    iter_batches,
    read_header,
    validate,
)
from pafka.records.conversion import down_convert, up_convert
from pafka.records.encoding import RecordInput, build_batch, decode_records
from pafka.records.legacy import iter_records, write_message, write_wrapper

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
NOW_MS = 1_700_000_000_000
TP = "orders-3"

keys = st.none() | st.binary(max_size=12)
records_strategy = st.lists(
    st.tuples(keys, st.none() | st.binary(max_size=64), st.just(())), min_size=1, max_size=10
)


def _batch(
    records: list[RecordInput], stamps: list[int] | None = None, codec: Codec = Codec.NONE
) -> bytes:
    return build_batch(records, timestamps_ms=stamps or [NOW_MS] * len(records), compression=codec)


def _with_attribute_bits(batch: bytes, bits: int) -> bytes:
    """``batch`` with attribute ``bits`` set and its CRC made good again."""
    out = bytearray(batch)
    out[ATTRIBUTES_OFFSET + 1] |= bits
    CRC.pack_into(out, CRC_OFFSET, crc_of(out, 0, read_header(out)))
    return bytes(out)


def _refusal(records: bytes, rules: AppendRules, now_ms: int = NOW_MS) -> KafkaApiError | None:
    try:
        check_records(records, rules, now_ms, TP)
    except KafkaApiError as exc:
        return exc
    return None


# -- LogAppendTime stamping ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    records=records_strategy,
    codec=st.sampled_from(CODECS),
    now_ms=st.integers(0, 2**50),
    batches=st.integers(1, 3),
)
def test_stamped_batches_validate_and_read_as_log_append_time(
    records: list[RecordInput], codec: Codec, now_ms: int, batches: int
) -> None:
    stamps = [NOW_MS - 1000 * i for i in range(len(records))]
    payload = b"".join(_batch(records, stamps, codec) for _ in range(batches))
    stamped = stamp_log_append_time(payload, now_ms)

    assert len(stamped) == len(payload)
    headers = validate(stamped, 2**31 - 1)  # every CRC good again
    assert len(headers) == batches
    for (pos, header), (_, before) in zip(
        iter_batches(stamped), iter_batches(payload), strict=True
    ):
        assert header.log_append_time
        assert header.max_timestamp == now_ms
        assert header.codec is codec
        assert header.base_timestamp == before.base_timestamp
        # The (compressed) records are the producer's bytes, never recompressed.
        assert (
            stamped[pos + HEADER_SIZE : pos + header.size]
            == payload[pos + HEADER_SIZE : pos + before.size]
        )
        decoded = list(decode_records(stamped[pos : pos + header.size]))
        assert [r.timestamp for r in decoded] == [now_ms] * len(records)
        assert [(r.key, r.value) for r in decoded] == [(k, v) for k, v, _ in records]
    # kafka-python, an independent reader, sees type 1 and the broker's time.
    if codec is not Codec.ZSTD or _has_zstd():
        read = MemoryRecords(stamped)
        seen = []
        while (batch := read.next_batch()) is not None:
            seen += [(r.timestamp_type, r.timestamp, r.key, r.value) for r in batch]
        assert seen == [(1, now_ms, k, v) for k, v, _ in records] * batches


def _has_zstd() -> bool:
    from kafka import codec

    return bool(codec.has_zstd())


def test_stamping_changes_only_the_type_bit_max_timestamp_and_crc() -> None:
    batch = _batch([(b"k", b"v", ())], [NOW_MS - 5], Codec.GZIP)
    stamped = stamp_log_append_time(batch, NOW_MS)
    changed = [i for i, (a, b) in enumerate(zip(batch, stamped, strict=True)) if a != b]
    assert changed and all(i < MAX_TIMESTAMP_OFFSET + 8 for i in changed)
    header = read_header(stamped)
    assert header.attributes == read_header(batch).attributes | TIMESTAMP_TYPE_BIT


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.LZ4])
def test_stamped_batches_down_convert_to_magic_1_as_log_append_time(codec: Codec) -> None:
    batch = _batch([(b"a", b"1", ()), (None, b"2", ())], [5, 6], codec)
    stamped = stamp_log_append_time(batch, NOW_MS)
    converted = down_convert(stamped, 1, 0).records
    messages = list(iter_records(converted))
    assert [(m.key, m.value) for m in messages] == [(b"a", b"1"), (None, b"2")]
    assert all(m.log_append_time and m.timestamp == NOW_MS for m in messages)
    # The CreateTime original keeps its producer timestamps and type.
    plain = list(iter_records(down_convert(batch, 1, 0).records))
    assert [(m.log_append_time, m.timestamp) for m in plain] == [(False, 5), (False, 6)]


# -- which topics need the checks ---------------------------------------------------------------


def test_default_rules_do_nothing_per_record() -> None:
    assert not AppendRules().acts
    assert not AppendRules().inspect_records
    assert AppendRules(log_append_time=True).acts
    assert not AppendRules(log_append_time=True).inspect_records
    # The difference limit applies to CreateTime topics only.
    assert not AppendRules(log_append_time=True, timestamp_difference_max_ms=10).inspect_records
    assert AppendRules(timestamp_difference_max_ms=10).inspect_records
    assert AppendRules(compacted=True).inspect_records


# -- compacted topics: a key on every record ----------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(records=records_strategy, codec=st.sampled_from(CODECS[:4]))
def test_compacted_topics_refuse_exactly_the_keyless_records(
    records: list[RecordInput], codec: Codec
) -> None:
    refusal = _refusal(_batch(records, codec=codec), AppendRules(compacted=True))
    keyless = [i for i, (key, _, _) in enumerate(records) if key is None]
    if not keyless:
        assert refusal is None
        return
    assert isinstance(refusal, InvalidRecordError) and refusal.code == 87
    assert refusal.message == REJECTED
    assert [i for i, _ in refusal.record_errors] == keyless
    assert {reason for _, reason in refusal.record_errors} == {
        f"Compacted topic cannot accept message without key in topic partition {TP}."
    }


def test_compacted_topics_take_tombstones_and_control_batches() -> None:
    rules = AppendRules(compacted=True)
    assert _refusal(_batch([(b"k", None, ()), (b"k2", b"", ())]), rules) is None
    control = _with_attribute_bits(_batch([(None, b"\x00\x00\x00\x00", ())]), CONTROL_BIT)
    assert _refusal(control, rules) is None


def test_the_first_refused_batch_speaks_for_the_payload() -> None:
    good = _batch([(b"k", b"v", ())])
    bad = _batch([(b"k", b"v", ()), (None, b"v", ()), (None, b"v", ())])
    refusal = _refusal(good + bad + bad, AppendRules(compacted=True))
    assert refusal is not None
    assert [i for i, _ in refusal.record_errors] == [1, 2]  # indexes within the batch


# -- message.timestamp.difference.max.ms --------------------------------------------------------

stamps_strategy = st.lists(
    st.one_of(st.just(-1), st.integers(NOW_MS - 10_000, NOW_MS + 10_000)), min_size=1, max_size=10
)


@settings(max_examples=150, deadline=None)
@given(stamps=stamps_strategy, max_ms=st.integers(0, 6_000), codec=st.sampled_from(CODECS[:4]))
def test_create_time_topics_refuse_exactly_the_records_too_far_from_now(
    stamps: list[int], max_ms: int, codec: Codec
) -> None:
    records: list[RecordInput] = [(b"k", b"v", ())] * len(stamps)
    payload = _batch(records, stamps, codec)
    refusal = _refusal(payload, AppendRules(timestamp_difference_max_ms=max_ms))
    far = [i for i, ts in enumerate(stamps) if ts != -1 and abs(ts - NOW_MS) > max_ms]
    if not far:
        assert refusal is None
    else:
        assert isinstance(refusal, InvalidTimestampError) and refusal.code == 32
        assert refusal.message == REJECTED_TIMESTAMP
        assert [i for i, _ in refusal.record_errors] == far
        i, reason = refusal.record_errors[0]
        assert reason == (
            f"Timestamp {stamps[i]} of message with offset {i} is out of range. The timestamp "
            f"should be within [{NOW_MS - max_ms}, {NOW_MS + max_ms}]"
        )
    # A LogAppendTime topic replaces the timestamps instead of judging them.
    lat = AppendRules(log_append_time=True, timestamp_difference_max_ms=max_ms)
    assert _refusal(payload, lat) is None


def test_a_keyless_record_is_refused_for_its_key_before_its_timestamp() -> None:
    payload = _batch([(None, b"v", ()), (b"k", b"v", ())], [0, 0])
    rules = AppendRules(compacted=True, timestamp_difference_max_ms=1000)
    refusal = _refusal(payload, rules)
    # One record error each; any timestamp error makes the whole refusal INVALID_TIMESTAMP.
    assert isinstance(refusal, InvalidTimestampError)
    assert [reason.split()[0] for _, reason in refusal.record_errors] == ["Compacted", "Timestamp"]


# -- only the broker sets LogAppendTime ---------------------------------------------------------


@pytest.mark.parametrize(
    "rules",
    [
        AppendRules(),
        AppendRules(log_append_time=True),
        AppendRules(compacted=True),
        AppendRules(timestamp_difference_max_ms=2**40),
    ],
)
def test_producers_may_not_set_log_append_time(rules: AppendRules) -> None:
    batch = _with_attribute_bits(_batch([(b"k", b"v", ()), (b"k", b"w", ())]), TIMESTAMP_TYPE_BIT)
    assert producer_set_append_time([read_header(batch)])
    refusal = _refusal(batch, rules)
    assert isinstance(refusal, InvalidTimestampError)
    assert [i for i, _ in refusal.record_errors] == [0, 1]
    assert "Producer should not set timestamp type to LogAppendTime" in refusal.record_errors[0][1]


def test_ordinary_batches_pass_with_default_rules() -> None:
    batch = _batch([(None, b"v", ())], [0])
    assert not producer_set_append_time([read_header(batch)])
    assert _refusal(batch, AppendRules()) is None


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP])
def test_legacy_producers_may_not_set_log_append_time_either(codec: Codec) -> None:
    inner = bytearray()
    for i in range(2):
        write_message(inner, i, 1, b"k", b"v", timestamp=5, attributes=TIMESTAMP_TYPE_BIT)
    if codec is Codec.NONE:
        payload = bytes(inner)
    else:
        wrapped = bytearray()
        write_wrapper(wrapped, codec, 1, bytes(inner), 1, timestamp=5, log_append_time=True)
        payload = bytes(wrapped)
    with pytest.raises(InvalidTimestampError):
        up_convert(payload)
    plain = bytearray()
    write_message(plain, 0, 1, b"k", b"v", timestamp=5)
    assert up_convert(bytes(plain)).records_converted == 1
