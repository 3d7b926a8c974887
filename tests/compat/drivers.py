"""Running the clients' driver programs, and the records they are given.

Every driver (a Go program per Go client, a Node script for kafkajs, a Python script per Python
client) is started as ``DRIVER OP 'JSON'`` and prints one JSON object on its last stdout line.
The JSON always carries ``bootstrap`` ("host:port,...") and may carry ``security`` (``{"ssl":
{"ca", "cert"?, "key"?}, "sasl": {"mechanism", "username", "password"},
"reauthenticationThreshold"?}``, PEM paths; the
kafkajs driver takes it); the operations are:

- ``metadata`` {topics?} -> {"brokers": [ids], "topics": {name: partition count}}
- ``create_topic`` {topic, partitions, replication_factor} -> {...}
- ``produce`` {topic, codec, records: [{partition, key, value}]} -> {...}
- ``consume`` {topic, partition, offset, count} -> {"records": [{partition, offset, key, value}]}
- ``group`` {topic, group, first, second: [records]}: members "a" and "b" join ``group``
  together and read until ``first`` records are read; the group is described; "b" leaves; the
  driver produces ``second`` and "a" alone must read them all; both commit as they go
  -> {"first": [records with "member"], "second": [...], "describe": {...} | null,
  "committed": {partition: offset} | null}
- ``commit`` {group, topic, offsets: {partition: offset}} -> {...}
- ``fetch_offsets`` {group, topic, partitions} -> {"offsets": {partition: offset}}

A driver exits non-zero with the client's error on stderr when the client fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

COMPAT_DIR = Path(__file__).resolve().parent
# Built and installed things live beside the Python environment (never in the repository).
BUILD_DIR = Path(sys.prefix) / "compat"
PYKAFKA_PYTHON = BUILD_DIR / "pykafka" / "bin" / "python"
# Debian's Go packages, built in GOPATH mode: no module proxy is reachable.
GOPATH = "/usr/share/gocode"


class DriverError(AssertionError):
    """A driver exited with an error (the client failed)."""


@dataclass(frozen=True)
class Driver:
    name: str
    argv: tuple[str, ...]

    def run(self, op: str, timeout_s: float = 60.0, **args: Any) -> dict[str, Any]:
        try:
            proc = subprocess.run(
                [*self.argv, op, json.dumps(args)],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                cwd=COMPAT_DIR,
            )
        except subprocess.TimeoutExpired as exc:
            raise DriverError(
                f"{self.name} {op} did not finish in {timeout_s} s\n{_tail(exc.stderr)}"
            ) from None
        if proc.returncode != 0:
            raise DriverError(f"{self.name} {op} exited {proc.returncode}\n{_tail(proc.stderr)}")
        lines = proc.stdout.strip().splitlines()
        if not lines:
            raise DriverError(f"{self.name} {op} printed nothing\n{_tail(proc.stderr)}")
        result: dict[str, Any] = json.loads(lines[-1])
        return result


def _tail(text: str | bytes | None, lines: int = 40) -> str:
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def python_driver(
    name: str, script: str, *args: str, python: Path | str = sys.executable
) -> Driver:
    return Driver(name, (str(python), str(COMPAT_DIR / "python" / script), *args))


def node_driver() -> Driver:
    if not (COMPAT_DIR / "kafkajs" / "node_modules" / "kafkajs").is_dir():
        raise RuntimeError("kafkajs is missing: run `make deps` (npm ci in tests/compat/kafkajs)")
    return Driver("kafkajs", ("node", str(COMPAT_DIR / "kafkajs" / "driver.js")))


def go_driver(name: str, *args: str, label: str | None = None) -> Driver:
    """The Go driver under ``go/<name>``, built once and rebuilt when its sources change."""
    source = COMPAT_DIR / "go" / name
    digest = hashlib.sha256()
    for path in sorted(source.glob("*.go")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    binary = BUILD_DIR / "go" / f"{name}-{digest.hexdigest()[:16]}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        build_env = {
            **os.environ,
            "GOPATH": GOPATH,
            "GO111MODULE": "off",
            "GOFLAGS": "",
            "GOCACHE": str(BUILD_DIR / "go-cache"),
        }
        tmp = binary.with_suffix(".tmp")
        proc = subprocess.run(
            ["go", "build", "-o", str(tmp), "."],
            cwd=source,
            env=build_env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"building the {name} driver failed:\n{proc.stderr}")
        tmp.rename(binary)
    return Driver(label or name, (str(binary), *args))


def make_records(
    partitions: int, per_partition: int, seed: int, tag: str = ""
) -> list[dict[str, Any]]:
    """Keyed records for every partition: text with non-ASCII characters, sizes from a few
    bytes to a few KiB (compressible), so codecs and batch boundaries are exercised."""
    rng = random.Random(seed)
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            size = rng.choice((1, 10, 100, 3000))
            value = f"{tag}v{p}.{i}-é€" + "".join(rng.choice("abcxyz") for _ in range(size))
            out.append({"partition": p, "key": f"{tag}k{p}.{i}-ü", "value": value})
    return out


def key_values(records: list[dict[str, Any]]) -> list[tuple[int, str | None, str | None]]:
    """(partition, key, value) in log order per partition, for comparing exactly."""
    ordered = sorted(
        ((r["partition"], i, r) for i, r in enumerate(records)),
        key=lambda t: (t[0], t[2].get("offset", t[1])),
    )
    return [(p, r["key"], r["value"]) for p, _, r in ordered]
