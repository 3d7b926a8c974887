"""The common produce request written from its columns, with no Python step per record.

A body of plain records (:class:`~services.gateway.plain_columns.PlainColumns`) posted to a
partition, or posted to a topic with every key null, needs no per-record decision: it is cut
into runs of about :data:`~services.gateway.produce.BATCH_TARGET_BYTES`, each a slice of the
columns, which go to the path's partition, or (keyless) each to the next partition in turn
(as :func:`~services.gateway.produce.choose_partitions` places them). Each run is one
:meth:`~pafka.client.producer.Producer.send_columns`, and the 200 body is rendered from the
runs' base offsets.

What a client observes is :func:`services.gateway.produce.write`'s: the same partitions, the same
batches (save that a request of more batches than the topic has partitions, whose batches come
round to a partition again, may have two of them joined there), records of a partition sent in
order, and after a failed run the partition's later runs not sent at all (reported as not
sent), the answer then listing every record's outcome.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, chain, repeat

from fastapi.responses import Response

from pafka.errors import PafkaError, RestError
from services.gateway import errors
from services.gateway.context import GatewayContext
from services.gateway.formats import V2
from services.gateway.plain_columns import PlainColumns
from services.gateway.produce import (
    BATCH_TARGET_BYTES,
    RECORD_OVERHEAD_BYTES,
    Result,
    answer,
    keyless,
    written_body,
)


@dataclass
class Run:
    """Records ``positions`` of the request, sent to ``partition`` as one send."""

    partition: int
    positions: range
    base_offset: int | None = None
    error: PafkaError | None = None
    held: bool = False  # not sent: an earlier run of its partition failed


def shares(cut: list[Run], fixed: int | None, partitions: int, first_turn: int) -> list[list[Run]]:
    """The request's runs (``cut``, in position order) by partition, each partition's in
    order: all to the path's partition ``fixed``, else run ``n`` to partition
    ``(first_turn + n) % partitions``."""
    by_partition: dict[int, list[Run]] = {}
    for n, run in enumerate(cut):
        partition = fixed if fixed is not None else (first_turn + n) % partitions
        by_partition.setdefault(partition, []).append(Run(partition, run.positions))
    return list(by_partition.values())


def runs(columns: PlainColumns, share: Run, whole_fits: bool) -> list[Run]:
    """``share`` cut into consecutive runs of about ``BATCH_TARGET_BYTES`` (a record larger
    than that alone), as :func:`services.gateway.produce.batches` cuts them."""
    if whole_fits:
        return [share]
    positions = share.positions
    picked = _picked(positions)
    weights = map(RECORD_OVERHEAD_BYTES.__add__, map(len, columns.values[picked]))
    if columns.keys is not None:
        weights = map(int.__add__, weights, map(len, columns.keys[picked]))
    ends = [0, *accumulate(weights)]
    cut: list[Run] = []
    first = 0
    while first < len(positions):
        last = bisect_right(ends, ends[first] + BATCH_TARGET_BYTES) - 1
        last = max(last, first + 1)
        cut.append(Run(share.partition, positions[first:last]))
        first = last
    return cut


def _fits_whole(columns: PlainColumns) -> bool:
    size = sum(map(len, columns.values)) + RECORD_OVERHEAD_BYTES * len(columns.values)
    if columns.keys is not None:
        size += sum(map(len, columns.keys))
    return size <= BATCH_TARGET_BYTES


async def _send_share(
    ctx: GatewayContext, topic: str, columns: PlainColumns, share: list[Run], acks: int
) -> None:
    for n, run in enumerate(share):
        picked = _picked(run.positions)
        keys = None if columns.keys is None else columns.keys[picked]
        try:
            # The producer settles every send within its request timeout and a grace period.
            appended = await ctx.producer.send_columns(
                topic, run.partition, keys, columns.values[picked], acks
            )
        except PafkaError as error:
            if error.retriable:
                # As produce.write: the leader may have moved, the next request looks it up.
                ctx.cluster.forget(topic)
            run.error = error
            held = RestError(
                errors.KAFKA_RETRIABLE_ERROR,
                f"not sent: an earlier record for partition {run.partition} failed "
                f"({error.message})",
            )
            for later in share[n + 1 :]:
                later.error, later.held = held, True
            return
        run.base_offset = appended.base_offset


def answer_runs(count: int, sent: list[Run]) -> Response:
    """The answer to a request of ``count`` records sent as ``sent``: a 200 listing each
    record's partition and offset, rendered without a Python step per record, or, when any
    run failed or was held back, every record's outcome as ``produce.answer`` words it."""
    if any(run.error is not None for run in sent):
        return _answer_failed(count, sent)
    offsets = [range(r.base_offset or 0, (r.base_offset or 0) + len(r.positions)) for r in sent]
    if all(run.partition == sent[0].partition for run in sent):  # in position order
        return Response(written_body([sent[0].partition], chain(*offsets)), media_type=V2)
    by_position, partitions = [0] * count, [0] * count
    for run, written in zip(sent, offsets, strict=True):
        picked = _picked(run.positions)
        partitions[picked] = repeat(run.partition, len(run.positions))
        by_position[picked] = written
    return Response(written_body(partitions, by_position), media_type=V2)


def _answer_failed(count: int, sent: list[Run]) -> Response:
    """Every record's outcome, as :func:`services.gateway.produce.answer` words it."""
    results: list[Result] = [Result(0)] * count
    for run in sent:
        size = len(run.positions)
        if run.error is None:
            base = run.base_offset or 0
            outcomes = [Result(run.partition, offset) for offset in range(base, base + size)]
        else:
            retriable = run.held or run.error.retriable
            outcomes = [Result(run.partition, error=run.error, retriable=retriable)] * size
        results[_picked(run.positions)] = outcomes
    return answer(results)


def _picked(positions: range) -> slice:
    return slice(positions.start, positions.stop, positions.step)


async def write_columns(
    ctx: GatewayContext,
    topic: str,
    columns: PlainColumns,
    fixed: int | None,
    partitions: int,
    acks: int,
) -> Response:
    """Write ``columns`` to the path's partition ``fixed``, or (None) a run at a time to the
    next of the topic's ``partitions``, and answer as a produce request is answered."""
    count = len(columns.values)
    cut = runs(columns, Run(0, range(count)), _fits_whole(columns))
    first_turn = 0 if fixed is not None else keyless.of(topic).take(len(cut))
    planned = shares(cut, fixed, partitions, first_turn)
    sends = [_send_share(ctx, topic, columns, share, acks) for share in planned]
    if len(sends) == 1:  # most requests: no task to spawn
        await sends[0]
    else:
        await asyncio.gather(*sends)
    return answer_runs(count, [run for share in planned for run in share])
