"""The comparison: every chosen system on every workload, repeated, in the same run.

For each repetition and workload, every system's servers are started fresh, then:

1. a throughput run per system, unpaced, in an order rotated per repetition (so a burst of
   machine noise does not always hit the same system);
2. a latency run per system, paced at ``latency_fraction`` (50%) of the reference system's
   (pafka-kafka's) peak in this repetition, the same rate for every system, for about
   ``latency_seconds``;
3. for the systems in ``own_paced`` (pafka-rest), another latency run paced at the same share
   of the system's own peak in this repetition: its latency at a load it can carry, where the
   common rate may be beyond it.

Results go to ``{out}/results.json``; :mod:`bench.compare.report` turns them into Markdown and
plots. With ``profile``, py-spy samples the pafka systems' servers during their throughput runs.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.context import SpawnContext
from pathlib import Path

from bench.compare import registry
from bench.compare.driver import Endpoint, System, Workload
from bench.compare.measure import Limits, measure
from bench.compare.results import Kind, RunResult
from bench.compare.workloads import paced

PROFILES = "profiles"
# Systems also paced at a share of their own peak: the REST gateway's latency target (issue 22)
# is at 50% of REST's own peak.
OWN_PACED = ("pafka-rest",)


@dataclass(frozen=True)
class Options:
    systems: list[str]
    workloads: list[Workload]
    out: Path
    repetitions: int = 1
    latency_fraction: float = 0.5
    latency_seconds: float = 10.0
    profile: bool = False
    limits: Limits = field(default_factory=Limits)
    own_paced: tuple[str, ...] = OWN_PACED


@dataclass
class Outcome:
    results: list[RunResult]
    # Systems that could not run at all, with the reason.
    unavailable: dict[str, str]
    durability: dict[str, str]
    profiles: dict[str, str]


def rotated(names: list[str], repetition: int) -> list[str]:
    if not names:
        return []
    shift = repetition % len(names)
    return names[shift:] + names[:shift]


def own_peak_rate(results: list[RunResult], system: str) -> float | None:
    """A system's own sustained rate in one round (the slower of produce and consume)."""
    ours = [
        min(r.produce_rate, r.consume_rate)
        for r in results
        if r.kind == "throughput" and r.ok and r.system == system
    ]
    return ours[0] if ours and ours[0] > 0 else None


def peak_rate(results: list[RunResult], reference: str) -> float | None:
    """What the latency runs are paced against: the reference system's sustained rate (the
    slower of its produce and consume rates); the fastest system's when it has none."""
    ok = [r for r in results if r.kind == "throughput" and r.ok]
    ours = [min(r.produce_rate, r.consume_rate) for r in ok if r.system == reference]
    if ours:
        return ours[0]
    others = [min(r.produce_rate, r.consume_rate) for r in ok]
    return max(others) if others else None


def run(options: Options) -> Outcome:
    if options.repetitions < 1:
        raise ValueError("repetitions must be at least 1")
    options.out.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(results=[], unavailable={}, durability={}, profiles={})
    entries: dict[str, registry.Entry] = {}
    for entry in registry.select(options.systems):
        if entry.missing:
            outcome.unavailable[entry.name] = entry.missing
            continue
        try:
            system = entry.system()
            system.install()
        except Exception as exc:
            outcome.unavailable[entry.name] = f"{type(exc).__name__}: {exc}"
            continue
        entries[entry.name] = entry
        outcome.durability[entry.name] = system.durability
    ctx = multiprocessing.get_context("spawn")
    workdir = options.out / "work"
    for repetition in range(options.repetitions):
        for workload in options.workloads:
            order = rotated(list(entries), repetition)
            with _started(
                entries, order, workdir / f"{repetition}-{workload.name}", workload
            ) as live:
                for name, why in live.failed.items():
                    outcome.unavailable.setdefault(name, f"failed to start: {why}")
                this_round: list[RunResult] = []
                for name in order:
                    if name not in live.up:
                        continue
                    system, endpoint = live.up[name]
                    with _profiled(options, outcome, name, system, workload):
                        result = measure(
                            ctx,
                            entries[name].module,
                            system,
                            endpoint,
                            workload,
                            "throughput",
                            repetition,
                            options.limits,
                        )
                    this_round.append(result)

                peak = peak_rate(this_round, registry.REFERENCE)
                for name in order:
                    if name not in live.up:
                        continue
                    run = _Paced(ctx, options, entries[name].module, *live.up[name])
                    if peak:
                        this_round.append(run.measure(workload, peak, "latency", repetition))
                    own = own_peak_rate(this_round, name)
                    if own and name in options.own_paced:
                        this_round.append(run.measure(workload, own, "own-latency", repetition))
                outcome.results.extend(this_round)
            save(outcome, options.out)
    # Server logs stay when anything failed: the errors point into them.
    if not outcome.unavailable and all(r.ok for r in outcome.results):
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome


