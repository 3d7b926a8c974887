"""The workload matrix, OpenMessaging-Benchmark style, and how a workload's records are shared.

A workload is named after its shape, e.g. ``100B-6p-2x2-acks1-rf1``: message size, partitions,
producers x consumers, acks, replication factor. ``default`` is what the README's headline table
comes from; ``smoke`` is the tiny set the test suite runs; ``full`` is the whole matrix.

Every producer writes the same number of records, and spreads them over the partitions
round-robin, so each partition holds exactly ``total / partitions`` records: record by record in
throughput runs, and in paced runs in runs of :func:`run_records`, 10 ms of a producer's records
to one partition before the next. That is how Kafka clients spread keyless records (the sticky
partitioner of KIP-480; librdkafka's ``sticky.partitioning.linger.ms`` is 10 ms by default), and
it lets a client fill one batch per partition instead of a sliver of every partition's.
Consumers share partitions as a Kafka group does (whole partitions each), so a workload needs
``partitions % consumers == 0`` for every consumer's share to be known in advance: a second
consumer on a single partition would idle in a Kafka-style group.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from bench.compare.driver import Acks, Workload

SIZE_NAMES = {100: "100B", 1024: "1KiB", 10240: "10KiB"}
SMOKE_COUNT = 600
# A paced producer stays on one partition for this long's worth of its records.
STICKY_RUN_S = 0.010


class WorkloadError(ValueError):
    """A workload name or shape the harness cannot run."""


def name_of(
    size_bytes: int, partitions: int, producers: int, consumers: int, acks: Acks, rf: int
) -> str:
    size = SIZE_NAMES.get(size_bytes, f"{size_bytes}B")
    return f"{size}-{partitions}p-{producers}x{consumers}-acks{acks}-rf{rf}"


def make(
    size_bytes: int = 100,
    partitions: int = 1,
    producers: int = 1,
    consumers: int = 1,
    acks: Acks = "1",
    rf: int = 1,
    message_count: int = 1_000_000,
) -> Workload:
    workload = Workload(
        name=name_of(size_bytes, partitions, producers, consumers, acks, rf),
        message_size_bytes=size_bytes,
        partitions=partitions,
        producers=producers,
        consumers=consumers,
        acks=acks,
        replication_factor=rf,
        message_count=message_count,
    )
    validate(workload)
    return workload


def validate(workload: Workload) -> None:
    if workload.message_size_bytes < 8:
        raise WorkloadError(f"{workload.name}: records need 8 bytes for their send time")
    if min(workload.partitions, workload.producers, workload.consumers) < 1:
        raise WorkloadError(f"{workload.name}: partitions, producers and consumers must be >= 1")
    if workload.partitions % workload.consumers:
        raise WorkloadError(
            f"{workload.name}: {workload.consumers} consumers cannot share {workload.partitions} "
            "partition(s) evenly (a Kafka-style group gives each consumer whole partitions)"
        )
    if workload.replication_factor < 1:
        raise WorkloadError(f"{workload.name}: replication factor must be >= 1")
    if workload.message_count < workload.partitions * workload.producers:
        raise WorkloadError(f"{workload.name}: too few records for every producer and partition")


@dataclass(frozen=True)
class Shares:
    """How many records each producer sends and each consumer reads."""

    per_producer: int
    per_consumer: int

    def total(self, producers: int) -> int:
        return self.per_producer * producers


def run_records(workload: Workload) -> int:
    """How many consecutive records a producer sends to one partition: 1 unpaced, and
    STICKY_RUN_S of its share of the rate when paced (at most its share of a partition)."""
    if workload.rate_per_s is None:
        return 1
    per_producer_per_s = workload.rate_per_s / workload.producers
    per_partition = workload.message_count // workload.producers // workload.partitions
    return max(1, min(round(per_producer_per_s * STICKY_RUN_S), per_partition))


def shares(workload: Workload) -> Shares:
    """Records per producer rounded down to a multiple of the partitions times the run length,
    so that partitions, and therefore consumers, all get the same number."""
    validate(workload)
    per_producer = workload.message_count // workload.producers
    per_producer -= per_producer % (workload.partitions * run_records(workload))
    total = per_producer * workload.producers
    return Shares(per_producer=per_producer, per_consumer=total // workload.consumers)


def paced(workload: Workload, rate_per_s: float, seconds: float) -> Workload:
    """The latency run of ``workload``: ``rate_per_s`` in total for about ``seconds``."""
    if rate_per_s <= 0:
        raise WorkloadError(f"{workload.name}: a paced run needs a positive rate")
    count = max(workload.partitions * workload.producers, int(rate_per_s * seconds))
    return replace(workload, message_count=count, rate_per_s=rate_per_s)


def full_matrix(message_count: int = 1_000_000) -> list[Workload]:
    acks_rf: list[tuple[Acks, int]] = [("1", 1), ("all", 1), ("1", 3), ("all", 3)]
    matrix = []
    for size, partitions, producers, consumers, (acks, rf) in itertools.product(
        SIZE_NAMES, (1, 6), (1, 2), (1, 2), acks_rf
    ):
        if partitions % consumers:
            continue
        # Bigger records, fewer of them: every workload moves a comparable number of bytes.
        count = max(partitions * producers, message_count * 100 // size)
        matrix.append(make(size, partitions, producers, consumers, acks, rf, count))
    return matrix


def default_set(message_count: int = 300_000) -> list[Workload]:
    """The headline comparison: 100-byte records, 1 and 6 partitions, acks 1, RF 1."""
    return [make(100, 1, 1, 1, "1", 1, message_count), make(100, 6, 2, 2, "1", 1, message_count)]


def smoke_set() -> list[Workload]:
    """One small workload with every moving part: several partitions, producer and consumer
    processes (so a shared group of two), records of more than one packet."""
    return [make(1024, 6, 2, 2, "1", 1, SMOKE_COUNT)]


SETS = {"default": default_set, "smoke": smoke_set, "full": full_matrix}


def parse(name: str) -> Workload:
    """A workload from its name, e.g. ``1KiB-6p-2x2-acksall-rf3``."""
    sizes = {v: k for k, v in SIZE_NAMES.items()}
    try:
        size, parts, clients, acks, rf = name.split("-")
        producers, consumers = clients.split("x")
        if not (parts.endswith("p") and acks.startswith("acks") and rf.startswith("rf")):
            raise ValueError(name)
        acks_value = acks.removeprefix("acks")
        if acks_value not in ("1", "all"):
            raise ValueError(name)
        size_bytes = sizes[size] if size in sizes else int(size.removesuffix("B"))
        checked: Acks = "1" if acks_value == "1" else "all"
        return make(
            size_bytes, int(parts[:-1]), int(producers), int(consumers), checked, int(rf[2:])
        )
    except (ValueError, KeyError) as exc:
        if isinstance(exc, WorkloadError):
            raise
        raise WorkloadError(
            f"bad workload name {name!r}; expected SIZE-Pp-PRODxCONS-acks(1|all)-rfN, "
            "e.g. 100B-6p-2x2-acks1-rf1, or one of: " + ", ".join(SETS)
        ) from None


def select(names: list[str], message_count: int | None = None) -> list[Workload]:
    """Workloads from names and set names (``default``, ``smoke``, ``full``), in order."""
    chosen: list[Workload] = []
    for name in names:
        found = SETS[name]() if name in SETS else [parse(name)]
        if message_count is not None:
            found = [replace(w, message_count=message_count) for w in found]
            for w in found:
                validate(w)
        chosen.extend(w for w in found if w not in chosen)
    if not chosen:
        raise WorkloadError("no workloads chosen")
    return chosen
