"""bench.compaction's pure part: the broker's clean log line read back (from a real clean's
log), interval union and rates against a brute-force count, and the summary's figures."""

from __future__ import annotations

import asyncio
import logging
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.compaction_stats import (
    Clean,
    RunResult,
    count_in,
    merge,
    parse_cleans,
    rate_in,
    summary,
)
from pafka.records.encoding import build_batch
from pafka.storage.config import LogConfig
from pafka.storage.log_cleaner import CleanerSettings, LogCleaner, run_in_thread
from pafka.storage.log_manager import LogManager

NOW_MS = 1_700_000_000_000


def test_the_cleaners_own_log_line_is_read_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logs = LogManager(tmp_path, LogConfig())
    log = logs.get_or_create("c", 3, LogConfig(cleanup_policy="compact"))
    for r in range(6):
        records = [(f"k{k}".encode(), f"v{r}".encode() * 50, []) for k in range(30)]
        log.append(build_batch(records, timestamp_ms=NOW_MS), leader_epoch=0, now_ms=NOW_MS)
        log.roll(NOW_MS)
    log.high_watermark = log.log_end_offset
    cleaner = LogCleaner(lambda: logs.logs, CleanerSettings(), runner=run_in_thread)
    with caplog.at_level(logging.INFO, logger="pafka.storage.log_cleaner"):
        outcome = asyncio.run(cleaner.clean_once(NOW_MS))
    assert outcome is not None
    (clean,) = parse_cleans(caplog.text)
    assert clean.partition == "c-3"
    assert clean.end_offset == outcome.end_offset
    assert (clean.records_read, clean.records_kept) == (outcome.records_read, outcome.records_kept)
    assert (clean.bytes_read, clean.bytes_written) == (outcome.bytes_read, outcome.bytes_written)
    assert clean.seconds == pytest.approx(outcome.elapsed_s, abs=0.01)


intervals = st.lists(
    st.tuples(st.integers(0, 100), st.integers(0, 20)).map(lambda t: (t[0], t[0] + t[1])),
    max_size=8,
)


@given(intervals)
def test_merged_intervals_are_disjoint_and_cover_the_same_points(
    spans: list[tuple[int, int]],
) -> None:
    merged = merge(spans)
    assert all(a[1] < b[0] for a, b in pairwise(merged))
    for point in range(0, 125):
        point_in = [s <= point < e for s, e in spans]
        assert any(point_in) == any(s <= point < e for s, e in merged)


@given(st.lists(st.integers(0, 130), max_size=60), intervals)
def test_rate_counts_each_event_once_over_the_covered_time(
    events: list[int], spans: list[tuple[int, int]]
) -> None:
    times = sorted(float(t) for t in events)
    covered = merge(spans)
    seconds = sum(e - s for s, e in covered)
    inside = [t for t in times if any(s <= t < e for s, e in covered)]
    expected = len(inside) / seconds if seconds else 0.0
    assert rate_in(times, spans) == pytest.approx(expected)
    for s, e in covered:
        assert count_in(times, s, e) == sum(1 for t in times if s <= t < e)


def test_the_summary_carries_each_runs_figures() -> None:
    cleans = [Clean("c-0", 900, 1000, 100, 50_000_000, 5_000_000, 0.5)] * 2
    run = RunResult(
        dedupe_buffer_bytes=4 * 2**20,
        log_bytes=2**30,
        records=1_000_000,
        keys=100_000,
        fill_seconds=3.0,
        cleans=cleans,
        worker_peak_memory_bytes=40 * 2**20,
        produce_idle_per_s=600_000.0,
        produce_cleaning_per_s=450_000.0,
    )
    assert run.bytes_cleaned == 100_000_000 and run.clean_seconds == 1.0
    assert run.cleaning_mb_per_s == pytest.approx(100.0)
    assert run.produce_ratio == pytest.approx(0.75)
    machine = {"cores": "2", "cpu": "x", "python": "3.11", "date": "today"}
    text = summary([run], machine, "python -m bench.compaction")
    assert "| 4.0 MiB | 1,024.0 MiB | 1,000,000 / 100,000 | 2 | 100 | 1.0 s | 100.0 |" in text
    assert "| 600,000 (0.0 s) | 450,000 (0.0 s) | 0.75 | 0.00 |" in text
    assert run.as_dict()["cleaning_mb_per_s"] == pytest.approx(100.0)
