"""Transactional produce against idempotent produce, side by side on one cluster.

    python -m bench.transactions            # 20 s per mode and round, 3 rounds (the README's)
    python -m bench.transactions --quick    # 3 s per mode, 1 round: a smoke run of every mode

A 3-broker local cluster; one topic of 6 partitions, replication factor 3,
``min.insync.replicas`` 2. librdkafka producers (confluent-kafka) write 100-byte values with
acks=all: the baseline is an idempotent producer, then transactional producers committing
transactions of 1, 100 and 1,000 records, each spreading its records over every partition.
Modes take turns within each round, so that a machine that slows down slows every mode alike.
For each mode: records/s, and for transactions, transactions/s and the commit's p50/p99
(``commit_transaction()``'s own time). Every run then reads the topic with a read_committed
consumer and checks that it holds exactly the records acknowledged in committed transactions.

Results go to ``bench/results/transactions-<date>/`` (``summary.md``, ``results.json``), with
each mode's rate as a ratio of the idempotent producer's in the same round.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.compare.runner import machine
from pafka.local.cluster import LocalCluster

VALUE_BYTES = 100
PARTITIONS = 6
TRANSACTION_SIZES = (1, 100, 1000)
BASELINE = "idempotent"


def p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, len(ordered) * 99 // 100)]


@dataclass
class ModeResult:
    mode: str
    round: int
    records: int
    seconds: float
    transactions: int = 0
    commit_ms: list[float] = field(default_factory=list)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode,
            "round": self.round,
            "records": self.records,
            "seconds": round(self.seconds, 3),
            "records_per_s": round(self.records_per_s, 1),
        }
        if self.transactions:
            ordered = sorted(self.commit_ms)
            out["transactions"] = self.transactions
            out["transactions_per_s"] = round(self.transactions / self.seconds, 1)
            out["commit_p50_ms"] = round(statistics.median(ordered), 2)
            out["commit_p99_ms"] = round(p99(ordered), 2)
        return out


def producer_config(bootstrap: str, **extra: object) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": 5,
        "queue.buffering.max.messages": 1_000_000,
        **extra,
    }


def run_idempotent(bootstrap: str, topic: str, seconds: float, round_: int) -> ModeResult:
    from confluent_kafka import Producer

    p = Producer(producer_config(bootstrap))
    value = b"x" * VALUE_BYTES
    acked = [0]

    def delivered(err: object, _msg: object) -> None:
        if err is None:
            acked[0] += 1

    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds:
        try:
            p.produce(topic, value, partition=sent % PARTITIONS, on_delivery=delivered)
            sent += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(120)
    return ModeResult(BASELINE, round_, acked[0], time.monotonic() - started)


def run_transactional(
    bootstrap: str, topic: str, size: int, seconds: float, round_: int
) -> ModeResult:
    from confluent_kafka import Producer

    p = Producer(producer_config(bootstrap, **{"transactional.id": f"bench-{uuid.uuid4()}"}))
    p.init_transactions(60)
    value = b"x" * VALUE_BYTES
    result = ModeResult(f"transactions of {size:,}", round_, 0, 0.0)
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        p.begin_transaction()
        for i in range(size):
            while True:
                try:
                    p.produce(topic, value, partition=i % PARTITIONS)
                    break
                except BufferError:
                    p.poll(0.01)
            p.poll(0)
        committing = time.monotonic()
        p.commit_transaction(60)
        result.commit_ms.append((time.monotonic() - committing) * 1000)
        result.transactions += 1
        result.records += size
    result.seconds = time.monotonic() - started
    return result


def committed_count(bootstrap: str, topic: str) -> int:
    """Records a read_committed consumer reads from the whole topic."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-check-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends = {}
        for p in range(PARTITIONS):
            _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            ends[p] = high
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        count = 0
        deadline = time.monotonic() + 300
        done: set[int] = set()
        while len(done) < PARTITIONS and time.monotonic() < deadline:
            for msg in c.consume(10_000, timeout=1.0):
                if msg.error() is None:
                    count += 1
            for p in range(PARTITIONS):
                position = c.position([TopicPartition(topic, p)])[0].offset
                if position >= ends[p]:
                    done.add(p)
        return count
    finally:
        c.close()


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})
    admin.create_topics([new])[topic].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until every partition has a leader
        found = admin.list_topics(topic, timeout=10).topics.get(topic)
        parts = found.partitions if found else {}
        if len(parts) == PARTITIONS and all(p.leader >= 0 and not p.error for p in parts.values()):
            return
        time.sleep(0.2)
    raise TimeoutError(f"{topic} has no leader for every partition after 60 s")


