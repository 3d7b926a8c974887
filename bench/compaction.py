"""Log compaction: cleaning throughput, producers beside the cleaner, the cleaner's memory.

    python -m bench.compaction --repeat 3   # a 1 GiB log of 100,000 keys (the README's figures)
    python -m bench.compaction --quick      # a 48 MiB log: a smoke run of every step

Each run starts a fresh one-broker local cluster (cleaner back-off 500 ms) and fills a
one-partition compacted topic (64 MiB segments) with keyed 1,000-byte updates from librdkafka,
far more records than keys, while ``min.compaction.lag.ms`` of a day keeps the cleaner off it.
A librdkafka producer then writes 100-byte records to another topic; after a few seconds the
compacted topic's ``min.compaction.lag.ms`` is set to 0 (IncrementalAlterConfigs) and the
cleaner takes it. The producer's acknowledgements while a cleaner worker process is running
(watched in /proc) against those before give the produce ratio; the broker's log line of each
clean gives bytes cleaned and the pass's time; its metrics give the worker's peak memory.
``--repeat`` runs that as many times. A last run does the same with a small dedupe buffer,
holding fewer keys than the log has, and stops after its first clean (each clean then covers
only as far as its map reached).

Results go to ``bench/results/compaction-<date>/`` (``summary.md``, ``results.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.compaction_stats import Interval, RunResult, parse_cleans, rate_in, summary
from bench.compare.runner import machine
from pafka.local.cluster import LocalCluster

VALUE_BYTES = 1000
LOAD_RECORD_BYTES = 100
MIB = 1024 * 1024
DAY_MS = 24 * 60 * 60 * 1000
WARMUP_S = 1.0


@dataclass(frozen=True)
class Size:
    log_bytes: int
    keys: int
    segment_bytes: int
    small_buffer_bytes: int
    idle_s: float
    timeout_s: float


FULL = Size(1024 * MIB, 100_000, 64 * MIB, 4 * MIB, idle_s=8.0, timeout_s=900.0)
QUICK = Size(48 * MIB, 10_000, 8 * MIB, 1 * MIB, idle_s=3.0, timeout_s=180.0)


def producer(bootstrap: str, **extra: object) -> Any:
    from confluent_kafka import Producer

    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "1",
            "linger.ms": 10,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 1_000_000,
            **extra,
        }
    )


def fill(bootstrap: str, topic: str, size: Size) -> tuple[int, float]:
    """Keyed updates of random keys until ``size.log_bytes`` of values; (records, seconds)."""
    records = size.log_bytes // VALUE_BYTES
    keys = [f"key-{k:07d}".encode() for k in range(size.keys)]
    value = os.urandom(VALUE_BYTES)
    pick = random.Random(17).randrange
    p = producer(bootstrap, **{"linger.ms": 20})
    started = time.perf_counter()
    for _ in range(records):
        key = keys[pick(size.keys)]
        while True:
            try:
                p.produce(topic, value, key)
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    if p.flush(300):
        raise SystemExit("the compacted topic's records were not all acknowledged")
    return records, time.perf_counter() - started


class LoadProducer(threading.Thread):
    """Produces 100-byte records until stopped, noting when each acknowledgement arrived."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.acked: list[float] = []
        self.started_at = 0.0
        self._halt = threading.Event()
        self._producer = producer(bootstrap, on_delivery=self._delivered)
        self._topic = topic

    def _delivered(self, err: object, _msg: object) -> None:
        if err is None:
            self.acked.append(time.monotonic())

    def run(self) -> None:
        p, value = self._producer, os.urandom(LOAD_RECORD_BYTES)
        self.started_at = time.monotonic()
        while not self._halt.is_set():
            try:
                p.produce(self._topic, value)
            except BufferError:
                p.poll(0.01)
            p.poll(0)
        p.flush(60)
        # The producer refers back to this thread through its callback: drop it, or librdkafka
        # keeps reconnecting to a port the next run's broker may take.
        self._producer = None

    def stop(self) -> None:
        self._halt.set()
        self.join(120)


