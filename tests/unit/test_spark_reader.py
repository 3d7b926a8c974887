"""The Spark connector's readers against a fake gateway: data loss while reading, and the
streaming reader's offsets in both latestOffset forms (no SparkSession needed)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from pafka.spark.errors import DataLossError
from pafka.spark.gateway import OffsetOutOfRange, ReadPage
from pafka.spark.options import parse_read
from pafka.spark.planning import OffsetRange
from pafka.spark.reading import read_range
from pafka.spark.source import StreamReader

GW = {"gateway": "http://gw:8082"}


class FakeGateway:
    """A topic "t" whose partitions hold offsets [beginning, end)."""

    def __init__(self, spans: dict[int, tuple[int, int]]) -> None:
        self.spans = spans
        self.options = parse_read(
            {**GW, "subscribe": "t", "maxRecordsPerRequest": "3"}, streaming=True
        ).gateway

    def subscribed(self, subscription: Any) -> list[tuple[str, int]]:
        return [("t", p) for p in sorted(self.spans)]

    def bounds(self, partitions: Any) -> dict[tuple[str, int], tuple[int, int]]:
        return {(t, p): self.spans[p] for t, p in partitions}

    def read(self, topic: str, partition: int, offset: int, max_records: int) -> ReadPage:
        beginning, end = self.spans[partition]
        if not beginning <= offset <= end:
            raise OffsetOutOfRange("41601")
        records = [
            {
                "topic": topic,
                "partition": partition,
                "offset": o,
                "timestamp": 0,
                "timestamp_type": "CREATE_TIME",
                "key": None,
                "value": "",
                "headers": [],
            }
            for o in range(offset, min(end, offset + max_records))
        ]
        return ReadPage(records, offset + len(records), end, beginning)

    def close(self) -> None:
        pass


def offsets(rows: Any) -> list[int]:
    return [row[4] for row in rows]


def test_a_range_reads_every_record_once() -> None:
    gateway = FakeGateway({0: (0, 10)})
    rows = read_range(
        gateway,
        OffsetRange("t", 0, 2, 9),  # type: ignore[arg-type]
        include_headers=False,
        fail_on_data_loss=True,
    )
    assert offsets(rows) == list(range(2, 9))


def test_records_deleted_before_the_read_fail_or_are_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    gateway = FakeGateway({0: (5, 10)})  # retention took 0-4 after planning
    r = OffsetRange("t", 0, 2, 8)
    with pytest.raises(DataLossError, match="offsets 2 to 4 of t-0 are deleted"):
        list(
            read_range(
                gateway,
                r,
                include_headers=False,  # type: ignore[arg-type]
                fail_on_data_loss=True,
            )
        )
    with caplog.at_level(logging.WARNING):
        rows = read_range(
            gateway,
            r,
            include_headers=False,  # type: ignore[arg-type]
            fail_on_data_loss=False,
        )
        assert offsets(rows) == [5, 6, 7]
    assert "skipping offsets 2 to 4 of t-0" in caplog.text


def reader(spans: dict[int, tuple[int, int]], **options: str) -> tuple[StreamReader, FakeGateway]:
    stream = StreamReader(parse_read({**GW, "subscribe": "t", **options}, streaming=True))
    gateway = FakeGateway(spans)
    stream._gateway = gateway  # type: ignore[assignment]
    return stream, gateway


def test_stream_offsets_with_admission_control() -> None:
    stream, gateway = reader(
        {0: (0, 10), 1: (0, 2)}, startingOffsets="earliest", maxOffsetsPerTrigger="4"
    )
    start = stream.initialOffset()
    assert start == {"t": {"0": 0, "1": 0}}
    assert stream.getDefaultReadLimit() == ReadMaxRows(4)
    end = stream.latestOffset(start, ReadMaxRows(4))
    assert sum(end["t"].values()) == 4
    assert stream.latestOffset(start, ReadAllAvailable()) == {"t": {"0": 10, "1": 2}}
    parts = stream.partitions(start, end)
    assert sum(p.range.size for p in parts) == 4  # type: ignore[attr-defined]
    assert stream.partitions(end, end) == []
    gateway.spans[2] = (0, 3)  # a partition added later is read from its beginning
    later = stream.latestOffset({"t": {"0": 10, "1": 2}}, ReadAllAvailable())
    assert later == {"t": {"0": 10, "1": 2, "2": 3}}
    new = stream.partitions({"t": {"0": 10, "1": 2}}, later)
    assert [(p.range.partition, p.range.start) for p in new] == [(2, 0)]  # type: ignore[attr-defined]


def test_stream_offsets_in_the_older_form_continue_from_the_last_batch() -> None:
    stream, gateway = reader({0: (0, 10)}, maxOffsetsPerTrigger="6")
    assert stream.initialOffset() == {"t": {"0": 10}}  # latest by default
    gateway.spans[0] = (0, 20)
    assert stream.latestOffset() == {"t": {"0": 16}}
    assert stream.latestOffset() == {"t": {"0": 20}}
    assert stream.latestOffset() == {"t": {"0": 20}}


def test_trigger_available_now_stops_at_what_was_there() -> None:
    stream, gateway = reader({0: (0, 5)}, startingOffsets="earliest")
    stream.prepareForTriggerAvailableNow()
    gateway.spans[0] = (0, 9)
    assert stream.latestOffset({"t": {"0": 0}}, ReadAllAvailable()) == {"t": {"0": 5}}
