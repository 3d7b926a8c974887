"""The pure parts of the benchmark's peer systems: configs, partition mapping, pacing, tallies."""

from __future__ import annotations

import asyncio
import math
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from bench.compare import client_loop, nats_jetstream, nats_server, peer_server, redis_streams
from bench.compare.client_loop import (
    ChunkedProgress,
    ConsumeTally,
    paced_batches,
    partition_cycle,
    plan_batch,
    worker_rate_per_s,
)
from bench.compare.driver import Workload, stamp
from pafka.errors import ConfigError, PafkaError


def _directives(config: str) -> dict[str, str]:
    """redis.conf as {directive: rest of line}."""
    pairs = (line.split(" ", 1) for line in config.splitlines() if line and line[0] != "#")
    return {key: value for key, value in pairs}


def test_redis_config_is_loopback_everysec_aof_without_snapshots() -> None:
    config = redis_streams.render_config(6390, Path("/data dir/redis"), Path("/logs/r.log"))
    directives = _directives(config)
    assert directives["port"] == "6390"
    assert directives["bind"] == "127.0.0.1"
    assert directives["appendonly"] == "yes"
    assert directives["appendfsync"] == "everysec"
    assert directives["save"] == '""'
    assert directives["daemonize"] == "no"
    # Paths are quoted so that a workdir with spaces stays one argument.
    assert directives["dir"] == '"/data dir/redis"'
    assert directives["logfile"] == '"/logs/r.log"'


def test_nats_config_is_loopback_jetstream_with_the_store_under_the_workdir() -> None:
    config = nats_server.render_config("pafka-bench-1", 4333, Path('/w "x"/js'))
    assert 'server_name: "pafka-bench-1"' in config
    assert 'host: "127.0.0.1"' in config
    assert re.search(r"^port: 4333$", config, re.MULTILINE)
    # The store path is a JSON string, so quotes in it are escaped, not closing the value.
    assert 'store_dir: "/w \\"x\\"/js"' in config
    assert f"max_file_store: {nats_server.MAX_FILE_STORE_BYTES}" in config


def test_nats_cluster_nodes_route_to_every_other_node() -> None:
    route = nats_server.ClusterRoute("bench-c", 6300, (6301, 6302))
    config = nats_server.render_config("bench-c-0", 4300, Path("/js/0"), route)
    cluster = config[config.index("cluster {") :]
    assert 'name: "bench-c"' in cluster
    assert re.search(r"^  port: 6300$", cluster, re.MULTILINE)
    assert 'routes: ["nats-route://127.0.0.1:6301", "nats-route://127.0.0.1:6302"]' in cluster
    assert "cluster {" not in nats_server.render_config("solo", 4300, Path("/js"))


def test_one_node_per_replica_within_bounds() -> None:
    assert [nats_server.node_count(rf) for rf in (1, 3)] == [1, 3]
    for bad in (0, nats_server.MAX_NODES + 1):
        with pytest.raises(ConfigError, match="replication factor"):
            nats_server.node_count(bad)


def test_nats_addresses_are_comma_separated_urls() -> None:
    assert nats_server.server_urls("nats://a:1,nats://b:2") == ["nats://a:1", "nats://b:2"]
    for bad in ("", "a:1", "nats://a:1,redis://b:2"):
        with pytest.raises(ConfigError):
            nats_server.server_urls(bad)


def test_durability_lines_say_replication_and_fsync() -> None:
    for line in (redis_streams.DURABILITY, nats_server.DURABILITY):
        assert line.startswith("RF 1")
        assert "fsync" in line
        assert "pafka" in line
    assert "appendfsync everysec" in redis_streams.DURABILITY


def test_registry_names_are_exported() -> None:
    assert redis_streams.System is redis_streams.RedisStreamsSystem
    assert redis_streams.ClientDriver is redis_streams.RedisStreamsClient
    assert nats_jetstream.System is nats_jetstream.JetStreamSystem
    assert nats_jetstream.ClientDriver is nats_jetstream.JetStreamClient
    assert redis_streams.System.name == "redis-streams"
    assert nats_jetstream.System.name == "nats-jetstream"


def test_partitions_are_streams_and_subjects() -> None:
    assert redis_streams.stream_names("t", 3) == ["t-0", "t-1", "t-2"]
    assert nats_server.subject_names("t", 2) == ["t.0", "t.1"]
    with pytest.raises(ConfigError):
        redis_streams.stream_names("", 1)
    with pytest.raises(ConfigError):
        redis_streams.stream_names("t", 0)
    with pytest.raises(ConfigError):
        nats_server.subject_names("t", 0)


