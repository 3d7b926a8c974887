"""The comparison benchmark's pure parts: percentiles, rates and ratios, workload shares and
names, the run order, the targets and the Markdown tables."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.compare import profiles, report, workloads
from bench.compare.results import (
    Latency,
    RunResult,
    percentile,
    ratio,
    same_run_ratios,
    summarize,
)
from bench.compare.runner import Outcome, own_peak_rate, peak_rate, rotated
from bench.compare.targets import checks


def result(
    system: str, rep: int = 0, produce: float = 1.0, consume: float = 1.0, **kw
) -> RunResult:
    """A successful throughput run of 1000 records taking ``produce``/``consume`` seconds."""
    fields = dict(
        system=system,
        workload="100B-1p-1x1-acks1-rf1",
        kind="throughput",
        repetition=rep,
        message_size_bytes=100,
        produced=1000,
        produce_s=produce,
        consumed=1000,
        consume_s=consume,
        expected=1000,
        server_cpu_s=0.5,
    )
    fields.update(kw)
    return RunResult(**fields)


# -- percentiles -------------------------------------------------------------------------------


def test_percentile_nearest_rank():
    values = list(range(1, 101))
    assert percentile(values, 0.5) == 50
    assert percentile(values, 0.99) == 99
    assert percentile(values, 1.0) == 100
    assert percentile(values, 0.0) == 1
    assert percentile([7], 0.999) == 7


def test_percentile_refuses_bad_input():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)
    with pytest.raises(ValueError, match="outside"):
        percentile([1, 2], 1.5)


@given(st.lists(st.integers(0, 10**9), min_size=1), st.floats(0, 1))
def test_percentile_is_a_member_with_enough_values_below(values, q):
    ordered = sorted(values)
    p = percentile(ordered, q)
    assert p in ordered
    # At least a q share of the values are <= p, and fewer than that are < p.
    assert sum(v <= p for v in ordered) >= q * len(ordered)
    assert sum(v < p for v in ordered) < max(1, math.ceil(q * len(ordered)))


def test_latency_summary_and_cdf():
    summary = Latency.of([5, 1, 3, 2, 4] * 200)
    assert summary is not None
    assert (summary.p50_us, summary.p99_us, summary.p999_us, summary.max_us) == (3, 5, 5, 5)
    assert summary.count == 1000
    quantiles = [q for q, _ in summary.cdf]
    assert quantiles == sorted(quantiles) and quantiles[0] == 0.0 and quantiles[-1] == 1.0
    assert [v for _, v in summary.cdf] == sorted(v for _, v in summary.cdf)
    assert Latency.of([]) is None


# -- rates, ratios, summaries ------------------------------------------------------------------


def test_rates_and_cpu_per_million():
    r = result("a", produce=0.5, consume=2.0)
    assert r.produce_rate == 2000 and r.consume_rate == 500
    assert r.produce_mb_s == pytest.approx(0.2)
    assert r.cpu_s_per_million == pytest.approx(500.0)
    assert r.ok
    assert not result("a", consumed=999).ok
    assert not result("a", error="boom").ok


def test_ratio_handles_missing_and_zero():
    assert ratio(6.0, 2.0) == 3.0
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None


def test_same_run_ratios_pair_runs_of_one_repetition():
    results = [
        result("pafka-kafka", 0, produce=1.0, consume=1.0),
        result("peer", 0, produce=3.0, consume=2.0),
        result("pafka-kafka", 1, produce=1.0, consume=1.0),
        result("peer", 1, produce=5.0, consume=4.0),
        # A repetition the peer failed gives no ratio.
        result("pafka-kafka", 2, produce=1.0),
        result("peer", 2, error="died"),
    ]
    got = same_run_ratios(results, "100B-1p-1x1-acks1-rf1", "pafka-kafka", "peer", "throughput")
    assert got == {"produce": 4.0, "consume": 3.0}


def test_summary_takes_medians_and_lists_failures():
    results = [
        result("s", 0, produce=1.0),
        result("s", 1, produce=2.0),
        result("s", 2, produce=4.0),
        result("s", 3, error="consumer died"),
    ]
    summary = summarize(results, "s", "100B-1p-1x1-acks1-rf1")
    assert summary.runs == 3
    assert summary.produce_rate == 500.0
    assert summary.failures == ["throughput #3: consumer died"]


def test_round_trip_through_json():
    r = result("s", kind="latency", target_rate_per_s=10.0, latency=Latency.of([1, 2, 3]))
    assert RunResult.from_json(r.to_json()) == r


# -- workloads ---------------------------------------------------------------------------------


@given(
    st.integers(1, 10**6),
    st.sampled_from([1, 2, 3, 6]),
    st.integers(1, 3),
    st.sampled_from([1, 2, 3, 6]),
)
def test_shares_give_every_partition_and_consumer_the_same(count, partitions, producers, consumers):
    if partitions % consumers or count < partitions * producers:
        return
    w = workloads.make(100, partitions, producers, consumers, "1", 1, count)
    shares = workloads.shares(w)
    total = shares.total(producers)
    assert shares.per_producer % partitions == 0
    assert shares.per_consumer * consumers == total
    assert count - total < partitions * producers


@given(
    st.integers(1, 10**6),
    st.floats(1, 2e6),
    st.sampled_from([1, 2, 3, 6]),
    st.integers(1, 3),
)
def test_paced_shares_are_whole_sticky_runs_per_partition(count, rate, partitions, producers):
    if count < partitions * producers:
        return
    w = replace(workloads.make(100, partitions, producers, 1, "1", 1, count), rate_per_s=rate)
    run = workloads.run_records(w)
    assert run >= 1
    assert run <= max(1, round(rate / producers * workloads.STICKY_RUN_S))
    shares = workloads.shares(w)
    # Every producer sends whole rounds of runs, so each partition gets the same count; and no
    # partition is left out of a run because it is too short.
    assert shares.per_producer % (partitions * run) == 0
    assert shares.per_producer >= partitions


def test_workload_names_round_trip():
    for w in workloads.full_matrix():
        assert workloads.parse(w.name).name == w.name
    parsed = workloads.parse("1KiB-6p-2x2-acksall-rf3")
    assert (parsed.message_size_bytes, parsed.partitions, parsed.acks) == (1024, 6, "all")
    assert parsed.replication_factor == 3


@pytest.mark.parametrize("bad", ["", "100B-1p", "100B-1p-1x1-acks2-rf1", "xB-1p-1x1-acks1-rf1"])
def test_bad_workload_names_say_what_is_expected(bad):
    with pytest.raises(workloads.WorkloadError, match="expected SIZE"):
        workloads.parse(bad)


def test_consumers_must_share_partitions_evenly():
    with pytest.raises(workloads.WorkloadError, match="cannot share 1 partition"):
        workloads.parse("100B-1p-1x2-acks1-rf1")


def test_select_expands_sets_without_repeats():
    chosen = workloads.select(["default", "100B-1p-1x1-acks1-rf1"], 1200)
    assert [w.name for w in chosen] == ["100B-1p-1x1-acks1-rf1", "100B-6p-2x2-acks1-rf1"]
    assert all(w.message_count == 1200 for w in chosen)
    assert len(workloads.select(["full"])) == len(workloads.full_matrix())


def test_paced_workload_keeps_the_shape():
    w = workloads.paced(workloads.parse("100B-6p-2x2-acks1-rf1"), 1000.0, 2.5)
    assert (w.rate_per_s, w.message_count, w.partitions) == (1000.0, 2500, 6)
    with pytest.raises(workloads.WorkloadError):
        workloads.paced(w, 0.0, 1.0)


# -- run order and pacing ----------------------------------------------------------------------


def test_rotation_puts_each_system_first_in_turn():
    names = ["a", "b", "c"]
    firsts = [rotated(names, rep)[0] for rep in range(3)]
    assert firsts == ["a", "b", "c"]
    assert sorted(rotated(names, 7)) == names
    assert rotated([], 3) == []


def test_peak_rate_is_the_references_sustained_rate():
    results = [result("pafka-kafka", produce=0.5, consume=1.0), result("peer", produce=0.1)]
    assert peak_rate(results, "pafka-kafka") == 1000.0
    assert peak_rate([result("peer", produce=0.25, consume=0.5)], "pafka-kafka") == 2000.0
    assert peak_rate([result("peer", error="x")], "pafka-kafka") is None


def test_own_peak_rate_is_each_systems_own_sustained_rate():
    results = [
        result("pafka-kafka", produce=0.5, consume=1.0),
        result("pafka-rest", produce=4.0, consume=2.0),
        result("pafka-rest", kind="latency", produce=0.1, consume=0.1),
    ]
    assert own_peak_rate(results, "pafka-rest") == 250.0
    assert own_peak_rate(results, "redis-streams") is None
    assert own_peak_rate([result("pafka-rest", error="x")], "pafka-rest") is None


# -- targets and the Markdown ------------------------------------------------------------------


def paced_result(system: str, kind: str, rate: float, latency_us: int) -> RunResult:
    """A successful paced run at ``rate`` whose every record took ``latency_us``."""
    return result(system, kind=kind, target_rate_per_s=rate, latency=Latency.of([latency_us] * 10))


def _rest_run(p99_us: int) -> list[RunResult]:
    return [
        result("pafka-kafka", produce=1.0, consume=1.0),
        result("pafka-rest", produce=1.0, consume=4.0),
        result("redis-streams", produce=3.0, consume=3.0),
        paced_result("pafka-rest", "own-latency", 125.0, p99_us),
    ]


def test_rest_targets_are_against_redis_and_at_its_own_peak():
    results = _rest_run(15_000)
    summaries = [summarize(results, s, "100B-1p-1x1-acks1-rf1") for s in ("pafka-rest",)]
    assert summaries[0].own_rate_per_s == 125.0 and summaries[0].own_p99_us == 15_000
    # The run paced at pafka-kafka's peak is not the one the REST target reads.
    assert summaries[0].p99_us is None
    found = {c.what: c for c in checks(results, summaries, "pafka-kafka")}
    assert found["produce pafka-rest/redis-streams"].value == 3.0
    assert found["produce pafka-rest/redis-streams"].met is True
    assert found["consume pafka-rest/redis-streams"].met is False
    assert found["pafka-rest p99 at 50% of its own peak (us)"].met is True
    slow = _rest_run(25_000)
    summaries = [summarize(slow, "pafka-rest", "100B-1p-1x1-acks1-rf1")]
    found = {c.what: c for c in checks(slow, summaries, "pafka-kafka")}
    assert found["pafka-rest p99 at 50% of its own peak (us)"].met is False


def test_report_shows_the_run_paced_at_the_systems_own_peak():
    outcome = Outcome(results=_rest_run(15_000), unavailable={}, durability={}, profiles={})
    text = report.render({}, outcome, {})
    assert "Paced at 50% of the system's own peak" in text
    assert "| pafka-rest | 125 / 1,000 | 15.0 | 15.0 | 15.0 |" in text
    assert "pafka-rest p99 at 50% of its own peak (us) = 15.0 ms (at most 20.0 ms): met" in text
    assert "consume pafka-rest/redis-streams = 0.75x (at least 2.00x): **NOT met**" in text


def test_targets_met_and_missed():
    results = [
        result("pafka-kafka", produce=1.0, consume=1.0),
        result("redis-streams", produce=4.0, consume=1.5),
        paced_result("pafka-kafka", "latency", 500.0, 20_000),
    ]
    summaries = [summarize(results, s, "100B-1p-1x1-acks1-rf1") for s in ("pafka-kafka",)]
    found = {c.what: c for c in checks(results, summaries, "pafka-kafka")}
    assert found["produce pafka-kafka/redis-streams"].met is True
    assert found["consume pafka-kafka/redis-streams"].met is False
    assert found["pafka-kafka p99 at 50% of peak (us)"].met is False
    # NATS was not run: no check is invented for it.
    assert not any("nats" in what for what in found)


def test_table_renders_and_refuses_ragged_rows():
    text = report.table(("a", "b"), [["x", "1"], ["y", "2"]])
    assert text.splitlines() == ["| a | b |", "| --- | ---: |", "| x | 1 |", "| y | 2 |"]
    with pytest.raises(ValueError, match="cells"):
        report.table(("a", "b"), [["x"]])


def test_report_states_machine_durability_figures_and_missed_targets():
    results = [
        result("pafka-kafka", produce=1.0, consume=1.0),
        result("redis-streams", produce=2.0, consume=1.0),
    ]
    outcome = Outcome(
        results=results,
        unavailable={"nats-jetstream": "nats-server not installed"},
        durability={"pafka-kafka": "page cache", "redis-streams": "appendfsync everysec"},
        profiles={},
    )
    machine = {"date": "2026-01-01 00:00 UTC", "cores": "2", "cpu": "Test CPU"}
    text = report.render(machine, outcome, {"100B-1p-1x1-acks1-rf1": ["bars.png"]}, "shared box")
    assert "2 cores (Test CPU)" in text and "shared box" in text
    assert "- **redis-streams**: appendfsync everysec" in text
    assert "- **nats-jetstream**: not run: nats-server not installed" in text
    assert "| pafka-kafka | 1,000 | 0.1 | 1,000 | 0.1 | 500.0 |" in text
    assert "| pafka-kafka / redis-streams | 2.00x | 1.00x |" in text
    assert "![100B-1p-1x1-acks1-rf1](bars.png)" in text
    assert "produce pafka-kafka/redis-streams = 2.00x (at least 3.00x): **NOT met**" in text
    assert "pafka bench --profile" in text


# -- profiles ----------------------------------------------------------------------------------


def test_profile_summary_sums_own_and_inclusive_time_per_function():
    collapsed = "\n".join(
        [
            "main (cli.py:1);run (loop.py:10);handle (server.py:5);append (log.py:40) 6",
            "main (cli.py:1);run (loop.py:10);handle (server.py:7);append (log.py:41) 2",
            "main (cli.py:1);run (loop.py:10);handle (server.py:9) 1",
            "main (cli.py:1);run (loop.py:10);select (selectors.py:3) 3",
            "garbage line",
        ]
    )
    summary = profiles.summarize(collapsed)
    assert summary.samples == 12
    assert summary.self_time[0] == profiles.Hot("append (log.py)", 8 / 12)
    inclusive = {h.frame: h.share for h in summary.inclusive}
    assert inclusive == {
        "handle (server.py)": 9 / 12,
        "append (log.py)": 8 / 12,
        "select (selectors.py)": 3 / 12,
    }
    # main only passes the call on; run is on every sample: neither says where time went.
    assert profiles.summarize("").samples == 0


def test_report_lists_profiles():
    profile = profiles.summarize("a (x.py:1);b (y.py:2) 3\na (x.py:1) 1")
    lines = report.profile_lines({"profiles/w-broker-1.txt": profile})
    assert (
        lines[0]
        == "- `profiles/w-broker-1.txt` (4 samples): own time: `b (y.py)` 75%, `a (x.py)` 25%"
    )
    assert lines[1] == "  - including callees: `b (y.py)` 75%"


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--systems", "kafka"], "unknown system 'kafka'"),
        (["--workloads", "100B-1p-1x2-acks1-rf1"], "cannot share 1 partition"),
        (["--repetitions", "0"], "--repetitions must be at least 1"),
        (["--duration-s", "-1"], "--duration-s must be positive"),
    ],
)
def test_bench_command_refuses_bad_arguments_in_one_line(argv, message, capsys):
    from pafka.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["bench", *argv])
    assert exited.value.code == 1
    assert message in capsys.readouterr().err
