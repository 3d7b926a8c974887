"""One partition scenario, Jepsen's way: workload, cut, heal, settle, validate, figures.

The client produces from its own namespace (``client.py``) for the whole run; the harness
finds the roles (partition 0's leader, the active controller), cuts, heals, waits for the ISRs
to fill again, stops the client, then checks the produce-consume-validate invariants and
computes the availability figures from the client's acknowledgement times and the
controllers' ``/status`` answers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pafka.zk.znodes import ControllerZNode
from tests.faults.workload import PARTITIONS, Deliveries, Workload
from tests.partitions import availability
from tests.partitions.cuts import Pair
from tests.partitions.figures import Figures
from tests.partitions.observe import ControllerWatch, isr_sizes, wait_full_isr
from tests.partitions.topology import ZK_SESSION_TIMEOUT_MS, PartitionedCluster

REPLICATION_FACTOR = 3
WARM_UP_S = 5.0
SETTLE_LIMIT_S = 60.0
# Writes keep flowing this long after the ISRs are full, to see them accepted.
AFTER_SETTLE_S = 3.0
# The client flushes for at most 60 s and waits 30 s for its consumer.
CLIENT_STOP_S = 120.0
# Set (to anything) to keep the producer's debug log of every run, for an investigation.
KEEP_DEBUG_LOG_ENV = "PAFKA_PARTITIONS_KEEP_DEBUG_LOG"


@dataclass(frozen=True)
class Roles:
    leader: str  # partition 0's leader when the cut starts
    followers: tuple[str, ...]
    brokers: tuple[str, ...]
    active_controller: str
    standby_controllers: tuple[str, ...]
    zookeeper: str = "zookeeper"
    client: str = "client"

    @property
    def servers(self) -> tuple[str, ...]:
        return (self.zookeeper, self.active_controller, *self.standby_controllers, *self.brokers)


@dataclass(frozen=True)
class Scenario:
    name: str
    drops: Callable[[Roles], set[Pair]]
    # Cut and heal alternately every ``flap_s`` seconds for the cut's length.
    flap_s: float = 0.0


def roles(bundle: PartitionedCluster, topic: str) -> Roles:
    cluster = bundle.cluster
    state = cluster.partition_state(topic, 0)
    brokers = tuple(b.name for b in cluster.local.brokers())
    leader = f"broker-{state.leader}"
    data, _ = cluster.zk.get(ControllerZNode.path())
    active = f"controller-{ControllerZNode.decode(data).controller_id}"
    controllers = tuple(c.name for c in cluster.local.controllers())
    return Roles(
        leader=leader,
        followers=tuple(b for b in brokers if b != leader),
        brokers=brokers,
        active_controller=active,
        standby_controllers=tuple(c for c in controllers if c != active),
    )


class Client:
    """The workload's producer in the client namespace, as a child process."""

    def __init__(self, bundle: PartitionedCluster, topic: str, out_dir: Path) -> None:
        self.out = out_dir / "deliveries.json"
        self.debug_log = out_dir / "producer-debug.log"
        command = [
            *bundle.network.exec_prefix("client"),
            sys.executable,
            "-m",
            "tests.partitions.client",
            "--bootstrap",
            bundle.cluster.bootstrap,
            "--topic",
            topic,
            "--out",
            str(self.out),
        ]
        with open(self.debug_log, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def stop(self) -> tuple[Deliveries, dict[str, Any]]:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(CLIENT_STOP_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the client did not stop; see {self.debug_log}") from None
        if not self.out.exists():
            raise AssertionError(f"the client exited without results; see {self.debug_log}")
        results = json.loads(self.out.read_text())
        return Deliveries.from_json(results["deliveries"]), results["consumer"]


def _cut(bundle: PartitionedCluster, scenario: Scenario, drops: set[Pair], cut_s: float) -> None:
    if not scenario.flap_s:
        bundle.cuts.apply(drops)
        time.sleep(cut_s)
        return
    end = time.monotonic() + cut_s
    on = True
    while (left := end - time.monotonic()) > 0:
        bundle.cuts.apply(drops if on else set())
        time.sleep(min(scenario.flap_s, left))
        on = not on


def run(bundle: PartitionedCluster, scenario: Scenario, cut_s: float, out_dir: Path) -> Figures:
    """Run the scenario and return its figures; ``figures.validation`` says whether the
    safety checks held (the caller asserts, after the figures are recorded)."""
    figures = Figures(
        scenario=scenario.name,
        cut_s=cut_s,
        zk_session_timeout_s=ZK_SESSION_TIMEOUT_MS / 1000,
        figures_path=str(out_dir / "figures.json"),
    )
    workload = Workload(bundle.cluster, topic=f"partitions-{bundle.network.run_id}")
    workload.create_topic()
    with ControllerWatch(bundle.cluster.local.controllers()) as watch:
        client = Client(bundle, workload.topic, out_dir)
        try:
            started = time.monotonic()
            time.sleep(WARM_UP_S)
            who = roles(bundle, workload.topic)
            drops = scenario.drops(who)
            figures.notes.append(
                f"leader {who.leader}, active {who.active_controller}, drops {sorted(drops)}"
            )
            cut_at = time.monotonic()
            _cut(bundle, scenario, drops, cut_s)
            bundle.cuts.heal()
            healed_at = time.monotonic()
            figures.notes.append(
                f"ISR sizes at the heal: {isr_sizes(bundle.cluster, workload.topic)}"
            )
            full_isr_at = wait_full_isr(
                bundle.cluster, workload.topic, REPLICATION_FACTOR, SETTLE_LIMIT_S
            )
            time.sleep(AFTER_SETTLE_S)
        finally:
            bundle.cuts.heal()
            deliveries, consumed = client.stop()
        ended = time.monotonic()

    workload.deliveries = deliveries
    acks: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
    for t, p in deliveries.ack_times:
        acks.setdefault(p, []).append(t)
    first_ack = min((t for t, _ in deliveries.ack_times), default=ended)
    figures.recovery_s = availability.recovery(healed_at, full_isr_at, acks, PARTITIONS)
    # From the first acknowledgement (the client's start-up is not the cluster's fault).
    figures.longest_no_ack_s = max(
        availability.longest_gap(times, first_ack, ended) for times in acks.values()
    )
    figures.longest_no_ack_topic_s = availability.longest_gap(
        (t for t, _ in deliveries.ack_times), first_ack, ended
    )
    figures.dual_active_s = availability.longest_overlap(watch.samples)
    figures.fatal_errors = deliveries.fatal
    figures.sent = deliveries.sent
    figures.acked = len(deliveries.ack_times)
    figures.failed = len(deliveries.failed)
    figures.timed_out = len(deliveries.indeterminate)
    figures.client_errors = len(deliveries.errors)
    figures.notes.append(f"cut at +{cut_at - started:.1f} s, heal at +{healed_at - started:.1f} s")
    figures.notes.append(f"unanswered /status polls: {watch.unanswered}")
    figures.consumed = int(consumed.get("read", 0))
    keep_log = bool(os.environ.get(KEEP_DEBUG_LOG_ENV))
    try:
        workload.validate(scenario.name)
        assert not consumed.get("backwards"), f"consumer went backwards: {consumed['backwards']}"
        assert consumed, "the client's consumer reported nothing"
        figures.validation = "ok"
    except AssertionError as exc:
        figures.validation = str(exc).splitlines()[0]
    if figures.validation == "ok" and not figures.fatal_errors and not keep_log:
        # librdkafka's debug log is kept only for an investigation.
        client.debug_log.unlink(missing_ok=True)
    else:
        figures.notes.append(f"producer debug log: {client.debug_log}")
    return figures
