"""kcat driver of the compatibility suite: ``kcat_driver.py OP 'JSON'`` runs Debian's kcat
(librdkafka) and translates its output (the contract is in tests/compat/drivers.py). kcat has no
admin, offset-fetch or describe-groups command; its balanced consumer (-G) commits on its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from typing import Any

KCAT = "kcat"
TIMEOUT_S = 60


def run(args: list[str], stdin: str | None = None) -> str:
    proc = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    if proc.returncode != 0:
        raise RuntimeError(f"kcat {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc.stdout


def record(line: dict[str, Any], member: str | None = None) -> dict[str, Any]:
    out = {
        "partition": line["partition"],
        "offset": line["offset"],
        "key": line["key"],
        "value": line["payload"],
    }
    if member is not None:
        out["member"] = member
    return out


def metadata(a: dict[str, Any]) -> dict[str, Any]:
    topics: dict[str, int] = {}
    brokers: set[int] = set()
    for topic in a["topics"]:
        meta = json.loads(run(["-b", a["bootstrap"], "-L", "-J", "-t", topic]))
        brokers |= {b["id"] for b in meta["brokers"]}
        topics |= {t["topic"]: len(t["partitions"]) for t in meta["topics"]}
    return {"brokers": sorted(brokers), "topics": topics}


def produce_records(a: dict[str, Any], records: list[dict[str, Any]], codec: str) -> None:
    by_partition: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        by_partition.setdefault(r["partition"], []).append(r)
    for partition, rs in by_partition.items():
        # Key and value split at a tab, records at a newline (the test records hold neither).
        lines = "".join(f"{r['key']}\t{r['value']}\n" for r in rs)
        run(
            [
                "-b",
                a["bootstrap"],
                "-P",
                "-t",
                a["topic"],
                "-p",
                str(partition),
                "-K",
                "\t",
                "-z",
                codec,
                "-X",
                "acks=all",
            ],
            stdin=lines,
        )


def produce(a: dict[str, Any]) -> dict[str, Any]:
    produce_records(a, a["records"], a.get("codec", "none"))
    return {"produced": len(a["records"])}


def consume(a: dict[str, Any]) -> dict[str, Any]:
    out = run(
        [
            "-b",
            a["bootstrap"],
            "-C",
            "-J",
            "-q",
            "-e",
            "-t",
            a["topic"],
            "-p",
            str(a["partition"]),
            "-o",
            str(a["offset"]),
            "-c",
            str(a["count"]),
        ]
    )
    return {"records": [record(json.loads(line)) for line in out.splitlines() if line.strip()]}


class Member:
    """One balanced consumer (kcat -G) whose JSON lines are read as they come."""

    def __init__(self, name: str, a: dict[str, Any], sink: list[list[dict[str, Any]]]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [
                KCAT,
                "-b",
                a["bootstrap"],
                "-G",
                a["group"],
                "-J",
                "-q",
                "-u",
                "-X",
                "auto.offset.reset=earliest",
                "-X",
                "auto.commit.interval.ms=200",
                a["topic"],
            ],
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
        )
        self.thread = threading.Thread(target=self._read, args=(sink,), daemon=True)
        self.thread.start()

    def _read(self, sink: list[list[dict[str, Any]]]) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                sink[0].append(record(json.loads(line), self.name))

    def leave(self) -> None:
        # kcat closes its consumer on SIGTERM: the last commit, then LeaveGroup.
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=TIMEOUT_S)
        self.thread.join(timeout=TIMEOUT_S)


def wait_for(predicate: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def group(a: dict[str, Any]) -> dict[str, Any]:
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    sink = [first]
    members = {name: Member(name, a, sink) for name in ("a", "b")}
    try:
        wait_for(lambda: len(first) >= a["first"], "the first records")
        members["b"].leave()
        sink[0] = second
        produce_records(a, a["second"], "none")
        wait_for(lambda: len(second) >= len(a["second"]), "the second records")
        members["a"].leave()
    finally:
        for m in members.values():
            if m.proc.poll() is None:
                m.proc.kill()
    return {"first": first, "second": second, "describe": None, "committed": None}


OPS = {"metadata": metadata, "produce": produce, "consume": consume, "group": group}


def main() -> None:
    op, raw = sys.argv[1:3]
    print(json.dumps(OPS[op](json.loads(raw))))


if __name__ == "__main__":
    main()
