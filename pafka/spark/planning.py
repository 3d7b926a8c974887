"""Offset ranges: from options and the partitions' offsets to Spark partitions (no pyspark here).

A read is a set of half-open ranges ``[start, until)`` per topic-partition. The planning is pure:
the caller fetches each partition's ``(beginning, end)`` from the gateway and passes it in.

* :func:`resolve` turns ``earliest`` / ``latest`` / JSON (with -2 / -1) into concrete offsets.
* :func:`plan` pairs starts and ends into ranges, applying ``failOnDataLoss`` to starts below
  the log start (records deleted by retention).
* :func:`split` cuts ranges so there are at least ``minPartitions`` of them, in proportion to
  their sizes (Spark's Kafka source does the same).
* :func:`limit` caps a micro-batch at ``maxOffsetsPerTrigger`` records, shared out in proportion
  to each partition's backlog; it never exceeds the cap and always makes progress.
* :func:`encode_offsets` / :func:`decode_offsets`: streaming offsets as JSON-ready
  ``{topic: {"partition": offset}}``.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass

from pafka.spark.errors import DataLossError, OptionError, UnknownTopicError
from pafka.spark.options import EARLIEST, LATEST, OffsetSpec, TopicPartition

log = logging.getLogger(__name__)

# (beginning offset, end offset) of a partition, as the gateway's offsets endpoint gives them
Bounds = Mapping[TopicPartition, tuple[int, int]]


@dataclass(frozen=True, order=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    until: int

    @property
    def size(self) -> int:
        return self.until - self.start


def resolve(spec: OffsetSpec, bounds: Bounds, default: int, name: str) -> dict[TopicPartition, int]:
    """Concrete offsets for every partition in ``bounds``; ``default`` (EARLIEST or LATEST) for
    those a JSON spec leaves out. A JSON spec naming a partition not in ``bounds`` is an error."""
    if spec == "earliest" or spec == "latest":
        which = EARLIEST if spec == "earliest" else LATEST
        return {tp: _pick(which, b) for tp, b in bounds.items()}
    assert isinstance(spec, dict)
    unknown = sorted(tp for tp in spec if tp not in bounds)
    if unknown:
        named = ", ".join(f"{t}-{p}" for t, p in unknown)
        raise UnknownTopicError(f"{name} names partitions that are not read: {named}")
    return {tp: _pick(spec.get(tp, default), b) for tp, b in bounds.items()}


def _pick(offset: int, bounds: tuple[int, int]) -> int:
    if offset == EARLIEST:
        return bounds[0]
    if offset == LATEST:
        return bounds[1]
    return offset


def plan(
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    bounds: Bounds,
    *,
    fail_on_data_loss: bool,
) -> list[OffsetRange]:
    """Non-empty ranges from ``starts`` to ``ends``, sorted by topic and partition.

    A start below the partition's beginning means deleted records: an error, or (with
    ``fail_on_data_loss`` false) a warning and the range starts at the beginning instead.
    A start past the end is a bad option (batch) and an error either way.
    """
    ranges = []
    for tp in sorted(ends):
        start, until = starts.get(tp, bounds[tp][0]), ends[tp]
        beginning, end = bounds[tp]
        if until > end:
            raise OptionError(f"endingOffsets {until} of {tp[0]}-{tp[1]} is past its end {end}")
        if start > until:
            raise OptionError(
                f"starting offset {start} of {tp[0]}-{tp[1]} is after its ending offset {until}"
            )
        if start < beginning:
            lost = f"offsets {start} to {min(beginning, until) - 1} of {tp[0]}-{tp[1]}"
            if fail_on_data_loss:
                raise DataLossError(
                    f"{lost} were deleted (the log now starts at {beginning}); "
                    "set failOnDataLoss=false to skip them"
                )
            log.warning("skipping %s: deleted (the log now starts at %d)", lost, beginning)
            start = min(beginning, until)
        if start < until:
            ranges.append(OffsetRange(tp[0], tp[1], start, until))
    return ranges


def split(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """At least ``min_partitions`` ranges (when there are that many records), each original
    range cut into parts in proportion to its share of all records."""
    if not min_partitions or len(ranges) >= min_partitions:
        return list(ranges)
    total = sum(r.size for r in ranges)
    out: list[OffsetRange] = []
    for r in ranges:
        parts = min(r.size, max(1, math.ceil(r.size * min_partitions / total)))
        bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
        out.extend(
            OffsetRange(r.topic, r.partition, a, b) for a, b in itertools.pairwise(bounds) if a < b
        )
    return out


def limit(
    starts: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], max_records: int
) -> dict[TopicPartition, int]:
    """Ends no further than ``latest`` and at most ``max_records`` records past ``starts`` in all,
    shared out in proportion to each partition's backlog (largest remainders first)."""
    backlog = {tp: max(0, end - starts.get(tp, end)) for tp, end in latest.items()}
    total = sum(backlog.values())
    if total <= max_records:
        return dict(latest)
    shares = {tp: lag * max_records / total for tp, lag in backlog.items()}
    taken = {tp: math.floor(s) for tp, s in shares.items()}
    left = max_records - sum(taken.values())
    by_remainder = sorted(shares, key=lambda tp: (taken[tp] - shares[tp], tp))
    for tp in by_remainder[:left]:
        taken[tp] += 1
    return {tp: starts.get(tp, end) + taken[tp] for tp, end in latest.items()}


def encode_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = offset
    return out


def decode_offsets(data: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    return {(t, int(p)): int(o) for t, by_p in data.items() for p, o in by_p.items()}
