"""How many file regions one Fetch response may pin: reads past the cap come back as bytes."""

from __future__ import annotations

import os
import tempfile
from types import SimpleNamespace
from typing import Any

from pafka.storage.region import FileRegion
from services.broker.handlers.fetch_reads import (
    MAX_REGIONS_PER_FETCH,
    PartitionFetch,
    ReadBudget,
    read_each,
)
from services.broker.partition import ReadResult

RECORDS_BYTES = 20_000


class _Partition:
    """Hands out a region over a scratch file when asked for one, bytes otherwise."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def check_leader_epoch(self, _epoch: int) -> None:
        pass

    def read(
        self,
        _offset: int,
        _limit: int,
        *,
        up_to_high_watermark: bool,
        min_region_bytes: int | None,
        read_committed: bool,
    ) -> ReadResult:
        assert up_to_high_watermark and not read_committed
        records: bytes | FileRegion
        if min_region_bytes is None:
            records = os.pread(self.fd, RECORDS_BYTES, 0)
        else:
            records = FileRegion.of(self.fd, 0, RECORDS_BYTES)
        return ReadResult(records, 10, 0, 10)


def test_a_fetch_over_many_partitions_pins_at_most_the_cap_of_descriptors() -> None:
    partitions = MAX_REGIONS_PER_FETCH * 3
    with tempfile.TemporaryFile() as scratch:
        scratch.write(os.urandom(RECORDS_BYTES))
        scratch.flush()
        partition = _Partition(scratch.fileno())
        broker: Any = SimpleNamespace(
            replicas=SimpleNamespace(leader_partition=lambda *_: partition),
            authorizer=SimpleNamespace(enabled=False),
        )
        ctx: Any = SimpleNamespace(broker=broker, api_version=12)  # a v2 client: no conversion
        wanted = [PartitionFetch("t", p, 0, 1 << 20) for p in range(partitions)]

        budget = ReadBudget(1 << 30)
        read_each(ctx, wanted, -1, budget)
        total = budget.total

        results = [w.result for w in wanted]
        assert all(r is not None for r in results)
        kinds = [isinstance(r.records, FileRegion) for r in results if r is not None]
        assert kinds == [True] * MAX_REGIONS_PER_FETCH + [False] * (
            partitions - MAX_REGIONS_PER_FETCH
        )
        assert total == partitions * RECORDS_BYTES
        expected = os.pread(scratch.fileno(), RECORDS_BYTES, 0)
        for r in results:
            assert r is not None
            data = r.records.read() if isinstance(r.records, FileRegion) else bytes(r.records)
            assert data == expected
            if isinstance(r.records, FileRegion):
                r.records.close()
