"""Opening a log directory: find segments, check them, cut a torn or corrupt tail.

After a clean shutdown (the marker file is there) the indexes are trusted after a sanity check
and only the active segment's batches after its last index entry are read. After an unclean
shutdown every segment holding offsets at or above the recovery point is re-read with CRCs
checked and its indexes rebuilt; the first torn or corrupt batch ends the log: the rest of its
segment and every later segment are deleted. Indexes that are missing or fail the sanity check
are rebuilt in either case. First of all, a clean's swap that a crash interrupted is completed
or abandoned (:mod:`pafka.storage.swap`), so the segments found are the old ones or the new one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pafka.storage import layout, swap, txn_index
from pafka.storage.active_segment import ActiveSegment
from pafka.storage.checkpoints import read_epochs, read_partition_offsets, write_epochs
from pafka.storage.config import LogConfig
from pafka.storage.epochs import LeaderEpochCache
from pafka.storage.files import FileCache
from pafka.storage.index import OFFSET_ENTRY, index_looks_sane, last_entry_of
from pafka.storage.segment import Segment

log = logging.getLogger(__name__)


@dataclass
class Recovered:
    segments: list[Segment]
    log_start_offset: int
    recovery_point: int
    high_watermark: int
    epochs: LeaderEpochCache


def indexes_sane(directory: Path, base_offset: int) -> bool:
    log_path, index_path, time_path = layout.segment_files(directory, base_offset)
    if not (index_path.exists() and time_path.exists()):
        return False
    log_size = log_path.stat().st_size
    index_size = index_path.stat().st_size
    last = last_entry_of(index_path, OFFSET_ENTRY, index_size)
    return index_looks_sane(
        index_size, time_path.stat().st_size, None if last is None else last[1], log_size
    )


def recover(
    directory: Path, config: LogConfig, files: FileCache, clean_shutdown_known: bool | None
) -> Recovered:
    directory.mkdir(parents=True, exist_ok=True)
    marker = directory / layout.CLEAN_SHUTDOWN_FILE
    clean = marker.exists() if clean_shutdown_known is None else clean_shutdown_known
    offsets = read_partition_offsets(directory / layout.PARTITION_OFFSETS_CHECKPOINT)
    # Before strays go: an interrupted clean's .cleaned and .deleted files may still be needed.
    swap.recover_swaps(directory)
    txn_index.adopt_orphans(directory)
    for stray in layout.stray_files(directory):
        log.info("removing leftover %s", stray)
        stray.unlink(missing_ok=True)
    bases = layout.segment_base_offsets(directory)
    segments: list[Segment] = []
    validated: list[Segment] = []
    for i, base in enumerate(bases):
        last = i + 1 == len(bases)
        next_base = None if last else bases[i + 1]
        validate = not clean and (next_base is None or next_base > offsets.recovery_point)
        sane = indexes_sane(directory, base)
        if next_base is not None and not validate and sane:
            segments.append(Segment.open_sealed(directory, base, next_base, files))
            continue
        if not sane:
            log.warning("rebuilding the indexes of segment %d in %s", base, directory)
        segment = ActiveSegment(directory, base, config.index_interval_bytes, files)
        intact = segment.load(check_crc=validate, rebuild_indexes=validate or not sane)
        if validate:
            segment.flush()
        if next_base is not None and segment.next_offset > next_base:
            intact = False  # overlaps the next segment: keep this one, drop the rest
        if not intact:
            log.warning("cut the corrupt tail of %s at byte %d", segment.log_path, segment.size)
        if intact and next_base is not None:
            segments.append(segment.seal(files))
            if validate:
                validated.append(segments[-1])
            continue
        segments.append(segment)
        if validate:
            validated.append(segment)
        for doomed in bases[i + 1 :]:
            log.warning("deleting segment %d of %s after a corrupt tail", doomed, directory)
            layout.txn_index_file(directory, doomed).unlink(missing_ok=True)
            for path in layout.segment_files(directory, doomed):
                path.unlink(missing_ok=True)
        break
    if not segments:
        segments.append(
            ActiveSegment(directory, offsets.log_start_offset, config.index_interval_bytes, files)
        )
    log_end = segments[-1].next_offset
    log_start = min(max(offsets.log_start_offset, segments[0].base_offset), log_end)
    epochs = LeaderEpochCache(read_epochs(directory / layout.LEADER_EPOCH_CHECKPOINT))
    before = list(epochs.entries)
    epochs.truncate_from_end(log_end)
    epochs.truncate_from_start(log_start)
    # The cache is checkpointed lazily: batches written since may start epochs it lacks.
    for checked in validated:
        for _, header in checked.iter_headers():
            epochs.assign(header.partition_leader_epoch, header.base_offset)
    if epochs.entries != before:
        write_epochs(directory / layout.LEADER_EPOCH_CHECKPOINT, epochs.entries)
    marker.unlink(missing_ok=True)
    return Recovered(
        segments=segments,
        log_start_offset=log_start,
        recovery_point=log_end,
        high_watermark=min(max(offsets.high_watermark, log_start), log_end),
        epochs=epochs,
    )