@pytest.mark.parametrize("topic", ["a.b", "a*", "a>", "a b", "", "a/b", "x" * 201])
def test_nats_refuses_topics_that_are_not_stream_names(topic: str) -> None:
    with pytest.raises(ConfigError, match="stream name"):
        nats_server.check_topic(topic)


@given(
    partitions=st.integers(1, 12),
    workers=st.integers(1, 4),
    rounds=st.integers(1, 20),
    run=st.integers(1, 5),
)
def test_round_robin_fills_partitions_evenly(
    partitions: int, workers: int, rounds: int, run: int
) -> None:
    per_partition: Counter[int] = Counter()
    for worker in range(workers):
        order = partition_cycle(worker, partitions, run)
        first = [next(order) for _ in range(partitions * run * rounds)]
        assert first[0] == worker % partitions
        # Runs of `run` records to one partition; each round of runs visits every partition once.
        runs = [first[i : i + run] for i in range(0, len(first), run)]
        assert all(len(set(r)) == 1 for r in runs)
        for start in range(0, len(runs), partitions):
            assert sorted(r[0] for r in runs[start : start + partitions]) == list(range(partitions))
        per_partition.update(first)
    assert set(per_partition.values()) == {workers * rounds * run}


@given(
    streams=st.integers(1, 8),
    remaining=st.integers(1, 20_000),
    max_records=st.integers(1, 6000),
    rotation=st.integers(0, 100),
)
def test_a_read_never_asks_more_than_the_worker_needs(
    streams: int, remaining: int, max_records: int, rotation: int
) -> None:
    names = redis_streams.stream_names("t", streams)
    ask, per_stream = redis_streams.read_plan(names, remaining, max_records, rotation, False)
    assert ask and per_stream >= 1
    assert len(set(ask)) == len(ask) and set(ask) <= set(names)
    # COUNT applies per stream, so this bounds what one XREADGROUP can return.
    assert len(ask) * per_stream <= min(remaining, max_records)


def test_reads_with_fewer_records_left_than_streams_rotate_over_all_streams() -> None:
    names = redis_streams.stream_names("t", 6)
    asked = set()
    for rotation in range(6):
        ask, per_stream = redis_streams.read_plan(names, 2, 5000, rotation, False)
        assert (len(ask), per_stream) == (2, 1)
        asked.update(ask)
    assert asked == set(names)


def test_own_streams_are_read_whole() -> None:
    names = redis_streams.stream_names("t", 3)
    assert redis_streams.read_plan(names, 2, 5000, 1, True) == (names, 2)
    assert redis_streams.read_plan(names, 9000, 5000, 1, True) == (names, 5000)


def test_read_plan_refuses_nothing_to_read() -> None:
    with pytest.raises(ConfigError):
        redis_streams.read_plan([], 10, 10, 0, False)
    with pytest.raises(ConfigError):
        redis_streams.read_plan(["s"], 0, 10, 0, True)


@given(partitions=st.integers(1, 12), consumers=st.integers(1, 6))
def test_consumers_own_whole_partitions_when_they_divide_evenly(
    partitions: int, consumers: int
) -> None:
    names = redis_streams.stream_names("t", partitions)
    plans = [redis_streams.worker_streams(names, consumers, w) for w in range(consumers)]
    if partitions % consumers == 0:
        # Each stream read by exactly one worker, each worker the same number of them.
        assert all(exclusive for _, exclusive in plans)
        owned = [s for streams, _ in plans for s in streams]
        assert sorted(owned) == sorted(names)
        assert {len(streams) for streams, _ in plans} == {partitions // consumers}
    else:
        assert all(streams == names and not exclusive for streams, exclusive in plans)
    with pytest.raises(ConfigError):
        redis_streams.worker_streams(names, 0, 0)


def test_worker_rate_is_an_even_share() -> None:
    assert worker_rate_per_s(None, 3) is None
    assert worker_rate_per_s(9000.0, 3) == 3000.0
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ConfigError):
            worker_rate_per_s(bad, 1)
    with pytest.raises(ConfigError):
        worker_rate_per_s(100.0, 0)


