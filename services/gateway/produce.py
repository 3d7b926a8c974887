"""Writing a produce request's records: where each goes, in which batches, and what to answer.

A 200 means every record of the request was acknowledged with the asked ``acks``; if any was
not, the answer is an error status whose body still lists each record's outcome, so nothing
unacknowledged is ever reported as written. Records of one partition are sent in order, and
after a failure the rest of that partition's records are not sent at all, so a retry cannot
put them out of order.
"""

from __future__ import annotations

import asyncio
import random
import typing
from collections.abc import Awaitable, Iterable, Sequence
from typing import Any, NamedTuple

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from pafka.client.partitioner import partition_for_key
from pafka.client.producer import Appended, OutgoingRecord
from pafka.errors import PafkaError, RestError
from services.gateway import errors
from services.gateway.context import GatewayContext
from services.gateway.formats import BODY_TOO_LARGE, INVALID_REQUEST, V2, ProduceBody

# Records of one partition go out in batches of about this size, below Kafka's default
# max.message.bytes (1 MiB) so that a large request does not fail as one oversized batch.
BATCH_TARGET_BYTES = 512 * 1024
RECORD_OVERHEAD_BYTES = 32
NON_RETRIABLE, RETRIABLE = 1, 2  # REST Proxy's per-record error codes
# A produce request's ``acks`` as the API names it, and as the Produce request carries it.
ACKS = {"all": -1, "-1": -1, "1": 1}


class Turns:
    """Which of a topic's partitions the next batch of its keyless records goes to."""

    def __init__(self, start: int = 0) -> None:
        self.next = start

    def take(self, count: int) -> int:
        """The first of ``count`` turns, taken now."""
        start, self.next = self.next, (self.next + count) % (1 << 31)
        return start


class KeylessTurns:
    """Each topic's :class:`Turns`, per gateway process (no coordination needed, spreading is
    all that is promised). Per topic, as Kafka's sticky partitioner keeps a partition per
    topic: with one counter for all, requests alternating between two topics of two
    partitions would each always land on the same one. A new topic starts at a random
    partition, as Kafka's does, so that gateways do not all start at the first."""

    MAX_TOPICS = 10_000  # past this many, forgotten all at once: only positions are lost

    def __init__(self) -> None:
        self._topics: dict[str, Turns] = {}

    def of(self, topic: str) -> Turns:
        turns = self._topics.get(topic)
        if turns is None:
            if len(self._topics) >= self.MAX_TOPICS:
                self._topics.clear()
            turns = self._topics[topic] = Turns(random.randrange(1 << 31))
        return turns


keyless = KeylessTurns()


def choose_partitions(
    body: ProduceBody, fixed: int | None, partitions: int, turns: Turns
) -> list[int]:
    """The partition of each record: named, else the path's, else by key. Keyless records go a
    batch at a time (cut as :func:`batches` cuts them) to the next partition in ``turns``, as
    Kafka's producers have kept keyless records together since 2.4 (KIP-480's sticky
    partitioner): a small request's records land on one partition, the next request's on the
    next, and a large one's batches take the partitions in turn."""
    count = len(body.records)
    if not any(p is not None for p in body.partitions):  # the common request: nothing named
        if fixed is not None:
            return [fixed] * count
        if all(r.key is None for r in body.records):
            chosen = [0] * count
            _take_turns(chosen, list(range(count)), body.records, partitions, turns)
            return chosen
    chosen = []
    unkeyed = []
    for i, (record, named) in enumerate(zip(body.records, body.partitions, strict=True)):
        if named is not None and fixed is not None and named != fixed:
            raise RestError(
                INVALID_REQUEST,
                f"records[{i}] names partition {named} but is posted to partition {fixed}",
            )
        if named is not None:
            chosen.append(named)
        elif fixed is not None:
            chosen.append(fixed)
        elif record.key is not None:
            chosen.append(partition_for_key(record.key, partitions))
        else:
            chosen.append(-1)
            unkeyed.append(i)
    if unkeyed:
        _take_turns(chosen, unkeyed, body.records, partitions, turns)
    return chosen


def _take_turns(
    chosen: list[int],
    unkeyed: list[int],
    records: list[OutgoingRecord],
    partitions: int,
    turns: Turns,
) -> None:
    cut = batches(unkeyed, records)
    first = turns.take(len(cut))
    for n, run in enumerate(cut):
        partition = (first + n) % partitions
        for i in run:
            chosen[i] = partition


