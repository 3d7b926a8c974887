"""The scale benchmark's report: ``report.md`` and one PNG per figure against N, from
``results.json``. Every figure with a target from issue 15 shows met or not met beside each
measured value; a figure growing worse than linearly with N is marked and points at the
profiles (``--profile``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.compare.profiles import read as read_profile
from bench.compare.report import table
from bench.scale.figures import TARGET_PARTITIONS, Figure, figures
from bench.scale.runner import PROFILES, Run, load
from bench.scale.stats import superlinear

PLOTS = "plots"
MISSING = "n/a"


def cell(figure: Figure, run: Run, phase_timeout_s: float) -> str:
    if figure.key not in run.figures:
        return MISSING
    value = run.figures[figure.key]
    text = f"not within {phase_timeout_s:g} s" if value is None else f"{value:,.{figure.digits}f}"
    verdict = figure.verdict(value) if run.replication_factor == 3 else ""
    return f"{text} ({verdict})" if verdict else text


def render(raw: dict[str, object], runs: Sequence[Run], plots: dict[str, str]) -> str:
    session_timeout_s = float(str(raw["session_timeout_s"]))
    options = raw["options"]
    assert isinstance(options, dict)
    phase_timeout_s = float(options["phase_timeout_s"])
    machine = raw["machine"]
    assert isinstance(machine, dict)
    lines = [
        "# pafka at scale: a cluster at N partitions (issue 15)",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in machine.items()),
        "",
        f"Each N on a fresh cluster: 3 brokers, 2 controllers, ZooKeeper session timeout "
        f"{session_timeout_s:g} s; topics of {options['partitions_per_topic']} partitions, "
        f"min.insync.replicas 2; idle CPU over {options['idle_s']} s, 30 s after creation "
        "(the new partitions' first checkpoints done); acks=all producer at "
        f"{options['produce_rate_per_s']} records/s cycling over every partition; every phase "
        f"bounded by {phase_timeout_s:g} s. Targets are issue 15's, stated at "
        f"{TARGET_PARTITIONS:,} partitions (RF 3).",
        "",
    ]
    headers = [
        "figure",
        "unit",
        "target",
        *(f"{r.partitions:,} (RF {r.replication_factor})" for r in runs),
    ]
    rows = []
    for figure in figures(session_timeout_s):
        points = [
            (r.partitions, r.figures.get(figure.key)) for r in runs if r.replication_factor == 3
        ]
        label = figure.label + (" **(grows worse than linearly)**" if superlinear(points) else "")
        rows.append(
            [label, figure.unit, figure.target, *(cell(figure, r, phase_timeout_s) for r in runs)]
        )
    lines += [table(headers, rows), ""]
    notes = raw.get("notes") or []
    assert isinstance(notes, list)
    lines += [f"- {note}" for note in notes]
    for run in runs:
        lines += ["", f"## {run.partitions:,} partitions, RF {run.replication_factor}", ""]
        lines += [f"- {note}" for note in run.notes]
        if run.processes:
            process_rows = [
                [
                    name,
                    f"{p['idle_cpu_pct']:.1f}",
                    f"{p['rss_mib']:,.0f}",
                    f"{p['descriptors']:,.0f}",
                ]
                for name, p in sorted(run.processes.items())
            ]
            lines += ["", table(["process", "idle CPU %", "RSS MiB", "descriptors"], process_rows)]
    if plots:
        lines += ["", "## Against N", ""]
        lines += [f"![{label}]({path})" for label, path in plots.items()]
    return "\n".join(lines) + "\n"


def profile_section(folder: Path) -> str:
    files = sorted((folder / PROFILES).glob("*.txt"))
    if not files:
        return ""
    lines = ["", "## Profiles (py-spy, during the recovery phases)", ""]
    for path in files:
        profile = read_profile(path, top=5)
        hot = "; ".join(f"{h.frame} {h.share:.0%}" for h in profile.self_time)
        lines.append(f"- `{PROFILES}/{path.name}` ({profile.samples} samples): {hot}")
    return "\n".join(lines) + "\n"


def plot(runs: Sequence[Run], session_timeout_s: float, folder: Path) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (folder / PLOTS).mkdir(parents=True, exist_ok=True)
    made = {}
    for figure in figures(session_timeout_s):
        points = [
            (r.partitions, v)
            for r in runs
            if r.replication_factor == 3 and (v := r.figures.get(figure.key)) is not None
        ]
        if not points:
            continue
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot([n for n, _ in points], [v for _, v in points], marker="o")
        if figure.limit is not None:
            ax.axhline(figure.limit, color="red", linestyle="--", label=f"target {figure.target}")
            ax.legend(fontsize=7)
        ax.set_xlabel("partitions (RF 3)")
        ax.set_ylabel(figure.unit)
        ax.set_title(figure.label, fontsize=9)
        fig.tight_layout()
        relative = f"{PLOTS}/{figure.key}.png"
        fig.savefig(folder / relative, dpi=100)
        plt.close(fig)
        made[figure.label] = relative
    return made


def write(folder: Path) -> Path:
    raw, runs = load(folder / "results.json")
    session_timeout_s = float(str(raw["session_timeout_s"]))
    text = render(raw, runs, plot(runs, session_timeout_s, folder)) + profile_section(folder)
    path = folder / "report.md"
    path.write_text(text)
    return path