def summarize(results: list[ModeResult], host: dict[str, str], seconds: float) -> str:
    rounds = sorted({r.round for r in results})
    modes = [BASELINE] + [f"transactions of {s:,}" for s in TRANSACTION_SIZES]
    lines = [
        "# Transactional produce against idempotent produce",
        "",
        f"{host['cores']} cores ({host['cpu']}), Python {host['python']}, {host['date']}; "
        f"{len(rounds)} round(s) of {seconds:g} s per mode; 3 brokers, 6 partitions, "
        f"replication 3, acks=all, {VALUE_BYTES}-byte values, librdkafka.",
        "",
        "| mode | records/s | vs idempotent | transactions/s | commit p50 | commit p99 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode in modes:
        mine = [r for r in results if r.mode == mode]
        ratios = []
        for r in mine:
            base = next(b for b in results if b.mode == BASELINE and b.round == r.round)
            ratios.append(r.records_per_s / base.records_per_s if base.records_per_s else 0.0)
        rate = statistics.median(r.records_per_s for r in mine)
        commits = sorted(ms for r in mine for ms in r.commit_ms)
        txn_rate = statistics.median(r.transactions / r.seconds for r in mine) if commits else 0
        p50 = f"{statistics.median(commits):.1f} ms" if commits else ""
        tail = f"{p99(commits):.1f} ms" if commits else ""
        lines.append(
            f"| {mode} | {rate:,.0f} | {statistics.median(ratios):.2f} | "
            f"{f'{txn_rate:,.1f}' if commits else ''} | {p50} | {tail} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 s per mode, one round")
    parser.add_argument("--seconds", type=float, help="seconds per mode and round")
    parser.add_argument("--rounds", type=int, help="rounds")
    parser.add_argument("--out", type=Path, help="results folder")
    args = parser.parse_args()
    seconds = args.seconds or (3.0 if args.quick else 20.0)
    rounds = args.rounds or (1 if args.quick else 3)
    out = args.out or Path("bench/results") / time.strftime("transactions-%Y%m%d", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="pafka-txn-bench-")), brokers=3)
    cluster.start()
    results: list[ModeResult] = []
    try:
        topic = f"txn-bench-{uuid.uuid4().hex[:6]}"
        create_topic(cluster.bootstrap, topic)
        for round_ in range(1, rounds + 1):
            results.append(run_idempotent(cluster.bootstrap, topic, seconds, round_))
            print(json.dumps(results[-1].summary()), flush=True)
            for size in TRANSACTION_SIZES:
                results.append(run_transactional(cluster.bootstrap, topic, size, seconds, round_))
                print(json.dumps(results[-1].summary()), flush=True)
        read = committed_count(cluster.bootstrap, topic)
    finally:
        cluster.stop()
    acknowledged = sum(r.records for r in results)
    host = machine()
    body = {
        "machine": host,
        "seconds_per_mode": seconds,
        "runs": [r.summary() for r in results],
        "acknowledged_records": acknowledged,
        "read_committed_records": read,
    }
    (out / "results.json").write_text(json.dumps(body, indent=2) + "\n")
    (out / "summary.md").write_text(summarize(results, host, seconds))
    print((out / "summary.md").read_text())
    print(f"results in {out}", file=sys.stderr)
    if read != acknowledged:
        print(f"read_committed read {read} records, {acknowledged} were committed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