def batches(indices: list[int], records: list[OutgoingRecord]) -> list[list[int]]:
    """``indices`` cut into consecutive runs of about ``BATCH_TARGET_BYTES``."""
    if len(indices) == 1:
        return [indices]
    picked = [records[i] for i in indices]
    if not any([r.headers for r in picked]):
        # Most requests: keys and values only, all of them in one run.
        size = sum([len(r.key or b"") + len(r.value or b"") for r in picked])
        if size + RECORD_OVERHEAD_BYTES * len(picked) <= BATCH_TARGET_BYTES:
            return [indices]
    runs: list[list[int]] = []
    size = 0
    for i in indices:
        r = records[i]
        weight = RECORD_OVERHEAD_BYTES + len(r.key or b"") + len(r.value or b"")
        if r.headers:
            weight += sum(len(n) + len(v or b"") for n, v in r.headers)
        if not runs or size + weight > BATCH_TARGET_BYTES:
            runs.append([])
            size = 0
        runs[-1].append(i)
        size += weight
    return runs


_new_tuple = tuple.__new__  # a NamedTuple made without its Python-level __new__


class Result(NamedTuple):
    """One record's outcome (a tuple: one is made per record of every request)."""

    partition: int
    offset: int | None = None
    error: PafkaError | None = None
    retriable: bool = False
    # Set by write_in_order: the written record's timestamp as Kafka's producer reports it.
    timestamp_ms: int | None = None

    def render(self) -> dict[str, Any]:
        failed = self.error is not None
        return {
            "partition": self.partition,
            "offset": self.offset,
            "error_code": (RETRIABLE if self.retriable else NON_RETRIABLE) if failed else None,
            "error": self.error.message if self.error is not None else None,
        }


def previous_results(response: dict[str, Any] | None, count: int) -> list[Result | None]:
    """From an earlier partial attempt's response: the records already written, by index."""
    found: list[Result | None] = [None] * count
    if not response:
        return found
    for i, item in enumerate(response.get("offsets", [])[:count]):
        if item.get("error_code") is None and item.get("offset") is not None:
            found[i] = Result(int(item["partition"]), int(item["offset"]))
    return found


_HEAD = '{"key_schema_id":null,"value_schema_id":null,"offsets":['
_NO_ERROR = ',"error_code":null,"error":null}'
_BULK_FROM = 8  # records: below, the transposition costs more than it saves


_WRITTEN = '{{"partition":{},"offset":{},"error_code":null,"error":null}}'


def written_body(partitions: Sequence[int], offsets: Iterable[int]) -> bytes:
    """The 200 body of records written at these partitions and offsets, byte for byte as
    ``JSONResponse`` writes it, with no dict or Python step per record."""
    if partitions.count(partitions[0]) == len(partitions):
        # Most answers: one partition, rendered in one join.
        start = f'{{"partition":{partitions[0]},"offset":'
        between = f"{_NO_ERROR},{start}"
        return f"{_HEAD}{start}{between.join(map(str, offsets))}{_NO_ERROR}]}}".encode()
    return f"{_HEAD}{','.join(map(_WRITTEN.format, partitions, offsets))}]}}".encode()


def _written(results: list[Result]) -> bytes:
    """The 200 body, byte for byte as ``JSONResponse`` writes it, without a dict per record:
    every value is an integer or null."""
    if len(results) >= _BULK_FROM:
        partitions, offsets = list(zip(*results, strict=True))[:2]  # transposed in C
        if None not in offsets:
            return written_body(partitions, offsets)
    each = ",".join(
        [
            f'{{"partition":{r.partition},"offset":{"null" if r.offset is None else r.offset},'
            '"error_code":null,"error":null}'
            for r in results
        ]
    )
    return f"{_HEAD}{each}]}}".encode()