@dataclass(frozen=True)
class _Paced:
    """A latency run of one started system, paced at ``latency_fraction`` of a rate."""

    ctx: SpawnContext
    options: Options
    module: str
    system: System
    endpoint: Endpoint

    def measure(self, workload: Workload, rate: float, kind: Kind, repetition: int) -> RunResult:
        o = self.options
        at = paced(workload, o.latency_fraction * rate, o.latency_seconds)
        return measure(
            self.ctx, self.module, self.system, self.endpoint, at, kind, repetition, o.limits
        )


@dataclass
class _Live:
    up: dict[str, tuple[System, Endpoint]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


@contextlib.contextmanager
def _started(
    entries: dict[str, registry.Entry], order: list[str], workdir: Path, workload: Workload
) -> Iterator[_Live]:
    live = _Live()
    try:
        for name in order:
            system = entries[name].system()
            try:
                endpoint = system.start(workdir / name, workload)
            except Exception as exc:
                live.failed[name] = f"{type(exc).__name__}: {exc}"
                with contextlib.suppress(Exception):
                    system.stop()
                continue
            live.up[name] = (system, endpoint)
        yield live
    finally:
        for system, _ in live.up.values():
            with contextlib.suppress(Exception):
                system.stop()


@contextlib.contextmanager
def _profiled(
    options: Options, outcome: Outcome, name: str, system: System, workload: Workload
) -> Iterator[None]:
    """py-spy samples of a pafka system's servers during its throughput run, written as
    collapsed stacks (``--format raw``: flame-graph input, summarized by the report)."""
    pids_of = getattr(system, "profile_pids", None)
    if not options.profile or pids_of is None:
        yield
        return
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    spies: list[subprocess.Popen[bytes]] = []
    folder = options.out / PROFILES
    folder.mkdir(parents=True, exist_ok=True)
    for label, pid in pids_of().items():
        path = folder / f"{workload.name}-{name}-{label}.txt"
        command = [py_spy, "record", "--pid", str(pid), "--rate", "200", "--format", "raw"]
        spies.append(
            subprocess.Popen(
                [*command, "--output", str(path), "--nonblocking"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        outcome.profiles[workload.name] = PROFILES
    try:
        yield
    finally:
        # py-spy writes its output when interrupted.
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            try:
                spy.wait(timeout=30)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()


def machine() -> dict[str, str]:
    model = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {
        "cores": str(multiprocessing.cpu_count()),
        "cpu": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def save(outcome: Outcome, out: Path) -> Path:
    path = out / "results.json"
    body = {
        "machine": machine(),
        "unavailable": outcome.unavailable,
        "durability": outcome.durability,
        "profiles": outcome.profiles,
        "results": [r.to_json() for r in outcome.results],
    }
    path.write_text(json.dumps(body, indent=1))
    return path


def load(path: Path) -> tuple[dict[str, str], Outcome]:
    raw = json.loads(path.read_text())
    outcome = Outcome(
        results=[RunResult.from_json(r) for r in raw["results"]],
        unavailable=raw["unavailable"],
        durability=raw["durability"],
        profiles=raw["profiles"],
    )
    return raw["machine"], outcome
