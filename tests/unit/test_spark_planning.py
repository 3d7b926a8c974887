"""The Spark connector's pure parts: options, offset planning, splitting, per-trigger caps, rows."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.spark import planning
from pafka.spark.errors import DataLossError, OptionError, UnknownTopicError
from pafka.spark.options import EARLIEST, LATEST, parse_read, parse_write
from pafka.spark.planning import OffsetRange
from pafka.spark.rows import COLUMNS, HEADERS, to_arrow, to_record, to_row
from pafka.spark.writing import produce_rows

GW = {"gateway": "http://gw:8082"}

# -- options -----------------------------------------------------------------------------------


def test_options_mirror_the_kafka_source() -> None:
    opts = parse_read(
        {
            **GW,
            "SUBSCRIBE": "a, b",
            "startingOffsets": '{"a": {"0": 5, "1": -2}}',
            "endingOffsets": "latest",
            "minPartitions": "4",
            "failOnDataLoss": "false",
            "includeHeaders": "TRUE",
        },
        streaming=False,
    )
    assert opts.subscription.topics == ("a", "b")
    assert opts.starting == {("a", 0): 5, ("a", 1): EARLIEST}
    assert (opts.ending, opts.min_partitions) == ("latest", 4)
    assert not opts.fail_on_data_loss and opts.include_headers
    streaming = parse_read(
        {**GW, "assign": '{"t": [1, 0]}', "maxOffsetsPerTrigger": "9"}, streaming=True
    )
    assert streaming.subscription.assigned == (("t", 0), ("t", 1))
    assert (streaming.starting, streaming.max_offsets_per_trigger) == ("latest", 9)
    assert parse_read({**GW, "subscribePattern": "ev.*"}, streaming=False).starting == "earliest"
    assert parse_read({**GW, "subscribePattern": "ev.*"}, streaming=False).subscription.matches(
        "ev1"
    )
    assert parse_write({"gateway": "http://a:1/, https://b", "topic": "t"}).gateway.gateways == (
        "http://a:1",
        "https://b",
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t"}, "option gateway is required"),
        ({**GW}, "exactly one of subscribe"),
        ({**GW, "subscribe": "t", "assign": '{"t": [0]}'}, "exactly one of subscribe"),
        ({"gateway": "gw:8082", "subscribe": "t"}, "not an http"),
        ({**GW, "subscribe": "t", "minPartitions": "0"}, "minPartitions must be a positive"),
        ({**GW, "subscribe": "t", "failOnDataLoss": "yes"}, "failOnDataLoss must be true or false"),
        ({**GW, "subscribe": "t", "startingOffsets": "{"}, "startingOffsets is not valid JSON"),
        ({**GW, "subscribe": "t", "startingOffsets": '{"t": {"0": -3}}'}, "must be an integer"),
        ({**GW, "subscribe": "t", "startingOffsets": '{"t": {"x": 1}}'}, "is not a number"),
        ({**GW, "subscribe": "t", "startingOffsets": "latest"}, "cannot be latest"),
        ({**GW, "subscribe": "t", "endingOffsets": "earliest"}, "cannot be earliest"),
        ({**GW, "subscribe": "t", "maxOffsetsPerTrigger": "5"}, "for streaming reads"),
        ({**GW, "subscribePattern": "("}, "not a regular expression"),
        ({**GW, "assign": '{"t": ["0"]}'}, "list of integers"),
        ({**GW, "subscribe": "t", "kafka.bootstrap.servers": "x"}, "unknown option"),
    ],
)
def test_bad_options_are_named(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_read(options, streaming=False)


def test_a_token_goes_with_every_request() -> None:
    from pafka.spark.gateway import GatewayClient

    options = parse_read({**GW, "subscribe": "t", "token": "s3cr3t"}, streaming=False).gateway
    with GatewayClient(options) as client:
        assert client._http.headers["Authorization"] == "Bearer s3cr3t"
    with GatewayClient(parse_write(GW).gateway) as client:
        assert "Authorization" not in client._http.headers


def test_streams_have_no_end() -> None:
    with pytest.raises(OptionError, match="a stream has no end"):
        parse_read({**GW, "subscribe": "t", "endingOffsets": "latest"}, streaming=True)


# -- planning ----------------------------------------------------------------------------------

BOUNDS = {("t", 0): (0, 10), ("t", 1): (5, 8), ("u", 0): (0, 0)}


def test_resolve_and_plan() -> None:
    starts = planning.resolve({("t", 0): 3, ("t", 1): EARLIEST}, BOUNDS, EARLIEST, "s")
    assert starts == {("t", 0): 3, ("t", 1): 5, ("u", 0): 0}
    ends = planning.resolve({("t", 0): LATEST, ("t", 1): 7}, BOUNDS, LATEST, "e")
    assert planning.plan(starts, ends, BOUNDS, fail_on_data_loss=True) == [
        OffsetRange("t", 0, 3, 10),
        OffsetRange("t", 1, 5, 7),
    ]
    with pytest.raises(UnknownTopicError, match="t-9"):
        planning.resolve({("t", 9): 0}, BOUNDS, EARLIEST, "s")
    with pytest.raises(OptionError, match="after its ending offset"):
        planning.plan({("t", 0): 9}, {("t", 0): 4}, BOUNDS, fail_on_data_loss=True)
    with pytest.raises(OptionError, match="past its end"):
        planning.plan({("t", 0): 0}, {("t", 0): 11}, BOUNDS, fail_on_data_loss=True)


def test_deleted_records_fail_or_are_skipped() -> None:
    with pytest.raises(DataLossError, match="offsets 2 to 4 of t-1 were deleted"):
        planning.plan({("t", 1): 2}, {("t", 1): 8}, BOUNDS, fail_on_data_loss=True)
    assert planning.plan({("t", 1): 2}, {("t", 1): 8}, BOUNDS, fail_on_data_loss=False) == [
        OffsetRange("t", 1, 5, 8)
    ]


ranges_strategy = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(1, 500)), min_size=1, max_size=6
).map(lambda xs: [OffsetRange("t", i, s, s + n) for i, (s, n) in enumerate(xs)])


@given(ranges_strategy, st.integers(1, 50))
def test_split_covers_every_offset_once(ranges: list[OffsetRange], minimum: int) -> None:
    parts = planning.split(ranges, minimum)
    assert len(parts) >= min(minimum, sum(r.size for r in ranges))
    for r in ranges:
        mine = sorted(p for p in parts if p.partition == r.partition)
        assert all(p.size > 0 for p in mine)
        assert [(p.start, p.until) for p in mine] == list(
            zip([r.start] + [p.until for p in mine[:-1]], [p.until for p in mine], strict=True)
        )
        assert (mine[0].start, mine[-1].until) == (r.start, r.until)


@given(
    st.dictionaries(
        st.integers(0, 7), st.tuples(st.integers(0, 100), st.integers(0, 100)), min_size=1
    ),
    st.integers(1, 120),
)
def test_limit_never_exceeds_the_cap_and_progresses(
    spans: dict[int, tuple[int, int]], cap: int
) -> None:
    starts = {("t", p): s for p, (s, _) in spans.items()}
    latest = {("t", p): s + n for p, (s, n) in spans.items()}
    ends = planning.limit(starts, latest, cap)
    backlog = sum(n for _, n in spans.values())
    taken = [ends[tp] - starts[tp] for tp in starts]
    assert all(0 <= t <= latest[tp] - starts[tp] for t, tp in zip(taken, starts, strict=True))
    assert sum(taken) == min(cap, backlog)


def test_offsets_round_trip_as_json() -> None:
    offsets = {("a", 0): 5, ("a", 10): 7, ("b", 1): 0}
    encoded = planning.encode_offsets(offsets)
    assert encoded == {"a": {"0": 5, "10": 7}, "b": {"1": 0}}
    assert planning.decode_offsets(json.loads(json.dumps(encoded))) == offsets


# -- rows --------------------------------------------------------------------------------------


def test_rows_have_the_kafka_schema() -> None:
    record = {
        "topic": "t",
        "partition": 1,
        "offset": 7,
        "timestamp": 1_700_000_000_123,
        "timestamp_type": "LOG_APPEND_TIME",
        "key": None,
        "value": "aGk=",
        "headers": [{"name": "h", "value": None}, {"name": "g", "value": "eA=="}],
    }
    assert to_row(record, include_headers=True) == (
        None,
        b"hi",
        "t",
        1,
        7,
        datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC),
        1,
        [("h", None), ("g", b"x")],
    )
    assert len(to_row(record, include_headers=False)) == 7
    pytest.importorskip("pyarrow")
    batch = to_arrow([record, {**record, "offset": 8, "headers": []}], include_headers=True)
    assert batch.schema.names == [*COLUMNS, HEADERS]
    first = batch.to_pylist()[0]
    assert tuple(first.values())[:7] == to_row(record, include_headers=False)
    assert first["headers"] == [{"key": "h", "value": None}, {"key": "g", "value": b"x"}]
    assert batch.to_pylist()[1]["headers"] == []
    assert to_record("k", b"v", 2, [("h", b"x")]) == {
        "key": "aw==",
        "value": "dg==",
        "partition": 2,
        "headers": [{"name": "h", "value": "eA=="}],
    }
    assert to_record(None, None) == {"key": None, "value": None}


class FakeGateway:
    def __init__(self, per_request: int) -> None:
        self.options = parse_write({**GW, "maxRecordsPerRequest": str(per_request)}).gateway
        self.sent: list[tuple[str, int, str]] = []

    def produce(self, topic: str, records: list[dict[str, Any]], key: str) -> list[Any]:
        self.sent.append((topic, len(records), key))
        return []


def test_writes_are_keyed_by_request_and_deterministic() -> None:
    rows = [{"value": b"v", "topic": "ab"[i % 2]} for i in range(7)]
    gateway = FakeGateway(per_request=2)
    written = produce_rows(
        gateway,
        rows,
        key_prefix="spark:q:3:1",  # type: ignore[arg-type]
        default_topic=None,
        columns=frozenset({"value", "topic"}),
    )
    assert (written.records, written.requests) == (7, 4)
    assert gateway.sent == [
        ("a", 2, "spark:q:3:1:0"),
        ("b", 2, "spark:q:3:1:1"),
        ("a", 2, "spark:q:3:1:2"),
        ("b", 1, "spark:q:3:1:3"),
    ]
    again = FakeGateway(per_request=2)
    produce_rows(
        again,
        rows,
        key_prefix="spark:q:3:1",  # type: ignore[arg-type]
        default_topic=None,
        columns=frozenset({"value", "topic"}),
    )
    assert again.sent == gateway.sent
    forced = FakeGateway(per_request=10)
    produce_rows(
        forced,
        rows,
        key_prefix="p",  # type: ignore[arg-type]
        default_topic="c",
        columns=frozenset({"value", "topic"}),
    )
    assert forced.sent == [("c", 7, "p:0")]