@given(count=st.integers(0, 5000), max_batch=st.integers(1, 2000))
def test_unpaced_sends_full_batches(count: int, max_batch: int) -> None:
    sent, batches = 0, []
    while True:
        n, wait_s = plan_batch(None, sent, count, 0.0, max_batch)
        assert wait_s == 0.0
        if n == 0:
            break
        batches.append(n)
        sent += n
    assert sum(batches) == count
    assert all(b == max_batch for b in batches[:-1])


@given(
    rate_per_s=st.floats(10.0, 100_000.0),
    count=st.integers(1, 3000),
    max_batch=st.integers(1, 1000),
    send_cost_s=st.floats(0.0, 0.002),
)
def test_paced_schedule_sends_no_record_early_and_does_not_drift(
    rate_per_s: float, count: int, max_batch: int, send_cost_s: float
) -> None:
    # Only schedules a sender can keep: one batch's cost is worth fewer records than a batch.
    assume(send_cost_s * rate_per_s + 1 <= max_batch)
    # A virtual clock: sending a batch costs send_cost_s, waiting advances by the asked wait.
    now_s, sent, steps = 0.0, 0, 0
    while sent < count:
        steps += 1
        assert steps <= 3 * count + 10, "the schedule stopped making progress"
        n, wait_s = plan_batch(rate_per_s, sent, count, now_s, max_batch)
        if n == 0:
            assert wait_s >= 0
            now_s += wait_s
            continue
        # Record i is due at i / rate: the last of this batch must be due by now.
        assert (sent + n - 1) / rate_per_s <= now_s + 1e-9
        sent += n
        now_s += send_cost_s
    # Sleeping until each due time, not a gap per record, the run ends within two batch costs
    # of the last record's due time whatever the per-batch cost, instead of count * cost later.
    assert now_s <= (count - 1) / rate_per_s + 2 * send_cost_s + 1e-6


def test_paced_batches_on_the_real_clock_take_at_least_the_schedule() -> None:
    rate_per_s, count = 2000.0, 200
    started = time.monotonic()
    assert sum(paced_batches(count, rate_per_s, 1000)) == count
    assert time.monotonic() - started >= (count - 1) / rate_per_s


def test_paced_batches_wake_at_most_once_per_tick() -> None:
    rate_per_s, count = 200_000.0, 20_000  # 0.1 s, 200 records per tick
    started = time.monotonic()
    batches = list(paced_batches(count, rate_per_s, 1000))
    elapsed_s = time.monotonic() - started
    assert sum(batches) == count
    # Each wake-up sends everything due; going straight back for the few records that fell due
    # meanwhile would make thousands of tiny batches.
    assert len(batches) <= elapsed_s / client_loop.PACING_TICK_S + 2
    assert max(batches) <= 1000


async def _drain(count: int, rate_per_s: float) -> list[int]:
    return [n async for n in client_loop.apaced_batches(count, rate_per_s, 50)]


def test_async_paced_batches_follow_the_same_schedule() -> None:
    started = time.monotonic()
    batches = asyncio.run(_drain(100, 1000.0))
    assert sum(batches) == 100 and max(batches) <= 50
    assert time.monotonic() - started >= 99 / 1000.0


def test_deadlines_follow_the_duration() -> None:
    assert client_loop.send_deadline(Workload(name="count")) == math.inf
    timed = Workload(name="timed", duration_s=30.0)
    now = time.monotonic()
    assert now + 30.0 <= client_loop.send_deadline(timed) <= time.monotonic() + 30.0
    drain_s = client_loop.read_deadline(timed) - client_loop.send_deadline(timed)
    assert drain_s == pytest.approx(client_loop.DRAIN_S, abs=0.5)


@given(st.lists(st.integers(0, 2500), max_size=60))
def test_progress_arrives_in_chunks_and_adds_up(adds: list[int]) -> None:
    calls: list[int] = []
    chunks = ChunkedProgress(calls.append, chunk_records=1000, interval_s=0.0)
    for n in adds:
        chunks.add(n)
    chunks.flush()
    assert sum(calls) == sum(adds)
    assert all(c >= 1000 for c in calls[:-1])
    assert 0 not in calls


def test_progress_is_reported_at_most_once_an_interval() -> None:
    calls: list[int] = []
    chunks = ChunkedProgress(calls.append, chunk_records=10, interval_s=3600.0)
    for _ in range(100):
        chunks.add(50)
    assert calls == [50]  # the first chunk; the rest wait out the interval
    chunks.flush()
    assert calls == [50, 4950]


