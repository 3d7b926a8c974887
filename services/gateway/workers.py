"""Worker processes: ``PAFKA_GATEWAY_WORKERS`` gateways in one pod, serving one port.

The gateway is stateless, so workers share nothing: each is a whole gateway (its own ZooKeeper
session, broker connections and producer) forked from a supervisor that holds no connection of
its own. Each worker binds the port with SO_REUSEPORT, so the kernel spreads new connections
evenly over the workers; one shared accepting socket would hand a burst of connections to
whichever worker woke first (libuv accepts until the queue is empty).

The supervisor restarts a worker that dies once serving, forwards SIGTERM/SIGINT so every
worker drains its connections, and exits 0 once all have. A worker that fails before serving
(ZooKeeper unreachable, a certificate that does not load) ends the gateway while no worker has
served yet, as a single process would have ended; later, a few failed restarts in a row do.
Metrics are written by each worker to files in a directory of the supervisor's
(prometheus_client's multiprocess mode), so any worker answers a scrape for all of them.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from multiprocessing.process import BaseProcess

from services.gateway.settings import GatewaySettings

log = logging.getLogger("pafka.gateway")

# Kubernetes' default terminationGracePeriodSeconds is 30: workers still draining after this
# are killed, leaving the supervisor time to exit before the kubelet kills the pod.
DRAIN_TIMEOUT_S = 25.0
# Restarts that fail before serving, in a row, after which the gateway gives up.
MAX_START_FAILURES = 5
MAX_RESTART_BACKOFF_S = 10.0
PR_SET_PDEATHSIG = 1

# How a worker runs: the settings, whether it binds with SO_REUSEPORT, and a callback it calls
# once its port serves. It returns the process's exit status.
WorkerMain = Callable[[GatewaySettings, int, Callable[[], None]], int]


@dataclass
class Worker:
    index: int
    process: BaseProcess
    ready_fd: int
    serving: bool = False
    # Until the worker says it serves or its end of the pipe closes (it died first).
    awaiting_ready: bool = True


@dataclass
class Supervisor:
    settings: GatewaySettings
    worker_main: WorkerMain
    metrics_dir: str
    workers: dict[int, Worker] = field(default_factory=dict)
    ever_served: bool = False
    start_failures: int = 0
    # Written to by the signal handlers (signal.set_wakeup_fd), read by the loop.
    wake_fd: int = -1
    # The pause before restarting a worker that failed to start, doubled per failure in a row.
    first_backoff_s: float = 0.5

    def start_worker(self, index: int) -> None:
        ready_r, ready_w = os.pipe()
        context = multiprocessing.get_context("fork")
        process = context.Process(
            target=_worker_process,
            args=(self.settings, index, ready_w, self.metrics_dir, self.worker_main, os.getpid()),
            name=f"gateway-worker-{index}",
        )
        process.start()
        os.close(ready_w)
        self.workers[index] = Worker(index, process, ready_r)
        log.info("worker %d started (pid %s)", index, process.pid)

    def run(self) -> int:
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        self.wake_fd = wake_r
        previous_wakeup = signal.set_wakeup_fd(wake_w)
        previous = {s: signal.signal(s, lambda *_: None) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for index in range(1, self.settings.workers + 1):
                self.start_worker(index)
            return self._loop()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            signal.set_wakeup_fd(previous_wakeup)
            os.close(wake_r)
            os.close(wake_w)

    def _loop(self) -> int:
        while True:
            by_sentinel = {w.process.sentinel: w for w in self.workers.values()}
            by_ready = {w.ready_fd: w for w in self.workers.values() if w.awaiting_ready}
            events = wait([self.wake_fd, *by_sentinel, *by_ready])
            if self.wake_fd in events:
                return self.stop()
            # One event at a time, then wait again: handling an exit closes that worker's pipe,
            # whose descriptor the next worker may reuse. A worker that said it serves and died
            # since counts as having served.
            ready = [e for e in events if e in by_ready]
            if ready:
                self._serving(by_ready[ready[0]])
                continue
            status = self._exited(by_sentinel[events[0]])  # type: ignore[index]
            if status is not None:
                return status

    def _serving(self, worker: Worker) -> None:
        worker.awaiting_ready = False
        if os.read(worker.ready_fd, 1):
            worker.serving = self.ever_served = True
            self.start_failures = 0
            log.info("worker %d serving", worker.index)

    def _exited(self, worker: Worker) -> int | None:
        """Replace a dead worker; the gateway's exit status when it should end instead."""
        worker.process.join()
        os.close(worker.ready_fd)
        del self.workers[worker.index]
        code = worker.process.exitcode
        _mark_dead(worker.process.pid, self.metrics_dir)
        if not worker.serving:
            self.start_failures += 1
            if not self.ever_served or self.start_failures >= MAX_START_FAILURES:
                log.error("worker %d failed to start (exit status %s)", worker.index, code)
                self.stop()
                return code if code and code > 0 else 1
            backoff_s = min(MAX_RESTART_BACKOFF_S, self.first_backoff_s * 2**self.start_failures)
            log.warning(
                "worker %d failed to start (exit status %s); again in %.1f s",
                worker.index,
                code,
                backoff_s,
            )
            if wait([self.wake_fd], timeout=backoff_s):
                return self.stop()  # asked to stop meanwhile
        else:
            log.warning("worker %d exited (status %s); starting another", worker.index, code)
        self.start_worker(worker.index)
        return None

    def stop(self) -> int:
        """SIGTERM to every worker, each drains; 0 when all ended cleanly within the grace."""
        for worker in self.workers.values():
            with contextlib.suppress(ProcessLookupError):
                if worker.process.pid is not None:
                    os.kill(worker.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        status = 0
        for worker in list(self.workers.values()):
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.exitcode is None:
                log.error(
                    "worker %d still draining after %.0f s: killed", worker.index, DRAIN_TIMEOUT_S
                )
                worker.process.kill()
                worker.process.join()
                status = 1
            elif worker.process.exitcode not in (0, -signal.SIGTERM, -signal.SIGINT):
                status = 1
            os.close(worker.ready_fd)
            _mark_dead(worker.process.pid, self.metrics_dir)
        self.workers.clear()
        log.info("workers stopped")
        return status


def supervise(settings: GatewaySettings, worker_main: WorkerMain) -> int:
    """Run ``settings.workers`` workers until SIGTERM/SIGINT; the gateway's exit status."""
    metrics_dir = tempfile.mkdtemp(prefix="pafka-gateway-metrics-")
    try:
        return Supervisor(settings, worker_main, metrics_dir).run()
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)


def _worker_process(
    settings: GatewaySettings,
    index: int,
    ready_w: int,
    metrics_dir: str,
    worker_main: WorkerMain,
    supervisor_pid: int,
) -> None:
    # A signal before the worker's loop installs its own handlers ends it at once: the
    # supervisor's handlers, inherited by the fork, would only write to its wake-up pipe.
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    _die_with_parent(supervisor_pid)
    _use_multiprocess_metrics(metrics_dir)

    def serving() -> None:
        os.write(ready_w, b"1")
        os.close(ready_w)

    raise SystemExit(worker_main(settings, index, serving))


def _die_with_parent(parent: int) -> None:
    """SIGTERM (a drain) when the supervisor dies, even by SIGKILL: no orphan keeps the port."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def _use_multiprocess_metrics(directory: str) -> None:
    from prometheus_client import values

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    # prometheus_client chooses how values are stored when it is imported, which the
    # supervisor did before forking; metrics made from now on go to this worker's files.
    values.ValueClass = values.get_value_class()


def _mark_dead(pid: int | None, metrics_dir: str) -> None:
    from prometheus_client import multiprocess

    if pid is not None:
        multiprocess.mark_process_dead(pid, metrics_dir)
