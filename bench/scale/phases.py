"""One partition count, measured phase by phase on a fresh cluster.

Creation, Metadata, idle cost, then the recovery (kill -9 of a broker and its restart, under an
acks=all producer over every partition), a preferred election of all partitions, a controlled
shutdown and a controller failover. Each phase waits for its events within
``phase_timeout_s``; an event not seen by then is recorded as None ("not within X s") and the
next phase starts anyway.
"""

from __future__ import annotations

import contextlib
import json
import math
import signal
import statistics
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from bench.scale import observe, profiling
from bench.scale.observe import PartitionStates, TopicPartition
from bench.scale.producer import ProducerProcess
from bench.scale.stats import cpu_percent, summarize_produce
from pafka.admin import topics as admin
from pafka.errors import CoordinationError
from pafka.local.cluster import LocalCluster
from pafka.zk.znodes import BrokerInfo, ControllerZNode

METADATA_REQUESTS = 5
# The new partitions' first checkpoints (leader epochs, offsets: a file each, synced) pass
# before idle CPU is sampled; that burst is once per partition's life, not the steady cost.
SETTLE_S = 30.0
KILLED_BROKER = 1
DRAINED_BROKER = 2

Figures = dict[str, float | None]


@dataclass(frozen=True)
class Plan:
    partitions: int
    replication_factor: int
    partitions_per_topic: int
    idle_s: float
    phase_timeout_s: float
    produce_rate_per_s: float
    profile: bool
    profiles_dir: Path
    work_dir: Path


@dataclass
class Measured:
    figures: Figures = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    processes: dict[str, dict[str, float]] = field(default_factory=dict)


