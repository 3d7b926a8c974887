"""One measured run: consumers first, producers once every consumer is ready, all concurrent.

Consumers are started and given time to join (until each says it is ready, or a grace period
for drivers that do not say), then the producers start, so end-to-end latency is real and no
record waits for a group to form. The server processes' CPU time is read just before the
producers start and after the last worker ends.
"""

from __future__ import annotations

import contextlib
import queue
import time
import uuid
from dataclasses import dataclass, field, replace
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

from tqdm import tqdm

from bench.compare.cpu import cpu_seconds
from bench.compare.driver import ConsumeStats, Endpoint, ProduceStats, System, Workload
from bench.compare.results import Kind, Latency, RunResult
from bench.compare.workers import Event, Role, Task, run_task
from bench.compare.workloads import shares


@dataclass(frozen=True)
class Limits:
    # A consumer that never says it is ready is assumed ready this long after it started.
    ready_grace_s: float = 5.0
    # Consumers not ready by then fail the run.
    ready_timeout_s: float = 90.0
    run_timeout_s: float = 900.0
    show_progress: bool = True


@dataclass
class _Workers:
    processes: dict[tuple[Role, int], SpawnProcess] = field(default_factory=dict)
    started_at: dict[int, float] = field(default_factory=dict)
    ready: set[int] = field(default_factory=set)
    stats: dict[tuple[Role, int], Any] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    produced_progress: int = 0

    def pending(self) -> bool:
        return len(self.stats) + len(self.errors) < len(self.processes) and not self.errors


def measure(
    ctx: SpawnContext,
    module: str,
    system: System,
    endpoint: Endpoint,
    workload: Workload,
    kind: Kind,
    repetition: int,
    limits: Limits,
) -> RunResult:
    """Run ``workload`` once against a started system; failures become the result's error."""
    topic = f"bench-{kind[0]}{repetition}-{uuid.uuid4().hex[:8]}"
    share = shares(workload)
    expected = share.total(workload.producers)
    base = RunResult(
        system=system.name,
        workload=workload.name,
        kind=kind,
        repetition=repetition,
        message_size_bytes=workload.message_size_bytes,
        expected=expected,
        target_rate_per_s=workload.rate_per_s,
    )
    try:
        system.create_stream(endpoint, topic, workload)
    except Exception as exc:
        return replace(base, error=f"creating {topic}: {type(exc).__name__}: {exc}")
    events: Any = ctx.Queue()
    workers = _Workers()

    def spawn(role: Role, worker: int, count: int) -> None:
        task = Task(module, role, endpoint, topic, workload, worker, count)
        process = ctx.Process(target=run_task, args=(task, events), daemon=True)
        process.start()
        workers.processes[(role, worker)] = process

    label = f"{system.name} {workload.name} {kind}"
    bar = tqdm(total=expected, desc=label, unit="rec", disable=not limits.show_progress)
    cpu_before = 0.0
    try:
        for worker in range(workload.consumers):
            spawn("consume", worker, share.per_consumer)
        _await_ready(events, workers, workload.consumers, limits, bar)
        if not workers.errors:
            cpu_before = cpu_seconds(system.server_pids())
            for worker in range(workload.producers):
                spawn("produce", worker, share.per_producer)
            deadline = time.monotonic() + limits.run_timeout_s
            while workers.pending():
                if time.monotonic() > deadline:
                    workers.errors.append(f"not finished after {limits.run_timeout_s:.0f}s")
                    break
                _next_event(events, workers, bar)
        cpu_used = cpu_seconds(system.server_pids()) - cpu_before
    finally:
        bar.close()
        _end(workers)
    return _result(base, workers, cpu_used, timed=workload.duration_s is not None)


def _await_ready(
    events: Any, workers: _Workers, consumers: int, limits: Limits, bar: tqdm[Any]
) -> None:
    deadline = time.monotonic() + limits.ready_timeout_s
    while len(workers.ready) < consumers and not workers.errors:
        now = time.monotonic()
        for worker, at in workers.started_at.items():
            if now - at > limits.ready_grace_s:
                workers.ready.add(worker)
        if now > deadline:
            workers.errors.append(f"consumers not ready after {limits.ready_timeout_s:.0f}s")
            return
        _next_event(events, workers, bar, wait_s=0.2)


def _next_event(events: Any, workers: _Workers, bar: tqdm[Any], wait_s: float = 1.0) -> None:
    try:
        event: Event = events.get(timeout=wait_s)
    except queue.Empty:
        # A worker that died without a word (killed, crashed in C) fails the run.
        for (role, worker), process in workers.processes.items():
            if process.exitcode not in (None, 0) and (role, worker) not in workers.stats:
                workers.errors.append(f"{role} worker {worker} died (exit {process.exitcode})")
        return
    key = (event.role, event.worker)
    if event.kind == "started" and event.role == "consume":
        workers.started_at[event.worker] = time.monotonic()
    elif event.kind == "ready":
        workers.ready.add(event.worker)
    elif event.kind == "progress":
        if event.role == "consume":
            bar.update(event.records)
        else:
            workers.produced_progress += event.records
            bar.set_postfix(produced=workers.produced_progress, refresh=False)
    elif event.kind == "done":
        workers.stats[key] = event.payload
        if event.role == "consume":
            workers.ready.add(event.worker)
    elif event.kind == "failed":
        workers.errors.append(f"{event.role} worker {event.worker} failed:\n{event.payload}")


def _end(workers: _Workers) -> None:
    for process in workers.processes.values():
        process.join(timeout=10 if not workers.errors else 1)
        if process.is_alive():
            process.terminate()
            process.join(timeout=5)
        with contextlib.suppress(ValueError):
            process.close()


def _result(base: RunResult, workers: _Workers, cpu_used: float, timed: bool) -> RunResult:
    produced = [s for (role, _), s in workers.stats.items() if role == "produce"]
    consumed = [s for (role, _), s in workers.stats.items() if role == "consume"]
    latencies: list[int] = []
    for stats in consumed:
        assert isinstance(stats, ConsumeStats)
        latencies.extend(stats.latencies_us)
    assert all(isinstance(s, ProduceStats) for s in produced)
    total = sum(s.records for s in produced)
    return replace(
        base,
        # A run with a duration expects every record its producers managed to send.
        expected=total if timed else base.expected,
        produced=total,
        # Workers run side by side: the slowest one's time is the run's.
        produce_s=max((s.seconds for s in produced), default=0.0),
        consumed=sum(s.records for s in consumed),
        consume_s=max((s.seconds for s in consumed), default=0.0),
        server_cpu_s=cpu_used,
        latency=Latency.of(latencies),
        error="\n".join(workers.errors),
    )