def answer(results: list[Result]) -> Response:
    """200 when every record was acknowledged; otherwise the first non-retriable error's
    status (or 503), still listing every record's outcome."""
    failures = [r for r in results if r.error is not None]
    if not failures:
        return Response(_written(results), media_type=V2)
    body: dict[str, Any] = {
        "key_schema_id": None,
        "value_schema_id": None,
        "offsets": [r.render() for r in results],
    }
    worst = next((r for r in failures if not r.retriable), failures[0])
    assert worst.error is not None
    status, code = errors.rest_code(worst.error)
    if worst.retriable:
        status, code = 503, errors.KAFKA_RETRIABLE_ERROR
    written = len(results) - len(failures)
    message = f"{len(failures)} of {len(results)} records not written ({written} were): "
    headers = {"Retry-After": str(errors.RETRY_AFTER_S)} if status == 503 else None
    return JSONResponse(
        {"error_code": code, "message": message + worst.error.message, **body},
        status,
        headers=headers,
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused (413) as soon as it is known to exceed ``limit`` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise RestError(BODY_TOO_LARGE, f"the body has {declared} bytes; the limit is {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RestError(BODY_TOO_LARGE, f"the body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _failed(
    ctx: GatewayContext,
    topic: str,
    partition: int,
    run: list[int],
    error: PafkaError,
    results: list[Result | None],
) -> None:
    if error.retriable:
        # The leader may have died or moved: the next request looks it up again instead of
        # failing against the same dead broker until something else does.
        ctx.cluster.forget(topic)
    for i in run:
        results[i] = Result(partition, error=error, retriable=error.retriable)


def _appended(
    partition: int,
    run: list[int],
    appended: Appended,
    results: list[Result | None],
    records: list[OutgoingRecord] | None = None,
) -> None:
    """The results of a written run; with ``records``, each with its timestamp as Kafka's
    producer reports it: the log append time, else the record's own, else the send's."""
    if records is None:
        for offset, i in enumerate(run, appended.base_offset):
            results[i] = _new_tuple(Result, (partition, offset, None, False, None))
        return
    for offset, i in enumerate(run, appended.base_offset):
        own = records[i].timestamp_ms
        stamp = appended.timestamp_ms if appended.log_append_time or own is None else own
        results[i] = _new_tuple(Result, (partition, offset, None, False, stamp))


async def _send_partition(
    ctx: GatewayContext,
    topic: str,
    partition: int,
    runs: list[list[int]],
    records: list[OutgoingRecord],
    acks: int,
    results: list[Result | None],
) -> None:
    for n, run in enumerate(runs):
        try:
            # The producer settles every send within its request timeout and a grace period.
            appended = await ctx.producer.send(topic, partition, [records[i] for i in run], acks)
        except PafkaError as error:
            _failed(ctx, topic, partition, run, error, results)
            held = RestError(
                errors.KAFKA_RETRIABLE_ERROR,
                f"not sent: an earlier record for partition {partition} failed ({error.message})",
            )
            for later in runs[n + 1 :]:
                for i in later:
                    results[i] = Result(partition, error=held, retriable=True)
            return
        _appended(partition, run, appended, results)


async def write(
    ctx: GatewayContext,
    topic: str,
    records: list[OutgoingRecord],
    targets: list[int],
    acks: int,
    done: list[Result | None],
) -> list[Result]:
    """Send every record not already in ``done``; one task per partition, in order within."""
    results = list(done)
    by_partition: dict[int, list[int]] = {}
    for i, partition in enumerate(targets):
        if results[i] is None:
            by_partition.setdefault(partition, []).append(i)
    sends = [
        _send_partition(ctx, topic, p, batches(indices, records), records, acks, results)
        for p, indices in by_partition.items()
    ]
    if len(sends) == 1:  # most requests: no task to spawn
        await sends[0]
    else:
        await asyncio.gather(*sends)
    return [r if r is not None else Result(targets[i]) for i, r in enumerate(results)]


def write_in_order(
    ctx: GatewayContext, topic: str, records: list[OutgoingRecord], targets: list[int], acks: int
) -> Awaitable[list[Result]]:
    """:func:`write`, every record handed to the producer before this returns, so that the
    records of successive calls for one partition go out in the order of the calls (a stream's
    chunks). Unlike :func:`write`, the later runs of a partition whose run failed were handed
    over too, and may be written: each record's result says."""
    by_partition: dict[int, list[int]] = {}
    for i, partition in enumerate(targets):
        by_partition.setdefault(partition, []).append(i)
    sends = [
        (partition, run, ctx.producer.enqueue(topic, partition, [records[i] for i in run], acks))
        for partition, indices in by_partition.items()
        for run in batches(indices, records)
    ]
    return _settled(ctx, topic, records, sends)


async def _settled(
    ctx: GatewayContext,
    topic: str,
    records: list[OutgoingRecord],
    sends: list[tuple[int, list[int], asyncio.Future[Appended]]],
) -> list[Result]:
    results: list[Result | None] = [None] * len(records)
    for partition, run, sent in sends:
        try:
            _appended(partition, run, await sent, results, records)
        except PafkaError as error:
            _failed(ctx, topic, partition, run, error, results)
    assert all(r is not None for r in results)
    return typing.cast(list[Result], results)
