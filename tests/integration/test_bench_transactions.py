"""``python -m bench.transactions --quick``: every mode measured on a real local cluster, and
the read_committed check of what was committed passed. Timings are never asserted: they mean
nothing at this size on a shared machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_quick_transactions_benchmark_measures_every_mode(tmp_path: Path) -> None:
    out = tmp_path / "results"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.transactions", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]

    body = json.loads((out / "results.json").read_text())
    modes = {run["mode"]: run for run in body["runs"]}
    assert set(modes) == {
        "idempotent",
        "transactions of 1",
        "transactions of 100",
        "transactions of 1,000",
    }
    for mode, run in modes.items():
        assert run["records"] > 0, mode
        if mode != "idempotent":
            assert run["transactions"] > 0 and run["commit_p50_ms"] > 0, mode
            assert run["records"] == run["transactions"] * int(mode.split()[-1].replace(",", ""))
    assert body["read_committed_records"] == body["acknowledged_records"]
    assert "| transactions of 1,000 |" in (out / "summary.md").read_text()