def test_tally_counts_bytes_and_measures_latency_from_the_stamp() -> None:
    calls: list[int] = []
    tally = ConsumeTally(calls.append, idle_timeout_s=60.0)
    old = bytearray(stamp(100))
    # A record stamped 2 s ago.
    old[:8] = (time.time_ns() - 2_000_000_000).to_bytes(8, "big", signed=True)
    tally.add([bytes(old), stamp(100), stamp(100)])
    stats = tally.stats()
    assert (stats.records, stats.bytes) == (3, 300)
    # The old record was sent in the first second (the warm-up): only the others count.
    assert len(stats.latencies_us) == 2
    assert all(0 <= lat < 1_000_000 for lat in stats.latencies_us)
    assert calls == [3]
    # The window starts at the oldest stamp read, not when the consumer became ready.
    assert 2.0 <= stats.seconds < 3.0
    tally.raise_if_idle("c", 3)  # a record just arrived: not idle


def test_tally_leaves_the_warm_up_out_of_latencies() -> None:
    tally = ConsumeTally(lambda _n: None, idle_timeout_s=60.0, warmup_s=0.2)
    tally.add([stamp(100)])
    slow = bytearray(stamp(100))
    time.sleep(0.25)
    # Sent at the start but read only now: a warm-up latency, however long.
    tally.add([bytes(slow), stamp(100), stamp(100)])
    stats = tally.stats()
    assert stats.records == 4
    assert len(stats.latencies_us) == 2
    assert all(lat < 200_000 for lat in stats.latencies_us)
    # A run that never got past its warm-up keeps what it has.
    short = ConsumeTally(lambda _n: None, idle_timeout_s=60.0, warmup_s=10.0)
    short.add(p for p in [stamp(100), stamp(100)])
    assert (short.stats().records, len(short.stats().latencies_us)) == (2, 2)


def test_tally_window_leaves_out_waiting_for_producers() -> None:
    tally = ConsumeTally(lambda _n: None, idle_timeout_s=60.0)
    time.sleep(0.3)  # a ready consumer waits for producer processes to start
    tally.add([stamp(100)])
    time.sleep(0.05)
    tally.add([stamp(100)])
    assert 0.05 <= tally.stats().seconds < 0.3
    empty = ConsumeTally(lambda _n: None, idle_timeout_s=60.0)
    time.sleep(0.01)
    assert empty.stats().seconds >= 0.01


def test_tally_gives_up_loudly_when_idle() -> None:
    tally = ConsumeTally(lambda _n: None, idle_timeout_s=0.0)
    time.sleep(0.01)
    with pytest.raises(PafkaError, match="0 of 5 read"):
        tally.raise_if_idle("consumer 1", 5)


def test_present_packages_are_not_installed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_apt(args: list[str]) -> None:
        raise AssertionError(f"apt-get {args} ran for a binary that is present")

    monkeypatch.setattr(peer_server, "_apt", no_apt)
    assert peer_server.ensure_debian_package("sh", "dash") == peer_server.find_binary("sh")


def test_child_server_that_exits_at_start_is_an_error(tmp_path: Path) -> None:
    server = peer_server.ChildServer(
        "failing", [sys.executable, "-c", "print('bad config'); raise SystemExit(3)"],
        tmp_path / "failing.log",
    )  # fmt: skip
    with pytest.raises(PafkaError, match="exited with 3"):
        server.start(lambda: False, timeout_s=10)
    assert "bad config" in (tmp_path / "failing.log").read_text()
    assert server.pid is None


def test_child_server_starts_until_ready_and_stops(tmp_path: Path) -> None:
    server = peer_server.ChildServer(
        "sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log"
    )
    polls: list[float] = []

    def ready() -> bool:
        polls.append(time.monotonic())
        return len(polls) >= 3

    server.start(ready, timeout_s=10)
    assert server.running() and server.pid is not None
    server.stop(timeout_s=10)
    assert not server.running() and server.pid is None


def test_a_caller_that_dies_before_stop_takes_its_server_along(tmp_path: Path) -> None:
    script = f"""
import sys
from pathlib import Path
from bench.compare.peer_server import ChildServer
server = ChildServer("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"],
                     Path({str(tmp_path / "s.log")!r}))
server.start(lambda: True, timeout_s=10)
print(server.pid, flush=True)
raise SystemExit("died before stop()")
"""
    root = Path(__file__).resolve().parents[2]
    ended = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=60
    )
    assert ended.returncode == 1 and "died before stop()" in ended.stderr
    pid = int(ended.stdout.strip())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
