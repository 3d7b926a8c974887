"""``pafka bench scale``: one cluster at each of several partition counts (issue 15).

The harness lives in ``bench.scale`` (like ``bench.compare``, imported only when run); this
module parses the command line. ``python -m bench.scale`` is the same command.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from pafka.cli import bench_extra
from pafka.errors import ConfigError


def register(bench_sub: Any) -> None:
    parser = bench_sub.add_parser(
        "scale",
        help="a cluster at 1k/5k/10k partitions: creation, recovery, elections, idle cost",
        description="For each partition count, a fresh local cluster (RF 3, 3 brokers, "
        "2 controllers) is measured: topic creation, Metadata, idle CPU and memory, kill -9 "
        "and restart of a broker under acks=all writes, preferred election, controlled "
        "shutdown, controller failover. Writes report.md, plots and results.json.",
    )
    parser.add_argument(
        "--partitions", default="1000,5000,10000", help="comma-separated partition counts"
    )
    parser.add_argument(
        "--rf1-partitions",
        type=int,
        default=0,
        help="also run this many partitions at RF 1 if the brokers' descriptor limit allows",
    )
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--idle-s", type=float, default=20.0, help="idle CPU sampling window")
    parser.add_argument(
        "--phase-timeout-s", type=float, default=180.0, help="deadline of every measured phase"
    )
    parser.add_argument(
        "--produce-rate", type=float, default=200.0, help="acks=all records/s during recovery"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy during the recovery")
    parser.add_argument("--out", type=Path, default=None, help="default bench/results/scale-<UTC>")
    parser.add_argument(
        "--rebuild", type=Path, default=None, metavar="FOLDER", help="rewrite FOLDER's report"
    )
    parser.set_defaults(handler=scale)


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise ConfigError(f"--partitions takes comma-separated integers, not {text!r}") from exc
    if not counts or any(n < 1 for n in counts):
        raise ConfigError(f"--partitions needs positive counts, got {text!r}")
    return counts


def scale(args: argparse.Namespace) -> int:
    try:
        from bench.scale import report, runner
    except ImportError as exc:
        raise bench_extra.missing(exc) from exc
    if args.rebuild is not None:
        if not (args.rebuild / runner.RESULTS).exists():
            raise ConfigError(f"no {runner.RESULTS} in {args.rebuild}")
        print(f"report: {report.write(args.rebuild)}")
        return 0
    for name in ("partitions_per_topic", "idle_s", "phase_timeout_s", "produce_rate"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be positive")
    out = args.out or Path("bench/results") / time.strftime("scale-%Y%m%dT%H%M%SZ", time.gmtime())
    runner.run(
        runner.Options(
            partitions=_counts(args.partitions),
            out=out,
            rf1_partitions=max(0, args.rf1_partitions),
            partitions_per_topic=args.partitions_per_topic,
            idle_s=args.idle_s,
            phase_timeout_s=args.phase_timeout_s,
            produce_rate_per_s=args.produce_rate,
            profile=args.profile,
        )
    )
    path = report.write(out)
    print(path.read_text())
    print(f"report: {path}")
    return 0
