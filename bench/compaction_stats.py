"""The arithmetic and the report of ``bench.compaction``, pure: no cluster, no clock.

Produce throughput with and without the cleaner comes from one producer's acknowledgement
times split by the intervals in which a cleaner worker process was seen running; cleaning
throughput from the broker's own log line of each clean (bytes read and the pass's time).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

# The line pafka.storage.log_cleaner logs after each clean.
CLEANED_LINE = re.compile(
    r"cleaned (?P<partition>\S+) up to offset (?P<end>\d+): (?P<kept>\d+) of (?P<read>\d+) "
    r"records kept, (?P<bytes_read>\d+) -> (?P<bytes_written>\d+) bytes in (?P<seconds>[\d.]+) s"
)

Interval = tuple[float, float]


@dataclass(frozen=True)
class Clean:
    partition: str
    end_offset: int
    records_read: int
    records_kept: int
    bytes_read: int
    bytes_written: int
    seconds: float


def parse_cleans(log_text: str) -> list[Clean]:
    """Every clean a broker's log reports, in order."""
    return [
        Clean(
            m["partition"],
            int(m["end"]),
            int(m["read"]),
            int(m["kept"]),
            int(m["bytes_read"]),
            int(m["bytes_written"]),
            float(m["seconds"]),
        )
        for m in CLEANED_LINE.finditer(log_text)
    ]


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Overlapping or touching intervals joined, sorted."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def count_in(times: Sequence[float], start: float, end: float) -> int:
    """How many of the sorted ``times`` fall in ``[start, end)``."""
    return bisect.bisect_left(times, end) - bisect.bisect_left(times, start)


def rate_in(times: Sequence[float], intervals: Iterable[Interval]) -> float:
    """Events per second over the intervals (0 when they cover no time)."""
    spans = merge(intervals)
    seconds = sum(end - start for start, end in spans)
    if seconds <= 0:
        return 0.0
    return sum(count_in(times, start, end) for start, end in spans) / seconds


@dataclass
class RunResult:
    """One broker run: the log filled, then cleaned."""

    dedupe_buffer_bytes: int
    log_bytes: int
    records: int
    keys: int
    fill_seconds: float
    cleans: list[Clean] = field(default_factory=list)
    worker_peak_memory_bytes: int = 0
    log_bytes_after: int = 0
    cleaning_wall_seconds: float = 0.0
    produce_idle_per_s: float = 0.0
    produce_idle_seconds: float = 0.0
    load_average: float = 0.0  # the machine's 1-minute load when the cleaner was let in
    produce_cleaning_per_s: float = 0.0

    @property
    def bytes_cleaned(self) -> int:
        return sum(c.bytes_read for c in self.cleans)

    @property
    def clean_seconds(self) -> float:
        return sum(c.seconds for c in self.cleans)

    @property
    def cleaning_mb_per_s(self) -> float:
        seconds = self.clean_seconds
        return self.bytes_cleaned / seconds / 1e6 if seconds else 0.0

    @property
    def produce_ratio(self) -> float:
        idle = self.produce_idle_per_s
        return self.produce_cleaning_per_s / idle if idle else 0.0

    def as_dict(self) -> dict[str, object]:
        body = asdict(self)
        body.update(
            bytes_cleaned=self.bytes_cleaned,
            clean_seconds=self.clean_seconds,
            cleaning_mb_per_s=self.cleaning_mb_per_s,
            produce_ratio=self.produce_ratio,
        )
        return body


def _mib(n: float) -> str:
    return f"{n / 2**20:,.1f} MiB"


def summary(runs: Sequence[RunResult], machine: dict[str, str], command: str) -> str:
    """The Markdown summary of a benchmark's runs (the first measured producers too)."""
    lines = [
        "# Log compaction: cleaning throughput, producers beside the cleaner, cleaner memory",
        "",
        f"`{command}` on {machine['cores']} cores ({machine['cpu']}), Python "
        f"{machine['python']}, {machine['date']}. One broker and one controller per run, a "
        "fresh local cluster each; the compacted topic has one partition.",
        "",
        "| dedupe buffer | log | records / keys | cleans | MB cleaned | clean time | MB/s | "
        "log after | worker peak memory |",
        "|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {_mib(r.dedupe_buffer_bytes)} | {_mib(r.log_bytes)} | {r.records:,} / "
            f"{r.keys:,} | {len(r.cleans)} | {r.bytes_cleaned / 1e6:,.0f} | "
            f"{r.clean_seconds:.1f} s | {r.cleaning_mb_per_s:.1f} | {_mib(r.log_bytes_after)} | "
            f"{_mib(r.worker_peak_memory_bytes)} |"
        )
    measured = [r for r in runs if r.produce_idle_per_s]
    if measured:
        lines += [
            "",
            "Producer to another topic (one librdkafka producer, 100-byte records, acks=1), "
            "records/s from its acknowledgements while a cleaner worker ran vs before the "
            "cleaner had anything to do, same run:",
            "",
            "| dedupe buffer | idle | cleaning | ratio | load average |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in measured:
            lines.append(
                f"| {_mib(r.dedupe_buffer_bytes)} | {r.produce_idle_per_s:,.0f} "
                f"({r.produce_idle_seconds:.1f} s) | {r.produce_cleaning_per_s:,.0f} "
                f"({r.cleaning_wall_seconds:.1f} s) | {r.produce_ratio:.2f} | "
                f"{r.load_average:.2f} |"
            )
    lines += [
        "",
        "Load average is the machine's 1-minute load when the cleaner was let in: the "
        "machine is shared, and the producer, the broker and the cleaner's worker already "
        "want three cores of its two. "
        "MB cleaned is the bytes of log each clean read and rewrote (the broker's log line "
        "per clean), clean time the passes' own time in the worker process; worker peak memory "
        "is the worker's VmHWM as the broker reports it "
        "(`pafka_broker_log_cleaner_worker_peak_memory_bytes`). A dedupe buffer holding fewer "
        "keys than the log's live keys makes each clean stop where its map filled (the next "
        "clean goes on from there), so such a run is measured over its first cleans only.",
        "",
    ]
    return "\n".join(lines)
