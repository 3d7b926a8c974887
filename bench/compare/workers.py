"""The worker processes: each runs one producer or consumer loop of a ``ClientDriver``.

Workers are spawned (not forked: librdkafka and asyncio loops must not be inherited) and talk
to the runner through one queue of events: ``started``; ``ready`` (a consumer that called
``progress(0)``, meaning it can receive); ``progress`` with a record count; then ``done`` with
the stats, or ``failed`` with a traceback.
"""

from __future__ import annotations

import gc
import importlib
import traceback
from dataclasses import dataclass
from multiprocessing.queues import Queue
from typing import Any, Literal

from bench.compare.driver import Endpoint, Workload

Role = Literal["produce", "consume"]


@dataclass(frozen=True)
class Task:
    module: str
    role: Role
    endpoint: Endpoint
    topic: str
    workload: Workload
    worker: int
    count: int


@dataclass(frozen=True)
class Event:
    kind: Literal["started", "ready", "progress", "done", "failed"]
    role: Role
    worker: int
    records: int = 0
    payload: Any = None


def run_task(task: Task, events: Queue[Event]) -> None:
    """A worker process's body (a module-level function, so that spawn can find it)."""
    events.put(Event("started", task.role, task.worker))
    # No cyclic garbage collection in the clients, whatever the system: a full collection over
    # a consumer's growing latency list and a client's many live objects stalls a worker for
    # tens of milliseconds, which would show as the measured system's end-to-end latency.
    # Reference counting still frees everything the loops drop.
    gc.disable()
    announced = False

    def progress(records: int) -> None:
        nonlocal announced
        if records == 0:
            if task.role == "consume" and not announced:
                announced = True
                events.put(Event("ready", task.role, task.worker))
            return
        events.put(Event("progress", task.role, task.worker, records))

    try:
        driver = importlib.import_module(task.module).ClientDriver()
        run = driver.produce if task.role == "produce" else driver.consume
        stats = run(task.endpoint, task.topic, task.workload, task.worker, task.count, progress)
        events.put(Event("done", task.role, task.worker, payload=stats))
    except BaseException:  # the runner reports it; the process ends either way
        events.put(Event("failed", task.role, task.worker, payload=traceback.format_exc()))
