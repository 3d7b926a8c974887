"""bench.gateway's pure parts: which run of a repeated phase is reported, the table, and the
repeat count it takes."""

from __future__ import annotations

import argparse

import pytest

from bench.gateway import Row, _at_least_one, median_run, table


def _run(records_per_s: float) -> Row:
    return Row("1 broker", "REST produce", records_per_s, p99_ms=records_per_s / 1000)


def test_the_run_of_median_throughput_is_kept_whole_with_every_run_beside_it() -> None:
    runs = [_run(9_000), _run(14_000), _run(11_000)]
    kept = median_run(runs)
    assert kept is runs[2]  # its own p99 and CPU, not a mix of runs
    assert kept.run_records_per_s == [9_000, 14_000, 11_000]


def test_an_even_count_keeps_the_lower_middle_run() -> None:
    assert median_run([_run(4), _run(1), _run(3), _run(2)]).records_per_s == 2


def test_the_table_lists_every_run_only_for_repeated_phases() -> None:
    repeated = median_run([_run(9_000), _run(14_000), _run(11_000)])
    single = median_run([_run(5_000)])
    rows = table([repeated, single]).splitlines()[2:]
    assert "| 11,000 | 9,000, 14,000, 11,000 |" in rows[0]
    assert "| 5,000 |  |" in rows[1]


def test_a_phase_runs_at_least_once() -> None:
    """No median of no runs: --repeat 0 is refused when the arguments are read."""
    assert _at_least_one("2") == 2
    with pytest.raises(argparse.ArgumentTypeError):
        _at_least_one("0")
