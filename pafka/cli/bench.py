"""``pafka bench``: pafka beside Redis Streams and NATS JetStream, same machine, same run.

The harness lives in ``bench.compare`` (installed with the package, its dependencies in the
``bench`` extra); this module only parses the command line and writes the report.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pafka.cli import bench_extra, bench_scale
from pafka.errors import ConfigError

SYSTEMS = ("pafka-kafka", "pafka-rest", "redis-streams", "nats-jetstream")
# A smoke run's paced latency phase: long enough for a few hundred records.
SMOKE_LATENCY_S = 0.5
# Records a run with a duration may send at most, unless --count says otherwise.
DURATION_CAP_RECORDS = 100_000_000


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="compare pafka with Redis Streams and NATS JetStream (OpenMessaging-style)",
        description="Starts each system on loopback, runs the workloads (throughput, then a "
        "paced latency run at 50%% of pafka's peak; pafka-rest also at 50%% of its own) and "
        "writes report.md, PNG plots and results.json to the results folder.",
    )
    parser.add_argument(
        "--systems",
        default=",".join(SYSTEMS),
        help=f"comma-separated, from {', '.join(SYSTEMS)} (default: all)",
    )
    parser.add_argument(
        "--workloads",
        default="default",
        help="comma-separated workload names (e.g. 1KiB-6p-2x2-acksall-rf3) or sets: "
        "default (100 B, 1 and 6 partitions, acks 1, RF 1), smoke, full (default: default)",
    )
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--count", type=int, default=None, help="records per throughput run")
    parser.add_argument(
        "--duration-s",
        type=float,
        default=None,
        help="stop each throughput run's producers after this long (consumers read on until "
        "they have every record sent); --count then only caps the run",
    )
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="length of each paced run"
    )
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/<UTC time>")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks, not figures")
    parser.add_argument("--profile", action="store_true", help="py-spy flame graphs of pafka")
    parser.add_argument("--note", default="", help="a line for the report (e.g. machine load)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument(
        "--rebuild",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="only write the report again from FOLDER/results.json (and its profiles)",
    )
    parser.set_defaults(handler=bench)
    # Other workloads than the comparison: ``pafka bench scale ...``.
    workloads = parser.add_subparsers(dest="bench_workload", required=False, metavar="WORKLOAD")
    bench_scale.register(workloads)


def bench(args: argparse.Namespace) -> int:
    try:
        from bench.compare import registry, report, runner, workloads
        from bench.compare.measure import Limits
    except ImportError as exc:
        raise bench_extra.missing(exc) from exc
    if args.rebuild is not None:
        if not (args.rebuild / "results.json").exists():
            raise ConfigError(f"no results.json in {args.rebuild}")
        machine, outcome = runner.load(args.rebuild / "results.json")
        print(f"report: {report.write(machine, outcome, args.rebuild, args.note)}")
        return 0
    if args.repetitions < 1:
        raise ConfigError("--repetitions must be at least 1")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    names = [w.strip() for w in args.workloads.split(",") if w.strip()]
    if args.smoke and args.workloads == "default":
        names = ["smoke"]
    try:
        for system in systems:
            registry.lookup(system)
        chosen = workloads.select(
            names, workloads.SMOKE_COUNT if args.smoke and args.count is None else args.count
        )
    except (registry.UnknownSystemError, workloads.WorkloadError) as exc:
        raise ConfigError(str(exc)) from exc
    if args.duration_s is not None:
        if args.duration_s <= 0:
            raise ConfigError("--duration-s must be positive")
        cap = args.count or DURATION_CAP_RECORDS
        chosen = [replace(w, duration_s=args.duration_s, message_count=cap) for w in chosen]
    out = args.out or Path("bench/results") / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    options = runner.Options(
        systems=systems,
        workloads=chosen,
        out=out,
        repetitions=args.repetitions,
        latency_seconds=SMOKE_LATENCY_S if args.smoke else args.latency_seconds,
        profile=args.profile,
        limits=Limits(show_progress=not args.no_progress),
    )
    outcome = runner.run(options)
    machine, _ = runner.load(out / "results.json")
    path = report.write(machine, outcome, out, args.note)
    print(path.read_text())
    print(f"report: {path}")
    failed = outcome.unavailable or [r for r in outcome.results if not r.ok]
    return 1 if failed else 0
