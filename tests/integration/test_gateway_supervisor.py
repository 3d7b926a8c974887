"""The worker supervisor's policy on real forked processes and real signals, with workers that
stand in for a gateway (serve, die, fail to start) so each case takes a fraction of a second."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from services.gateway import workers
from services.gateway.settings import GatewaySettings

WITHIN_S = 20.0


def _incarnations(folder: Path, index: int) -> int:
    """How many times worker ``index`` was started, counting this one."""
    marker = folder / f"worker-{index}-{os.getpid()}"
    marker.touch()
    return len(list(folder.glob(f"worker-{index}-*")))


def _serve_until_sigterm(serving: Callable[[], None]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    serving()
    while True:
        time.sleep(0.05)


def _supervisor(folder: Path, worker_main: workers.WorkerMain) -> multiprocessing.Process:
    def run() -> None:
        supervisor = workers.Supervisor(
            GatewaySettings(workers=2), worker_main, str(folder), first_backoff_s=0.01
        )
        raise SystemExit(supervisor.run())

    process = multiprocessing.get_context("fork").Process(target=run)
    process.start()
    return process


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WITHIN_S
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_a_worker_that_dies_after_serving_is_replaced_and_sigterm_ends_all_with_0(
    tmp_path: Path,
) -> None:
    def worker(settings: GatewaySettings, index: int, serving: Callable[[], None]) -> int:
        if index == 1 and _incarnations(tmp_path, index) == 1:
            serving()
            return 3  # dies once, after serving
        return _serve_until_sigterm(serving)

    supervisor = _supervisor(tmp_path, worker)
    try:
        _wait_for(lambda: len(list(tmp_path.glob("worker-1-*"))) == 2)
        time.sleep(0.2)  # the replacement serves
        assert supervisor.is_alive()
    finally:
        os.kill(supervisor.pid or 0, signal.SIGTERM)
        supervisor.join(WITHIN_S)
    assert supervisor.exitcode == 0


def test_a_worker_failing_at_first_start_ends_the_gateway_with_its_status(tmp_path: Path) -> None:
    def worker(settings: GatewaySettings, index: int, serving: Callable[[], None]) -> int:
        if index == 2:
            return 2
        return _serve_until_sigterm(serving)

    supervisor = _supervisor(tmp_path, worker)
    supervisor.join(WITHIN_S)
    assert supervisor.exitcode == 2


def test_restarts_failing_at_start_give_up_after_a_few(tmp_path: Path) -> None:
    """Worker 1 serves, dies, then never starts again: after MAX_START_FAILURES tries in a row
    the gateway ends (non-zero), its other worker drained."""

    def worker(settings: GatewaySettings, index: int, serving: Callable[[], None]) -> int:
        if index == 1:
            if _incarnations(tmp_path, index) == 1:
                serving()
                time.sleep(0.2)  # both serve before this one dies
                return 0
            return 4
        return _serve_until_sigterm(serving)

    supervisor = _supervisor(tmp_path, worker)
    supervisor.join(WITHIN_S)
    assert supervisor.exitcode == 4
    assert len(list(tmp_path.glob("worker-1-*"))) == 1 + workers.MAX_START_FAILURES
