"""The leader epoch cache of one log: where each leader epoch's writes start (KIP-101).

Followers and restarted leaders ask "where does epoch E end?" (OffsetForLeaderEpoch) and
truncate to the answer, instead of to a high watermark that may be stale, so logs converge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNDEFINED = (-1, -1)


@dataclass
class LeaderEpochCache:
    entries: list[tuple[int, int]] = field(default_factory=list)  # (epoch, start_offset)

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else -1

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True when this changed the cache."""
        if epoch < 0 or (self.entries and epoch <= self.entries[-1][0]):
            return False
        self.entries = [(e, o) for e, o in self.entries if o < start_offset]
        self.entries.append((epoch, start_offset))
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest epoch <= ``epoch``, the offset where it ends) — Kafka's ``endOffsetFor``.

        The latest epoch ends at the log end. An epoch older than every entry answers itself
        with the first entry's start offset; one newer than the latest is undefined.
        """
        if epoch < 0 or not self.entries:
            return UNDEFINED
        if epoch == self.latest_epoch:
            return epoch, log_end_offset
        higher = next((i for i, (e, _) in enumerate(self.entries) if e > epoch), None)
        if higher is None:
            return UNDEFINED
        floor_epoch = self.entries[higher - 1][0] if higher else epoch
        return floor_epoch, self.entries[higher][1]

    def truncate_from_end(self, end_offset: int) -> None:
        self.entries = [(e, o) for e, o in self.entries if o < end_offset]

    def truncate_from_start(self, start_offset: int) -> None:
        kept = [(e, o) for e, o in self.entries if o > start_offset]
        earlier = [(e, o) for e, o in self.entries if o <= start_offset]
        if earlier:
            kept.insert(0, (earlier[-1][0], start_offset))
        self.entries = kept
