"""Reading a consumer instance's partitions from their leaders, and choosing what to answer.

:meth:`PartitionReader.fetch` asks every partition at once without waiting; when nothing came,
:meth:`PartitionReader.long_poll` waits at every leader together until the first answers with
records or the timeout passes. A position that fell out of the log is reset to the log's start
or end (``auto.offset.reset``). Both move ``end`` past resets and past batches that held no
record to show, so the position advances even when no record is returned. :func:`trim` and
:func:`rendered` then choose, in partition order, the records the answer carries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pafka.client import fetcher
from pafka.client.batch_reading import FetchedRecord
from pafka.client.cluster import ClusterClient
from pafka.client.fetcher import FetchResult
from pafka.client.isolation import IsolationLevel
from pafka.errors import OffsetOutOfRangeError, PafkaError, RestError
from pafka.groups.consumer_protocol import TopicPartition

log = logging.getLogger(__name__)

MAX_CONCURRENT_FETCHES = 32

Records = list[tuple[TopicPartition, list[FetchedRecord]]]
# Records of one partition as the client will see them; raises RestError for one it cannot show.
Render = Callable[[TopicPartition, list[FetchedRecord]], list[Any]]
# What one partition's fetch came to: its records, the offset it was reset to, or the failure.
Answer = FetchResult | int | PafkaError


async def reset_positions(
    cluster: ClusterClient,
    partitions: Iterable[TopicPartition],
    earliest: bool,
    isolation: IsolationLevel,
) -> dict[TopicPartition, int]:
    """Each partition's log start (``earliest``) or end as ``isolation`` sees it (the high
    watermark, or the last stable offset)."""
    wanted = sorted(set(partitions))
    ranges = await asyncio.gather(*(fetcher.offsets(cluster, t, p, isolation) for t, p in wanted))
    return {tp: r[0] if earliest else r[1] for tp, r in zip(wanted, ranges, strict=True)}


@dataclass(frozen=True)
class PartitionReader:
    """Fetches the partitions of one read of an instance from their leaders."""

    cluster: ClusterClient
    max_records: int
    earliest: bool
    """Where a position that fell out of the log resets to: the log start, else its end."""
    isolation: IsolationLevel

    async def fetch(
        self,
        start: Mapping[TopicPartition, int],
        end: dict[TopicPartition, int],
        *,
        wait_ms: int,
        max_bytes: int,
    ) -> Records:
        slots = asyncio.Semaphore(MAX_CONCURRENT_FETCHES)

        async def one(tp: TopicPartition) -> Answer:
            async with slots:
                return await self._fetch_one(tp, start[tp], wait_ms, max_bytes)

        order = sorted(start)
        answers = await asyncio.gather(*(one(tp) for tp in order))
        return collect(dict(zip(order, answers, strict=True)), end)

    async def long_poll(
        self,
        start: Mapping[TopicPartition, int],
        end: dict[TopicPartition, int],
        *,
        timeout_ms: int,
        max_bytes: int,
    ) -> Records:
        """Every partition waits at its leader; the first with records ends the wait (the
        others are abandoned: their answers are read and dropped by their connections)."""
        polls = {
            asyncio.create_task(self._fetch_one(tp, end[tp], timeout_ms, max_bytes)): tp
            for tp in sorted(start)[:MAX_CONCURRENT_FETCHES]
        }
        answers: dict[TopicPartition, Answer] = {}
        pending = set(polls)
        try:
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    answers[polls[task]] = task.result()
                if any(isinstance(a, FetchResult) and a.records for a in answers.values()):
                    break
        finally:
            for task in pending:
                task.cancel()
        return collect(answers, end)

    async def _fetch_one(
        self, tp: TopicPartition, offset: int, wait_ms: int, max_bytes: int
    ) -> Answer:
        try:
            return await fetcher.fetch(
                self.cluster,
                *tp,
                offset,
                max_records=self.max_records,
                max_bytes=max_bytes,
                max_wait_ms=wait_ms,
                isolation=self.isolation,
            )
        except OffsetOutOfRangeError:
            return (await reset_positions(self.cluster, [tp], self.earliest, self.isolation))[tp]
        except PafkaError as exc:
            return exc


def collect(answers: Mapping[TopicPartition, Answer], end: dict[TopicPartition, int]) -> Records:
    """Records per partition; resets and skipped batches move ``end``; raises when every
    partition failed."""
    fetched: Records = []
    failures = []
    for tp, answer in sorted(answers.items()):
        if isinstance(answer, PafkaError):
            failures.append(answer)
        elif isinstance(answer, int):
            end[tp] = answer
        else:
            if answer.records:
                fetched.append((tp, answer.records))
            else:
                end[tp] = max(end[tp], answer.next_offset)
    if failures and len(failures) == len(answers):
        raise failures[0]
    for exc in failures:
        log.debug("consumer read skipped a partition: %s", exc)
    return fetched


def _size(record: FetchedRecord) -> int:
    headers = sum(len(k) + len(v or b"") for k, v in record.headers)
    return len(record.key or b"") + len(record.value or b"") + headers


def trim(fetched: Records, max_bytes: int, max_records: int) -> Records:
    """The records to answer with: in partition order, up to ``max_bytes`` of keys, values
    and headers (at least one record) and ``max_records``."""
    kept: Records = []
    total_bytes = total = 0
    for tp, records in fetched:
        taken = []
        for record in records:
            total_bytes += _size(record)
            if total and (total_bytes > max_bytes or total >= max_records):
                break
            taken.append(record)
            total += 1
        if taken:
            kept.append((tp, taken))
        if len(taken) < len(records):
            break
    return kept


def rendered(
    fetched: Records, render: Render
) -> list[tuple[TopicPartition, list[FetchedRecord], list[Any]]]:
    """Each partition's records up to the first ``render`` refuses, with how they are shown;
    the first refusal is raised when no record at all can be shown."""
    shown = []
    refusal: RestError | None = None
    for tp, records in fetched:
        out: list[Any] = []
        for record in records:
            try:
                out.extend(render(tp, [record]))
            except RestError as exc:
                refusal = refusal or exc
                break
        if out:
            shown.append((tp, records[: len(out)], out))
    if refusal is not None and not shown:
        raise refusal
    return shown
