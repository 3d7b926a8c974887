"""``make up`` from a clean data directory, many times in a row: a new user's first command must
never fail (issue 24: the REST step once failed on a topic created a moment before). Not run in
CI: each run takes 30-60 s.

    PYTHONPATH=$PWD nice python -m bench.make_up_loop --runs 50 --home /tmp/pafka-up-loop \\
        -- VENV=/work/main/.venv -o /work/main/.venv/.installed

(everything after ``--`` goes to make: here an existing environment, not reinstalled).

Each run removes the data directory (``PAFKA_HOME``), runs ``make up`` with it, keeps the output
as ``{home}-logs/run-NNN.log`` (the process logs of a failed run beside it), and stops the
cluster (``make down``) whatever happened. ``make up`` takes the default ports (ZooKeeper on
2181, brokers from 9092, ...): run it where no other local cluster is running, or give
``--netns NAME`` (root) to run every ``make`` in a network namespace of its own, whose loopback
no other process on the machine listens on. A failed run whose services could not bind their
port is reported as such (another process took it: not a failure of ``make up``'s own steps).
The last line printed is the count, ``PASSED n/N``; the exit status is 0 only when every run
passed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 300
PORT_TAKEN = b"address already in use"


def make_netns(name: str) -> bool:
    """A network namespace with only a loopback, up; whether it was made here."""
    existing = subprocess.run(["ip", "netns", "list"], capture_output=True, check=True).stdout
    made = name.encode() not in existing.split()
    if made:
        subprocess.run(["ip", "netns", "add", name], check=True)
    subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
    return made


def port_taken(logs: Path, n: int) -> bool:
    return any(PORT_TAKEN in f.read_bytes() for f in logs.glob(f"run-{n:03d}-*.log"))


def run_once(n: int, home: Path, logs: Path, make_args: list[str], prefix: list[str]) -> bool:
    shutil.rmtree(home, ignore_errors=True)
    env_arg = f"PAFKA_HOME={home}"
    log_path = logs / f"run-{n:03d}.log"
    started = time.monotonic()
    try:
        with log_path.open("wb") as out:
            try:
                done = subprocess.run(
                    [*prefix, "make", "-C", str(REPO), env_arg, *make_args, "up"],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=RUN_TIMEOUT_S,
                    check=False,
                )
                passed = done.returncode == 0
            except subprocess.TimeoutExpired:
                out.write(f"\nmake up did not finish within {RUN_TIMEOUT_S}s\n".encode())
                passed = False
        if not passed:
            # The services' own logs say why (the gateway's answer is already in the log).
            for service_log in home.glob("*.log"):
                shutil.copy(service_log, logs / f"run-{n:03d}-{service_log.name}")
    finally:
        subprocess.run(
            [*prefix, "make", "-C", str(REPO), env_arg, *make_args, "down"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
    took_s = time.monotonic() - started
    outcome = "passed" if passed else "FAILED"
    if not passed and port_taken(logs, n):
        outcome += " (a service's port was taken by another process)"
    print(f"run {n}: {outcome} in {took_s:.0f}s ({log_path})", flush=True)
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--home", type=Path, required=True, help="PAFKA_HOME, wiped per run")
    parser.add_argument("--netns", help="run make in this network namespace (made if missing)")
    parser.add_argument("make_args", nargs="*", help="after --: passed to make")
    args = parser.parse_args(argv)
    home: Path = args.home.resolve()
    logs = home.with_name(home.name + "-logs")
    logs.mkdir(parents=True, exist_ok=True)
    prefix: list[str] = []
    made = False
    if args.netns:
        made = make_netns(args.netns)
        prefix = ["ip", "netns", "exec", args.netns]
    try:
        runs = range(1, args.runs + 1)
        passed = sum(run_once(n, home, logs, args.make_args, prefix) for n in runs)
    finally:
        if made and subprocess.run(["ip", "netns", "delete", args.netns]).returncode:
            print(f"could not delete network namespace {args.netns}", file=sys.stderr)
    print(f"PASSED {passed}/{args.runs}", flush=True)
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
