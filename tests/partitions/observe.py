"""What the harness watches during a scenario, from the root namespace (the observer address
on the bridge, never cut): each controller's ``/status`` every 100 ms, and the partitions'
ISRs in ZooKeeper."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from pafka.local.cluster import ServiceProcess
from tests.faults.workload import PARTITIONS
from tests.integration.conftest import ClusterHandle

POLL_INTERVAL_S = 0.1


class ControllerWatch:
    """Polls every controller's ``/status`` in one thread each; ``samples`` maps a controller's
    name to (time, active) pairs. An unanswered poll adds no sample (see
    ``availability.longest_overlap``)."""

    def __init__(self, controllers: list[ServiceProcess]) -> None:
        self.controllers = controllers
        self.samples: dict[str, list[tuple[float, bool]]] = {c.name: [] for c in controllers}
        self.unanswered: dict[str, int] = {c.name: 0 for c in controllers}
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._poll, args=(c,), daemon=True) for c in controllers
        ]

    def __enter__(self) -> ControllerWatch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)

    def _poll(self, controller: ServiceProcess) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            try:
                with urllib.request.urlopen(controller.http_url + "/status", timeout=0.5) as r:
                    active = bool(json.loads(r.read())["active"])
                self.samples[controller.name].append((time.monotonic(), active))
            except (OSError, ValueError, KeyError):
                self.unanswered[controller.name] += 1
            self._stop.wait(max(0.0, POLL_INTERVAL_S - (time.monotonic() - began)))

    def active(self) -> list[str]:
        """The controllers whose latest answer said active."""
        return [name for name, s in self.samples.items() if s and s[-1][1]]


def isr_sizes(cluster: ClusterHandle, topic: str) -> list[int]:
    return [len(cluster.partition_state(topic, p).isr) for p in range(PARTITIONS)]


def wait_full_isr(
    cluster: ClusterHandle, topic: str, replicas: int, timeout_s: float
) -> float | None:
    """When every partition's ISR was full again (polled every 100 ms), or None on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(size >= replicas for size in isr_sizes(cluster, topic)):
            return time.monotonic()
        time.sleep(POLL_INTERVAL_S)
    return None
