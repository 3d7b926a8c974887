"""Where each record of an answer's batches starts (pure; numpy).

A record is its length prefix and that many bytes, so its start depends on every record before
it in its batch. Records of one size (the bulk case) are found by arithmetic instead: a start
guessed as ``first + i * size`` is right when every record before it in the run has that size,
which one read of the guessed length prefixes checks at once. :func:`record_starts` guesses the
runs of every batch of an answer together, a few numpy calls a round for all of them (an
answer of gateway-written batches holds hundreds); a batch whose sizes keep changing is left to
:func:`walk_starts`, which guesses runs within the one batch and walks records one by one
where runs are short.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pafka.errors import CorruptMessageError
from pafka.records.encoding import read_varint
from pafka.spark.varints import Bytes, Positions, read_varints

# Runs of records of one size shorter than this are walked one by one (numpy's per-call cost
# is more); a run is looked for at most this far ahead (less far where sizes keep changing).
STRIDE_MIN_RECORDS = 16
STRIDE_MAX_RECORDS = 8192
# Rounds of guessing every batch's next run together; batches left after them are walked.
# Answers of fewer batches are walked batch by batch (the joint guess costs more calls).
LOCKSTEP_ROUNDS = 4
LOCKSTEP_MIN_BATCHES = 4
# The first round guesses no further than this into each batch: a batch's offset deltas count
# from 0 and the 65th takes a second byte, so its first run of one record size ends there;
# guessing the rest in that round would read it all once more in the next.
FIRST_RUN_RECORDS = 64


def record_starts(
    raw: bytes, buf: Bytes, counts: Sequence[int], spans: Sequence[tuple[int, int]], limit: int
) -> Positions:
    """Where each record starts, batch after batch: batch ``i`` holds ``counts[i]`` records
    in ``raw[spans[i][0]:spans[i][1]]`` (``buf`` is ``raw`` as numpy, zero-padded past
    ``limit``). Records that do not add up to their batch's length are refused."""
    count = np.array(counts, np.int64)
    begin = np.array([b for b, _ in spans], np.int64)
    end = np.array([e for _, e in spans], np.int64)
    out = np.empty(int(count.sum()), np.int64)
    first_out = np.cumsum(count) - count
    pos, done = begin.copy(), np.zeros(len(count), np.int64)
    guessing = np.flatnonzero(count > 0)
    walking: list[int] = []
    rounds = LOCKSTEP_ROUNDS if len(guessing) >= LOCKSTEP_MIN_BATCHES else 0
    for round_ in range(rounds):
        if not len(guessing):
            break
        wanted = count[guessing] - done[guessing]
        if round_ == 0:
            wanted = np.minimum(wanted, FIRST_RUN_RECORDS)
        try:
            guessed, strides, run = _guess_runs(buf, pos[guessing], end[guessing], wanted, limit)
        except CorruptMessageError:
            # A wrong guess read a value's bytes as an overlong varint, or a record is damaged:
            # walking tells which, and words the refusal.
            break
        for_batch = np.repeat(guessing, run)
        out[first_out[for_batch] + done[for_batch] + _ranks(run)] = guessed
        pos[guessing] += run * strides
        done[guessing] += run
        left = done[guessing] < count[guessing]
        # Short runs mean sizes keep changing: guessing again would cost more than walking.
        walking += guessing[left & (run < STRIDE_MIN_RECORDS)].tolist()
        guessing = guessing[left & (run >= STRIDE_MIN_RECORDS)]
    for i in sorted([*walking, *guessing.tolist()]):
        b, n = int(first_out[i] + done[i]), int(count[i] - done[i])
        out[b : b + n] = walk_starts(raw, buf, int(pos[i]), n, int(end[i]))
        pos[i] = end[i]
    if bool(np.any(pos != end)):
        raise CorruptMessageError("records disagree with their batch's length")
    return out


def _ranks(sizes: Positions) -> Positions:
    """0, 1, ... within each of the consecutive segments of ``sizes``."""
    return np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)


def _guess_runs(
    buf: Bytes, pos: Positions, end: Positions, left: Positions, limit: int
) -> tuple[Positions, Positions, Positions]:
    """For batches whose next record starts at ``pos``: the starts of each one's run of records
    of that record's size, of at most ``left`` records (joined, batch after batch), the sizes,
    and the runs' lengths (at least one record each)."""
    length, size = read_varints(buf, pos, limit)
    if bool(np.any(length < 0)):
        raise CorruptMessageError("record with a negative length")
    stride = size + length
    room = (end - pos) // stride
    if bool(np.any(room < 1)):
        raise CorruptMessageError("records disagree with their batch's length")
    fits = np.minimum(left, room)
    rank = _ranks(fits)
    of = np.repeat(np.arange(len(pos)), fits)
    guesses = pos[of] + rank * stride[of]
    lengths, sizes = read_varints(buf, guesses, limit)
    # The first guess of each batch is its known start, so every run holds at least one.
    wrong = np.where(lengths + sizes == stride[of], fits[of], rank)
    run = np.minimum.reduceat(wrong, np.cumsum(fits) - fits)
    kept = rank < run[of]
    return guesses[kept], stride, run


def walk_starts(raw: bytes, buf: Bytes, begin: int, count: int, end: int) -> Positions:
    """Where each of the ``count`` records in ``raw[begin:end]`` starts (its length prefix).

    Runs of records of one size are found by arithmetic and checked at once: a guessed start
    is right when every record before it in the run has that size. Where sizes keep changing,
    records are walked one by one for a while."""
    found: list[Positions] = []
    pos, done, window, walk = begin, 0, STRIDE_MAX_RECORDS, STRIDE_MIN_RECORDS
    while done < count:
        if pos >= end:
            raise CorruptMessageError("records disagree with their batch's length")
        length, after = read_varint(raw, pos)
        stride = after - pos + length
        if length < 0:
            raise CorruptMessageError("record with a negative length")
        fits = min(count - done, window, (end - pos) // stride)
        if fits >= STRIDE_MIN_RECORDS:
            guesses = pos + np.arange(fits, dtype=np.int64) * stride
            try:
                lengths, sizes = read_varints(buf, guesses, end)
            except CorruptMessageError:  # a wrong guess read a value's bytes as a varint
                run = 1
            else:
                wrong = np.flatnonzero(lengths + sizes != stride)
                run = int(wrong[0]) if len(wrong) else fits
            found.append(guesses[:run])
            pos, done = pos + run * stride, done + run
            # A size changes a few times a batch (offset and timestamp deltas growing a byte):
            # guess far again at once; where sizes keep changing, guess less far.
            window = min(max(4 * run, STRIDE_MIN_RECORDS * 4), STRIDE_MAX_RECORDS)
            if run >= STRIDE_MIN_RECORDS:
                walk = STRIDE_MIN_RECORDS
                continue
            walk = min(2 * walk, STRIDE_MAX_RECORDS)  # sizes vary: guess less often
        walked = []
        for _ in range(min(count - done, walk)):
            walked.append(pos)
            length, after = read_varint(raw, pos) if pos < end else (-1, pos)
            if length < 0:
                raise CorruptMessageError("record runs past the end of its batch")
            pos = after + length
        found.append(np.array(walked, np.int64))
        done += len(walked)
    if pos != end:
        raise CorruptMessageError("records disagree with their batch's length")
    return np.concatenate(found) if found else np.empty(0, np.int64)
