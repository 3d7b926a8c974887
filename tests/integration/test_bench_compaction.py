"""``python -m bench.compaction --quick``: both runs on real local clusters, results written.

Checks that the log was filled and cleaned (fewer bytes after than before, a clean reported by
the broker's log and its metrics), that the producer beside the cleaner was measured in both
windows, and that the small dedupe buffer's cleans stopped where their map filled. Timings are
never asserted: they mean nothing at this size on a shared machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_quick_compaction_benchmark_fills_cleans_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "results"
    completed = subprocess.run(
        [sys.executable, "-m", "bench.compaction", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]

    body = json.loads((out / "results.json").read_text())
    assert int(body["machine"]["cores"]) >= 1
    default, small = body["runs"]
    assert default["dedupe_buffer_bytes"] > small["dedupe_buffer_bytes"]
    for run in (default, small):
        assert run["records"] > run["keys"] > 0
        assert run["cleans"], run
        assert run["bytes_cleaned"] > 0 and run["worker_peak_memory_bytes"] > 0
    # The default buffer holds every key: one clean leaves about one record per key (the
    # active segment, never cleaned, aside).
    (clean,) = default["cleans"]
    assert clean["records_kept"] <= default["keys"] < clean["records_read"]
    assert default["log_bytes_after"] < default["log_bytes"] / 2
    assert default["produce_idle_per_s"] > 0 and default["produce_cleaning_per_s"] > 0
    # The small buffer holds fewer keys than the log: its first clean stops early.
    assert small["cleans"][0]["end_offset"] < clean["end_offset"]

    text = (out / "summary.md").read_text()
    assert "| 128.0 MiB |" in text and "| 1.0 MiB |" in text
    assert f"| {default['produce_ratio']:.2f} | " in text