def cleaner_workers(broker_pid: int) -> list[int]:
    """Pids of the broker's cleaner worker processes running now."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == broker_pid and b"clean_worker" in Path(entry.path, "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return found


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def create_topics(bootstrap: str, compacted: str, load: str, size: Size) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": str(size.segment_bytes),
        "min.compaction.lag.ms": str(DAY_MS),
    }
    topics = [NewTopic(compacted, 1, 1, config=config), NewTopic(load, 1, 1)]
    for future in admin.create_topics(topics).values():
        future.result(60)


def let_cleaner_in(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entry = ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[entry])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(60)


def run(size: Size, buffer_bytes: int | None, measure_produce: bool) -> RunResult:
    env = {"PAFKA_BROKER_LOG_CLEANER_BACKOFF_MS": "500"}
    if buffer_bytes is not None:
        env["PAFKA_BROKER_LOG_CLEANER_DEDUPE_BUFFER_SIZE"] = str(buffer_bytes)
    work = Path(tempfile.mkdtemp(prefix="pafka-compaction-"))
    cluster = LocalCluster(work, brokers=1, controllers=1, broker_env=env)
    cluster.start()
    try:
        broker = cluster.broker(1)
        compacted, load = (f"{n}-{uuid.uuid4().hex[:6]}" for n in ("compacted", "load"))
        create_topics(cluster.bootstrap, compacted, load, size)
        records, fill_s = fill(cluster.bootstrap, compacted, size)
        size_key = ("kafka_log_log_size", (("partition", "0"), ("topic", compacted)))
        metrics = scrape(broker.http_url)
        result = RunResult(
            dedupe_buffer_bytes=buffer_bytes or int(128 * MIB),
            log_bytes=int(metrics[size_key]),
            records=records,
            keys=size.keys,
            fill_seconds=fill_s,
        )
        print(f"filled {result.log_bytes / MIB:,.0f} MiB in {fill_s:.0f} s", flush=True)
        meter = LoadProducer(cluster.bootstrap, load) if measure_produce else None
        if meter is not None:
            meter.start()
        time.sleep(size.idle_s)
        altered_at = time.monotonic()
        result.load_average = os.getloadavg()[0]
        let_cleaner_in(cluster.bootstrap, compacted)
        busy = watch_cleaning(broker.http_url, broker.pid, buffer_bytes is None, size.timeout_s)
        if meter is not None:
            meter.stop()
            acked = sorted(meter.acked)
            idle = (meter.started_at + WARMUP_S, altered_at)
            result.produce_idle_per_s = rate_in(acked, [idle])
            result.produce_idle_seconds = idle[1] - idle[0]
            result.produce_cleaning_per_s = rate_in(acked, busy)
        metrics = scrape(broker.http_url)
        result.worker_peak_memory_bytes = int(
            metrics[("pafka_broker_log_cleaner_worker_peak_memory_bytes", ())]
        )
        result.log_bytes_after = int(metrics[size_key])
        result.cleaning_wall_seconds = sum(end - start for start, end in busy)
        text = Path(broker.log_path).read_text(errors="replace")
        result.cleans = [c for c in parse_cleans(text) if c.partition == f"{compacted}-0"]
        print(json.dumps(result.as_dict(), default=str), flush=True)
        return result
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


def watch_cleaning(
    url: str, broker_pid: int, until_clean: bool, timeout_s: float
) -> list[Interval]:
    """The intervals in which a cleaner worker ran: until the log is wholly clean
    (``until_clean``) or after the first clean, whichever the run asks for."""
    busy: list[Interval] = []
    running_since: float | None = None
    next_scrape = 0.0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = time.monotonic()
        running = bool(cleaner_workers(broker_pid))
        if running and running_since is None:
            running_since = now
        elif not running and running_since is not None:
            busy.append((running_since, now))
            running_since = None
        # A worker too short-lived for the polling to see still counts in the metrics.
        if not running and now >= next_scrape:
            next_scrape = now + 0.5
            metrics = scrape(url)
            cleans = metrics.get(("pafka_broker_log_cleaner_cleans_total", ()), 0)
            dirty = metrics.get(("kafka_log_logcleanermanager_max_dirty_percent", ()), 100)
            if cleans >= 1 and (not until_clean or dirty == 0):
                return busy
        time.sleep(0.05)
    raise SystemExit(f"the cleaner did not finish within {timeout_s:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 48 MiB log (smoke run)")
    parser.add_argument("--out", type=Path, help="results folder")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs at the default dedupe buffer (default 1)"
    )
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    out = args.out or Path("bench/results") / time.strftime("compaction-%Y%m%d", time.gmtime())
    runs = [run(size, None, measure_produce=True) for _ in range(max(args.repeat, 1))]
    runs.append(run(size, size.small_buffer_bytes, measure_produce=False))
    out.mkdir(parents=True, exist_ok=True)
    command = " ".join(["python -m bench.compaction", *sys.argv[1:]])
    host = machine()
    (out / "results.json").write_text(
        json.dumps({"machine": host, "runs": [r.as_dict() for r in runs]}, indent=2) + "\n"
    )
    (out / "summary.md").write_text(summary(runs, host, command))
    print(f"results in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
