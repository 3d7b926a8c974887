"""``pafka bench --smoke``: every driver against its real server, tiny counts, report written.

Checks that each system produced and consumed every record of every run (throughput and paced)
and that the Markdown and plots exist. Timings are never asserted: they mean nothing at these
counts on a shared machine.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.compare import registry, runner, workloads

SYSTEMS = list(registry.MODULES)


def test_every_driver_runs_and_the_report_is_written(tmp_path: Path) -> None:
    out = tmp_path / "results"
    command = [sys.executable, "-m", "pafka.cli.main", "bench", "--smoke", "--no-progress"]
    completed = subprocess.run(
        [*command, "--systems", ",".join(SYSTEMS), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-4000:]

    machine, outcome = runner.load(out / "results.json")
    assert outcome.unavailable == {}
    assert int(machine["cores"]) >= 1
    smoke = [w.name for w in workloads.smoke_set()]
    for system in SYSTEMS:
        for workload in smoke:
            runs = [r for r in outcome.results if r.system == system and r.workload == workload]
            # Systems of runner.OWN_PACED (pafka-rest) are also paced at their own peak.
            kinds = ["latency", "throughput"]
            if system in runner.OWN_PACED:
                kinds = ["latency", "own-latency", "throughput"]
            assert sorted(r.kind for r in runs) == kinds, (system, workload)
            for run in runs:
                assert run.error == "", run.error
                assert run.expected > 0
                assert run.produced == run.consumed == run.expected, run
                # Records sent in a consumer's first second are its warm-up
                # (client_loop.WARMUP_S): left out of the latencies unless the run is shorter.
                assert run.latency is not None and 0 < run.latency.count <= run.consumed
        assert outcome.durability[system]

    text = (out / "report.md").read_text()
    for system in SYSTEMS:
        assert f"| {system} |" in text
        assert f"- **{system}**: " in text
    for workload in smoke:
        for plot in (f"{workload}-throughput.png", f"{workload}-latency-cdf.png"):
            assert (out / plot).read_bytes().startswith(b"\x89PNG"), plot
            assert f"]({plot})" in text
    assert not (out / "work").exists()
