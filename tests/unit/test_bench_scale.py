"""The scale benchmark's pure parts: stall windows, produce summaries, CPU shares, growth with
N, the descriptor budget, targets and the report's cells."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.scale.figures import FAILOVER_LOADED_S, figures
from bench.scale.report import cell, render
from bench.scale.runner import Run
from bench.scale.stats import (
    Send,
    cpu_percent,
    descriptor_budget,
    growth_exponents,
    stall_windows,
    summarize_produce,
    superlinear,
)

P = (0, 0)
Q = (0, 1)


def test_a_write_waits_from_its_send_or_the_previous_answer_whichever_is_later() -> None:
    sends = [
        Send(P, sent_s=0.0, answered_s=1.0),
        Send(P, sent_s=0.5, answered_s=6.0),  # waited from the answer at 1.0: 5 s
        Send(P, sent_s=5.0, answered_s=6.0),  # answered in the same batch: no longer stall
        Send(Q, sent_s=0.0, answered_s=0.2),
    ]
    assert stall_windows(sends, end_s=10.0) == {P: 5.0, Q: pytest.approx(0.2)}


def test_a_write_never_answered_waits_until_the_end() -> None:
    sends = [Send(P, sent_s=0.0, answered_s=1.0), Send(P, sent_s=2.0)]
    assert stall_windows(sends, end_s=30.0) == {P: 28.0}


def test_a_refused_write_ends_the_wait_but_counts_as_an_error() -> None:
    sends = [
        Send(P, sent_s=0.0, answered_s=0.01),
        Send(P, sent_s=1.0, answered_s=4.0, error="NOT_ENOUGH_REPLICAS"),
        Send(P, sent_s=2.0),
    ]
    summary = summarize_produce(sends, end_s=5.0)
    assert summary.count == 3
    assert summary.acked == 1
    assert summary.errors == 1
    assert summary.unacknowledged == 1
    assert summary.error_names == {"NOT_ENOUGH_REPLICAS": 1}
    assert summary.p50_ms == summary.max_ms == pytest.approx(10.0)
    assert summary.longest_stall_s == pytest.approx(3.0)


def test_no_sends_summarize_to_nothing() -> None:
    summary = summarize_produce([], end_s=1.0)
    assert (summary.count, summary.p99_ms, summary.longest_stall_s) == (0, None, 0.0)


latencies = st.lists(st.tuples(st.floats(0, 100), st.floats(0, 10)), min_size=1, max_size=50)


@given(latencies)
def test_the_longest_stall_is_at_most_the_longest_latency(pairs: list[tuple[float, float]]) -> None:
    # Every write acknowledged; answers in send order, as an idempotent producer gets them.
    answered = 0.0
    sends = []
    for sent, latency in sorted(pairs):
        answered = max(answered, sent + latency)
        sends.append(Send(P, sent_s=sent, answered_s=answered))
    summary = summarize_produce(sends, end_s=answered + 1)
    assert summary.max_ms is not None
    assert summary.longest_stall_s <= summary.max_ms / 1000 + 1e-3
    assert summary.unacknowledged == 0


def test_cpu_share_of_one_core() -> None:
    assert cpu_percent(100, 150, ticks_per_s=100, elapsed_s=10.0) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        cpu_percent(0, 1, ticks_per_s=100, elapsed_s=0.0)


def test_growth_exponent_is_one_for_linear_and_two_for_quadratic() -> None:
    linear = [(1000, 1.0), (5000, 5.0), (10_000, 10.0)]
    quadratic = [(1000, 1.0), (10_000, 100.0)]
    assert growth_exponents(linear) == [pytest.approx(1.0), pytest.approx(1.0)]
    assert not superlinear(linear)
    assert growth_exponents(quadratic) == [pytest.approx(2.0)]
    assert superlinear(quadratic)


def test_growth_skips_missing_and_zero_figures() -> None:
    assert growth_exponents([(1000, None), (5000, 0.0), (10_000, 3.0)]) == []


@given(st.integers(1, 100_000), st.floats(0.1, 10), st.integers(1000, 1_000_000))
def test_descriptor_budget_fits_exactly_when_under_the_limit(
    partitions: int, per_replica: float, limit: int
) -> None:
    budget = descriptor_budget(partitions, 1, 3, per_replica, limit)
    assert budget.needed >= math.ceil(partitions / 3) * per_replica
    assert budget.fits == (budget.needed < limit)


def test_fifty_thousand_partitions_at_three_descriptors_do_not_fit_under_twenty_thousand() -> None:
    budget = descriptor_budget(50_000, 1, 3, 3.0, 20_000)
    assert not budget.fits
    assert "does not fit" in budget.reason(50_000, 1)
    assert descriptor_budget(50_000, 1, 3, 1.0, 20_000).fits


def test_targets_follow_the_issue() -> None:
    by_key = {f.key: f for f in figures(session_timeout_s=6.0)}
    assert by_key["kill_new_leaders_s"].limit == 8.0
    assert by_key["failover_loaded_s"].verdict(FAILOVER_LOADED_S) == "met"
    assert by_key["failover_loaded_s"].verdict(FAILOVER_LOADED_S + 0.01) == "not met"
    # An event that never came within its deadline misses its target.
    assert by_key["preferred_s"].verdict(None) == "not met"
    assert by_key["metadata_p50_ms"].verdict(1.0) == ""


def test_report_cells_say_not_within_the_deadline_and_the_verdict() -> None:
    by_key = {f.key: f for f in figures(session_timeout_s=6.0)}
    run = Run(1000, 3, {"preferred_s": None, "restart_isr_full_s": 12.34}, [], {})
    assert cell(by_key["preferred_s"], run, 180) == "not within 180 s (not met)"
    assert cell(by_key["restart_isr_full_s"], run, 180) == "12.3 (met)"
    assert cell(by_key["create_s"], run, 180) == "n/a"


def test_report_renders_every_figure_and_flags_superlinear_growth() -> None:
    raw: dict[str, object] = {
        "machine": {"cores": "2"},
        "options": {
            "phase_timeout_s": "180",
            "partitions_per_topic": "100",
            "idle_s": "20",
            "produce_rate_per_s": "200",
        },
        "session_timeout_s": 6.0,
        "notes": ["50,000 partitions at RF 1 does not fit"],
    }
    runs = [
        Run(1000, 3, {"preferred_s": 1.0}, ["a note"], {}),
        Run(5000, 3, {"preferred_s": 30.0}, [], {}),
    ]
    text = render(raw, runs, {})
    for figure in figures(6.0):
        assert figure.label in text
    assert "preferred election of all partitions **(grows worse than linearly)**" in text
    assert "does not fit" in text and "a note" in text


def test_partition_counts_are_parsed_or_refused_with_a_clear_error() -> None:
    from pafka.cli.bench_scale import _counts
    from pafka.errors import ConfigError

    assert _counts("1000, 5000,10000") == [1000, 5000, 10_000]
    for bad in ("x", "", "100,-1"):
        with pytest.raises(ConfigError):
            _counts(bad)


def test_pafka_bench_keeps_the_comparison_and_gains_the_scale_workload() -> None:
    from pafka.cli.main import build_parser

    parser = build_parser()
    comparison = parser.parse_args(["bench", "--systems", "pafka-kafka", "--smoke"])
    scale = parser.parse_args(["bench", "scale", "--partitions", "100,200", "--profile"])
    assert comparison.handler.__name__ == "bench"
    assert comparison.systems == "pafka-kafka"
    assert scale.handler.__name__ == "scale"
    assert (scale.partitions, scale.profile) == ("100,200", True)
