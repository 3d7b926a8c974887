"""Issues 8's and 22's targets, checked against a run's summaries and same-run ratios (pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.compare.results import RunResult, Summary, same_run_ratios
from bench.compare.workloads import parse

# (peer, produce ratio, consume ratio) pafka must reach with 100-byte records.
RATIO_TARGETS = (("redis-streams", 3.0, 2.0), ("nats-jetstream", 10.0, 10.0))
P99_TARGET_US = 10_000
# The REST gateway (issue 22): (system, peer, produce ratio, consume ratio), and its p99 paced
# at 50% of its own peak.
REST = "pafka-rest"
REST_RATIO_TARGETS = ((REST, "redis-streams", 2.0, 2.0),)
REST_OWN_P99_TARGET_US = 20_000
TARGET_SIZE_BYTES = 100


@dataclass(frozen=True)
class Check:
    workload: str
    what: str
    value: float | None
    threshold: float
    # "at least" or "at most"
    sense: str

    @property
    def met(self) -> bool | None:
        if self.value is None:
            return None
        if self.sense == "at least":
            return self.value >= self.threshold
        return self.value <= self.threshold


def checks(
    results: Sequence[RunResult], summaries: Sequence[Summary], reference: str
) -> list[Check]:
    """Every target that applies to the workloads run (100-byte records; latency with acks=1)."""
    found: list[Check] = []
    sizes = {r.workload: r.message_size_bytes for r in results}
    for workload in dict.fromkeys(r.workload for r in results):
        if sizes[workload] != TARGET_SIZE_BYTES:
            continue
        for peer, produce, consume in RATIO_TARGETS:
            if not any(r.workload == workload and r.system == peer for r in results):
                continue
            ratios = same_run_ratios(results, workload, reference, peer, "throughput")
            found.append(
                Check(
                    workload,
                    f"produce {reference}/{peer}",
                    ratios.get("produce"),
                    produce,
                    "at least",
                )
            )
            found.append(
                Check(
                    workload,
                    f"consume {reference}/{peer}",
                    ratios.get("consume"),
                    consume,
                    "at least",
                )
            )
        found += _rest_checks(results, summaries, workload)
        ours = [s for s in summaries if s.system == reference and s.workload == workload]
        if ours and parse(workload).acks == "1":
            p99 = ours[0].p99_us
            found.append(
                Check(
                    workload, f"{reference} p99 at 50% of peak (us)", p99, P99_TARGET_US, "at most"
                )
            )
    return found


def _rest_checks(
    results: Sequence[RunResult], summaries: Sequence[Summary], workload: str
) -> list[Check]:
    found: list[Check] = []
    ran = {r.system for r in results if r.workload == workload}
    for system, peer, produce, consume in REST_RATIO_TARGETS:
        if system not in ran or peer not in ran:
            continue
        ratios = same_run_ratios(results, workload, system, peer, "throughput")
        for what, threshold in (("produce", produce), ("consume", consume)):
            found.append(
                Check(workload, f"{what} {system}/{peer}", ratios.get(what), threshold, "at least")
            )
    rest = [s for s in summaries if s.system == REST and s.workload == workload]
    if rest and parse(workload).acks == "1":
        found.append(
            Check(
                workload,
                f"{REST} p99 at 50% of its own peak (us)",
                rest[0].own_p99_us,
                REST_OWN_P99_TARGET_US,
                "at most",
            )
        )
    return found
