"""A Spark task's reads in the record-batch format against a fake gateway: the same rows as the
JSON pages, data loss as before, and JSON pages from a gateway that predates the format."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from pafka.records.batch import assign_offsets
from pafka.records.encoding import build_batch
from pafka.spark.errors import DataLossError
from pafka.spark.gateway import BatchesUnsupported, BatchPage, OffsetOutOfRange
from pafka.spark.planning import OffsetRange
from pafka.spark.reading import read_arrow, read_range
from tests.unit.test_spark_reader import FakeGateway


class FakeBatchGateway(FakeGateway):
    """Batches of 4 records (value = offset) for offsets [beginning, end) of each partition;
    ``old`` answers the batch format as a gateway before it did."""

    def __init__(self, spans: dict[int, tuple[int, int]], *, old: bool = False) -> None:
        super().__init__(spans)
        self.old = old

    def read_batches(self, topic: str, partition: int, offset: int, max_records: int) -> BatchPage:
        if self.old:
            raise BatchesUnsupported("406")
        beginning, end = self.spans[partition]
        if not beginning <= offset <= end:
            raise OffsetOutOfRange("41601")
        base = max(beginning, offset - offset % 4)  # the batch holding the offset, as Kafka
        data, counted = b"", 0
        while base < end and counted < max_records:
            top = min(base - base % 4 + 4, end)
            data += assign_offsets(build_batch([(None, b"", [])] * (top - base)), base)
            counted += top - max(base, offset)
            base = top
        return BatchPage(data, max(base, offset), end, beginning)


def offsets_of(batches: list) -> list[int]:  # type: ignore[type-arg]
    return [o for b in batches for o in b.column("offset").to_pylist()]


@pytest.mark.parametrize("old", [False, True])
def test_same_offsets_as_the_json_pages(old: bool) -> None:
    gateway = FakeBatchGateway({0: (0, 30)}, old=old)
    r = OffsetRange("t", 0, 5, 27)
    got = list(read_arrow(gateway, r, include_headers=True, fail_on_data_loss=True))  # type: ignore[arg-type]
    rows = list(read_range(gateway, r, include_headers=True, fail_on_data_loss=True))  # type: ignore[arg-type]
    assert offsets_of(got) == [row[4] for row in rows] == list(range(5, 27))
    assert got[0].schema.names[-1] == "headers"


def test_deleted_offsets_are_data_loss() -> None:
    gateway = FakeBatchGateway({0: (10, 30)})
    r = OffsetRange("t", 0, 0, 20)
    with pytest.raises(DataLossError, match="offsets 0 to 9"):
        list(read_arrow(gateway, r, include_headers=False, fail_on_data_loss=True))  # type: ignore[arg-type]
    kept = read_arrow(gateway, r, include_headers=False, fail_on_data_loss=False)  # type: ignore[arg-type]
    assert offsets_of(list(kept)) == list(range(10, 20))
