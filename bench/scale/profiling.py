"""py-spy on the cluster's processes during a phase: collapsed stacks (``--format raw``,
flame-graph input) per process, summarized by :mod:`bench.compare.profiles` in the report."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

SAMPLES_PER_S = 100
STOP_WAIT_S = 30


def py_spy() -> str:
    return shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


@contextlib.contextmanager
def spying(enabled: bool, pids: Mapping[str, int], folder: Path, prefix: str) -> Iterator[None]:
    """Sample each named process while the block runs; ``{folder}/{prefix}-{name}.txt``."""
    if not enabled:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    spies = [
        subprocess.Popen(
            [
                py_spy(),
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(SAMPLES_PER_S),
                "--format",
                "raw",
                "--nonblocking",
                "--output",
                str(folder / f"{prefix}-{name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, pid in pids.items()
    ]
    try:
        yield
    finally:
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its output when interrupted
        for spy in spies:
            try:
                spy.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                spy.kill()
                spy.wait()