class Phases:
    def __init__(self, plan: Plan, cluster: LocalCluster, zk: KazooClient) -> None:
        self.plan = plan
        self.cluster = cluster
        self.zk = zk
        self.measured = Measured()
        self.states = PartitionStates(zk, {})

    # -- helpers ---------------------------------------------------------------------------------

    def _stamp(
        self, phase: str, start_s: float, **events: Callable[[], bool]
    ) -> dict[str, float | None]:
        seen = observe.stamp_events(events, start_s, self.plan.phase_timeout_s)
        for name, value in seen.items():
            if value is None:
                self.measured.notes.append(
                    f"{phase}, {name}: not within {self.plan.phase_timeout_s:g} s"
                )
        return seen

    def _pids(self) -> dict[str, int]:
        return {s.name: s.pid for s in self.cluster.services.values() if s.alive()}

    def _spy(self, phase: str) -> contextlib.AbstractContextManager[None]:
        prefix = f"{self.plan.partitions}-{phase}"
        return profiling.spying(self.plan.profile, self._pids(), self.plan.profiles_dir, prefix)

    def active_controller(self) -> int:
        data, _ = self.zk.get(ControllerZNode.path())
        return ControllerZNode.decode(data).controller_id

    def _restart(self, name: str) -> float:
        start_s = time.monotonic()
        try:
            self.cluster.restart(name, timeout_s=self.plan.phase_timeout_s)
        except CoordinationError as exc:
            self.measured.notes.append(f"{name} restart: {exc}")
        return start_s

    # -- phases ----------------------------------------------------------------------------------

    def create(self) -> None:
        plan, figures = self.plan, self.measured.figures
        topics = math.ceil(plan.partitions / plan.partitions_per_topic)
        min_isr = "2" if plan.replication_factor >= 3 else "1"
        assignment: dict[TopicPartition, tuple[int, ...]] = {}
        start_s = time.monotonic()
        for i in range(topics):
            name = f"scale-{i:04d}"
            size = min(plan.partitions_per_topic, plan.partitions - i * plan.partitions_per_topic)
            node = admin.create_topic(
                self.zk, name, size, plan.replication_factor, {"min.insync.replicas": min_isr}
            )
            assignment.update({(name, p): r for p, r in node.partitions.items()})
        self.states = PartitionStates(self.zk, assignment)
        seen = self._stamp("creation", start_s, created=self.states.all_led_and_full)
        figures["create_s"] = seen["created"]
        figures["create_rate_pps"] = plan.partitions / seen["created"] if seen["created"] else None
        read_s = time.monotonic()
        self.states.read()
        self.measured.notes.append(
            f"{topics} topics of up to {plan.partitions_per_topic} partitions; one pipelined "
            f"read of every partition state took {time.monotonic() - read_s:.2f} s "
            "(the resolution of the times below)"
        )

    def metadata(self) -> None:
        from confluent_kafka.admin import AdminClient

        client = AdminClient({"bootstrap.servers": self.cluster.bootstrap, "log_level": 2})
        client.list_topics(timeout=60)
        took_ms = []
        for _ in range(METADATA_REQUESTS):
            start_s = time.monotonic()
            client.list_topics(timeout=60)
            took_ms.append((time.monotonic() - start_s) * 1000)
        self.measured.figures["metadata_p50_ms"] = statistics.median(took_ms)
        self.measured.figures["metadata_max_ms"] = max(took_ms)

    def idle(self) -> None:
        time.sleep(SETTLE_S)
        pids = self._pids()
        if self.cluster.zookeeper is not None and self.cluster.zookeeper.process is not None:
            pids["zookeeper"] = self.cluster.zookeeper.process.pid
        before = {name: observe.sample(pid) for name, pid in pids.items()}
        start_s = time.monotonic()
        time.sleep(self.plan.idle_s)
        elapsed_s = time.monotonic() - start_s
        processes = self.measured.processes
        for name, pid in pids.items():
            first, last = before[name], observe.sample(pid)
            if first is None or last is None:
                continue
            processes[name] = {
                "idle_cpu_pct": cpu_percent(
                    first.cpu_ticks, last.cpu_ticks, observe.TICKS_PER_S, elapsed_s
                ),
                "rss_mib": last.rss_mib,
                "descriptors": float(last.descriptors),
            }
        brokers = [v for k, v in processes.items() if k.startswith("broker-")]
        active = processes.get(f"controller-{self.active_controller()}", {})
        figures = self.measured.figures
        figures["idle_cpu_broker_pct"] = max((b["idle_cpu_pct"] for b in brokers), default=None)
        figures["rss_broker_mib"] = max((b["rss_mib"] for b in brokers), default=None)
        figures["idle_cpu_controller_pct"] = active.get("idle_cpu_pct")
        figures["rss_controller_mib"] = active.get("rss_mib")
        figures["zk_rss_mib"] = processes.get("zookeeper", {}).get("rss_mib")
        count = observe.znode_count(str(self.cluster.zookeeper_connect))
        figures["zk_znodes"] = None if count is None else float(count)
        replicas_per_broker = self.plan.partitions * self.plan.replication_factor / len(brokers)
        figures["fds_per_replica"] = (
            max(b["descriptors"] for b in brokers) / replicas_per_broker if brokers else None
        )

    def recovery(self, producer_out: Path) -> None:
        """kill -9 of a broker, then its restart, under the acks=all producer."""
        figures = self.measured.figures
        producer = ProducerProcess(
            self.cluster.bootstrap,
            sorted(self.states.assignment),
            self.plan.produce_rate_per_s,
            producer_out,
            flush_s=self.plan.phase_timeout_s,
        )
        try:
            if not producer.wait_acknowledged(self.plan.phase_timeout_s):
                self.measured.notes.append("producer: nothing acknowledged before the kill")
            led = self.states.led_by(KILLED_BROKER)
            figures["kill_led"] = float(len(led))
            with self._spy("kill"):
                start_s = time.monotonic()
                self.cluster.kill(f"broker-{KILLED_BROKER}", signal.SIGKILL)
                seen = self._stamp(
                    "kill -9",
                    start_s,
                    znode_gone=lambda: self.zk.exists(BrokerInfo.path(KILLED_BROKER)) is None,
                    new_leaders=lambda: self.states.none_led_by(led, KILLED_BROKER),
                )
            figures["kill_znode_gone_s"] = seen["znode_gone"]
            figures["kill_new_leaders_s"] = seen["new_leaders"]
            start_s = self._restart(f"broker-{KILLED_BROKER}")
            # Profiled once the new process exists: catching up is what takes the time.
            with self._spy("restart"):
                figures["restart_isr_full_s"] = self._stamp(
                    "restart",
                    start_s,
                    isr_full=lambda: self.states.all_full_after_registration(KILLED_BROKER),
                )["isr_full"]
        finally:
            sends, ended_s = producer.stop()
        summary = summarize_produce(sends, ended_s)
        figures.update(
            produce_count=float(summary.count),
            produce_p50_ms=summary.p50_ms,
            produce_p99_ms=summary.p99_ms,
            produce_max_ms=summary.max_ms,
            produce_failed=float(summary.errors + summary.unacknowledged),
            produce_longest_stall_s=summary.longest_stall_s,
        )
        if summary.error_names:
            self.measured.notes.append(f"produce errors: {summary.error_names}")

    def preferred(self) -> None:
        with self._spy("preferred"):
            start_s = time.monotonic()
            admin.request_preferred_election(self.zk, sorted(self.states.assignment))
            self.measured.figures["preferred_s"] = self._stamp(
                "preferred election", start_s, preferred=self.states.all_preferred
            )["preferred"]

    def controlled_shutdown(self) -> None:
        figures = self.measured.figures
        broker = self.cluster.broker(DRAINED_BROKER)
        led = self.states.led_by(DRAINED_BROKER)
        figures["shutdown_led"] = float(len(led))
        start_s = time.monotonic()
        self.cluster.send_signal(broker, signal.SIGTERM)
        seen = self._stamp(
            "controlled shutdown",
            start_s,
            no_leaders=lambda: self.states.none_led_by(led, DRAINED_BROKER),
            exited=lambda: not broker.alive(),
        )
        figures["shutdown_no_leaders_s"] = seen["no_leaders"]
        figures["shutdown_exit_s"] = seen["exited"]
        start_s = self._restart(broker.name)
        figures["shutdown_restart_isr_full_s"] = self._stamp(
            "restart after controlled shutdown",
            start_s,
            isr_full=lambda: self.states.all_full_after_registration(DRAINED_BROKER),
        )["isr_full"]

    def failover(self) -> None:
        active = self.active_controller()
        other = next(c for c in self.cluster.controllers() if c.id != active)

        def elected() -> bool:
            try:
                return self.active_controller() == other.id
            except NoNodeError:  # between the two controllers
                return False

        def loaded() -> bool:
            try:
                with urllib.request.urlopen(other.http_url + "/status", timeout=1) as response:
                    status = json.load(response)
            except OSError:
                return False
            return bool(status["active"]) and status["partitions"] == self.plan.partitions

        start_s = time.monotonic()
        self.cluster.kill(f"controller-{active}", signal.SIGKILL)
        seen = self._stamp("controller failover", start_s, elected=elected, loaded=loaded)
        figures = self.measured.figures
        figures["failover_elected_s"] = seen["elected"]
        if seen["elected"] is not None and seen["loaded"] is not None:
            figures["failover_loaded_s"] = max(0.0, seen["loaded"] - seen["elected"])
        else:
            figures["failover_loaded_s"] = None
