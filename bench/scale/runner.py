"""Every partition count in turn, each on a fresh cluster; ``results.json`` rewritten after
each so an interrupted run keeps what it measured."""

from __future__ import annotations

import json
import resource
import shutil
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from kazoo.client import KazooClient

from bench.compare.runner import machine
from bench.scale.phases import Measured, Phases, Plan
from bench.scale.stats import descriptor_budget
from pafka.local.cluster import LocalCluster

RESULTS = "results.json"
KEPT_LOG_BYTES = 2 * 1024 * 1024
PROFILES = "profiles"
BROKERS = 3
CONTROLLERS = 2
# LocalCluster's session timeout for every service (issue 15's leaderless bound adds 2 s).
SESSION_TIMEOUT_S = 6.0
# Quiet logs (a 10k-partition cluster at INFO writes a line per partition per change), and no
# automatic preferred election in the middle of a measured phase.
BROKER_ENV = {"PAFKA_BROKER_LOG_LEVEL": "WARNING"}
CONTROLLER_ENV = {
    "PAFKA_CONTROLLER_LOG_LEVEL": "WARNING",
    "PAFKA_CONTROLLER_PREFERRED_REBALANCE_INTERVAL_MS": "86400000",
}
# Descriptors per idle hosted replica assumed before one was measured (log, offset and time
# index: issue 15).
UNMEASURED_DESCRIPTORS_PER_REPLICA = 3.0


@dataclass(frozen=True)
class Options:
    partitions: list[int]
    out: Path
    rf1_partitions: int = 0
    partitions_per_topic: int = 100
    idle_s: float = 20.0
    phase_timeout_s: float = 180.0
    produce_rate_per_s: float = 200.0
    profile: bool = False
    start_timeout_s: float = 180.0
    work_root: Path | None = None


@dataclass(frozen=True)
class Run:
    partitions: int
    replication_factor: int
    figures: dict[str, float | None]
    notes: list[str]
    processes: dict[str, dict[str, float]]


def run(options: Options) -> Path:
    options.out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    notes: list[str] = []
    for partitions in options.partitions:
        print(f"scale: {partitions:,} partitions, RF 3", flush=True)
        runs.append(measure(options, partitions, 3))
        save(options, runs, notes)
    if options.rf1_partitions:
        measured = [r.figures.get("fds_per_replica") for r in runs]
        per_replica = next((v for v in reversed(measured) if v), UNMEASURED_DESCRIPTORS_PER_REPLICA)
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        budget = descriptor_budget(options.rf1_partitions, 1, BROKERS, per_replica, hard)
        reason = budget.reason(options.rf1_partitions, 1)
        notes.append(
            f"{reason} ({per_replica:.2f} per replica): " + ("run" if budget.fits else "skipped")
        )
        print(f"scale: {notes[-1]}", flush=True)
        if budget.fits:
            runs.append(measure(options, options.rf1_partitions, 1))
    return save(options, runs, notes)


def measure(options: Options, partitions: int, replication_factor: int) -> Run:
    work_dir = Path(tempfile.mkdtemp(prefix=f"pafka-scale-{partitions}-", dir=options.work_root))
    plan = Plan(
        partitions=partitions,
        replication_factor=replication_factor,
        partitions_per_topic=options.partitions_per_topic,
        idle_s=options.idle_s,
        phase_timeout_s=options.phase_timeout_s,
        produce_rate_per_s=options.produce_rate_per_s,
        profile=options.profile,
        profiles_dir=options.out / PROFILES,
        work_dir=work_dir,
    )
    cluster = LocalCluster(
        work_dir,
        brokers=BROKERS,
        controllers=CONTROLLERS,
        broker_env=BROKER_ENV,
        controller_env=CONTROLLER_ENV,
    )
    measured = Measured()
    # The machine is shared: say how busy it was.
    load = Path("/proc/loadavg").read_text().split()[:3]
    measured.notes.append(f"load average (1, 5, 15 min) before the cluster started: {load}")
    try:
        cluster.start(timeout_s=options.start_timeout_s)
        zk = KazooClient(hosts=str(cluster.zookeeper_connect))
        zk.start(timeout=30)
        try:
            phases = Phases(plan, cluster, zk)
            phases.measured = measured
            steps = [
                ("create", phases.create),
                ("metadata", phases.metadata),
                ("idle", phases.idle),
            ]
            if replication_factor > 1:
                out = options.out / f"produce-{partitions}.txt"
                steps += [
                    ("recovery", lambda: phases.recovery(out)),
                    ("preferred", phases.preferred),
                    ("controlled shutdown", phases.controlled_shutdown),
                ]
            else:
                measured.notes.append("RF 1: no broker kill, restart or election phases")
            steps.append(("controller failover", phases.failover))
            for name, step in steps:
                started_s = time.monotonic()
                print(f"scale: {partitions:,} {name}", flush=True)
                try:
                    step()
                except Exception as exc:  # a failed phase is a result, the next one runs
                    measured.notes.append(f"{name} failed: {exc!r}")
                    traceback.print_exc()
                    if name == "create":
                        break
                print(
                    f"scale: {partitions:,} {name} done in {time.monotonic() - started_s:.1f} s",
                    flush=True,
                )
        finally:
            zk.stop()
            zk.close()
    except Exception as exc:  # e.g. the cluster did not start: recorded
        measured.notes.append(f"cluster failed: {exc!r}")
        traceback.print_exc()
    finally:
        cluster.stop()
        _keep_logs(cluster, options.out / "logs" / f"{partitions}-rf{replication_factor}")
        shutil.rmtree(work_dir, ignore_errors=True)
    return Run(partitions, replication_factor, measured.figures, measured.notes, measured.processes)


def _keep_logs(cluster: LocalCluster, folder: Path) -> None:
    """The end of each process's log (a struggling broker can log per partition per retry)."""
    folder.mkdir(parents=True, exist_ok=True)
    for service in cluster.services.values():
        log = Path(service.log_path)
        if log.exists():
            with log.open("rb") as source:
                source.seek(max(0, log.stat().st_size - KEPT_LOG_BYTES))
                (folder / log.name).write_bytes(source.read())


def save(options: Options, runs: list[Run], notes: list[str]) -> Path:
    path = options.out / RESULTS
    body = {
        "machine": machine(),
        "options": {k: str(v) for k, v in asdict(options).items()},
        "session_timeout_s": SESSION_TIMEOUT_S,
        "notes": notes,
        "runs": [asdict(r) for r in runs],
    }
    path.write_text(json.dumps(body, indent=1))
    return path


def load(path: Path) -> tuple[dict[str, object], list[Run]]:
    raw = json.loads(path.read_text())
    return raw, [Run(**r) for r in raw["runs"]]
