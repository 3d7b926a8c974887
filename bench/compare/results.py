"""What a run measured, and the pure arithmetic on it: percentiles, rates, medians, ratios.

Everything here is plain data in and out, so the report can be rebuilt from ``results.json``
and the arithmetic is unit-tested on its own.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# "latency": paced at a share of the reference system's peak, the same rate for every system;
# "own-latency": paced at the same share of the system's own peak (OWN_PACED systems).
Kind = Literal["throughput", "latency", "own-latency"]
# Quantiles kept for the latency CDF plot: dense in the body, denser still in the tail.
CDF_QUANTILES: tuple[float, ...] = tuple(
    sorted(
        {i / 100 for i in range(1, 100)}
        | {0.99 + i / 1000 for i in range(10)}
        | {0.999 + i / 10000 for i in range(10)}
        | {0.0, 1.0}
    )
)


def percentile(ordered: Sequence[int], q: float) -> int:
    """The nearest-rank ``q``-quantile (0 <= q <= 1) of an ascending sequence."""
    if not ordered:
        raise ValueError("no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} outside [0, 1]")
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Latency:
    """End-to-end latency summary in microseconds, with a CDF for plots."""

    count: int
    p50_us: int
    p99_us: int
    p999_us: int
    max_us: int
    # (quantile, latency_us) pairs, ascending.
    cdf: list[tuple[float, int]] = field(default_factory=list)

    @classmethod
    def of(cls, latencies_us: Sequence[int]) -> Latency | None:
        if not latencies_us:
            return None
        ordered = sorted(latencies_us)
        return cls(
            count=len(ordered),
            p50_us=percentile(ordered, 0.5),
            p99_us=percentile(ordered, 0.99),
            p999_us=percentile(ordered, 0.999),
            max_us=ordered[-1],
            cdf=[(q, percentile(ordered, q)) for q in CDF_QUANTILES],
        )


def rate(records: int, seconds: float) -> float:
    return records / seconds if seconds > 0 else 0.0


@dataclass(frozen=True)
class RunResult:
    """One system, one workload, one kind of run, one repetition."""

    system: str
    workload: str
    kind: Kind
    repetition: int
    message_size_bytes: int
    produced: int = 0
    produce_s: float = 0.0
    consumed: int = 0
    consume_s: float = 0.0
    expected: int = 0
    server_cpu_s: float = 0.0
    target_rate_per_s: float | None = None
    latency: Latency | None = None
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and self.produced == self.expected == self.consumed

    @property
    def produce_rate(self) -> float:
        return rate(self.produced, self.produce_s)

    @property
    def consume_rate(self) -> float:
        return rate(self.consumed, self.consume_s)

    @property
    def produce_mb_s(self) -> float:
        return self.produce_rate * self.message_size_bytes / 1e6

    @property
    def consume_mb_s(self) -> float:
        return self.consume_rate * self.message_size_bytes / 1e6

    @property
    def cpu_s_per_million(self) -> float | None:
        moved = max(self.produced, self.consumed)
        return self.server_cpu_s / moved * 1e6 if moved else None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> RunResult:
        latency = raw.get("latency")
        fields = {**raw, "latency": None}
        if latency is not None:
            cdf = [(float(q), int(v)) for q, v in latency.get("cdf", [])]
            fields["latency"] = Latency(**{**latency, "cdf": cdf})
        return cls(**fields)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the divisor is 0."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return numerator / denominator


@dataclass(frozen=True)
class Summary:
    """Medians over the repetitions of one system on one workload (successful runs only)."""

    system: str
    workload: str
    runs: int
    failures: list[str]
    produce_rate: float | None = None
    consume_rate: float | None = None
    produce_mb_s: float | None = None
    consume_mb_s: float | None = None
    cpu_s_per_million: float | None = None
    latency_rate_per_s: float | None = None
    achieved_rate_per_s: float | None = None
    p50_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    # The paced run at a share of the system's own peak, when it had one.
    own_rate_per_s: float | None = None
    own_achieved_rate_per_s: float | None = None
    own_p50_us: float | None = None
    own_p99_us: float | None = None
    own_p999_us: float | None = None


def summarize(results: Sequence[RunResult], system: str, workload: str) -> Summary:
    mine = [r for r in results if r.system == system and r.workload == workload]
    failures = [f"{r.kind} #{r.repetition}: {r.error or _shortfall(r)}" for r in mine if not r.ok]
    through = [r for r in mine if r.kind == "throughput" and r.ok]
    paced = [r for r in mine if r.kind == "latency" and r.ok and r.latency is not None]
    own = [r for r in mine if r.kind == "own-latency" and r.ok and r.latency is not None]
    cpu = [c for r in through if (c := r.cpu_s_per_million) is not None]
    return Summary(
        system=system,
        workload=workload,
        runs=len(through),
        failures=failures,
        produce_rate=median([r.produce_rate for r in through]),
        consume_rate=median([r.consume_rate for r in through]),
        produce_mb_s=median([r.produce_mb_s for r in through]),
        consume_mb_s=median([r.consume_mb_s for r in through]),
        cpu_s_per_million=median(cpu),
        latency_rate_per_s=median([r.target_rate_per_s or 0.0 for r in paced]),
        achieved_rate_per_s=median([r.produce_rate for r in paced]),
        p50_us=median([r.latency.p50_us for r in paced if r.latency]),
        p99_us=median([r.latency.p99_us for r in paced if r.latency]),
        p999_us=median([r.latency.p999_us for r in paced if r.latency]),
        own_rate_per_s=median([r.target_rate_per_s or 0.0 for r in own]),
        own_achieved_rate_per_s=median([r.produce_rate for r in own]),
        own_p50_us=median([r.latency.p50_us for r in own if r.latency]),
        own_p99_us=median([r.latency.p99_us for r in own if r.latency]),
        own_p999_us=median([r.latency.p999_us for r in own if r.latency]),
    )


def _shortfall(result: RunResult) -> str:
    return (
        f"expected {result.expected} records, produced {result.produced}, "
        f"consumed {result.consumed}"
    )


def same_run_ratios(
    results: Sequence[RunResult], workload: str, reference: str, peer: str, kind: Kind
) -> dict[str, float]:
    """Median over repetitions of reference/peer produce and consume rates, each ratio taken
    within one repetition (so both systems saw the same machine state)."""
    produce: list[float] = []
    consume: list[float] = []
    by_rep: dict[tuple[str, int], RunResult] = {
        (r.system, r.repetition): r
        for r in results
        if r.workload == workload and r.kind == kind and r.ok
    }
    for (system, rep), ours in by_rep.items():
        theirs = by_rep.get((peer, rep))
        if system != reference or theirs is None:
            continue
        if (p := ratio(ours.produce_rate, theirs.produce_rate)) is not None:
            produce.append(p)
        if (c := ratio(ours.consume_rate, theirs.consume_rate)) is not None:
            consume.append(c)
    out: dict[str, float] = {}
    if produce:
        out["produce"] = statistics.median(produce)
    if consume:
        out["consume"] = statistics.median(consume)
    return out
