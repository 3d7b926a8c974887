"""The comparison's report: ``report.md`` plus PNG plots, next to ``results.json``.

The Markdown names the machine, each system's durability as configured, every figure per
workload (medians over repetitions), the pafka/peer ratios taken within each repetition, and
each of issue 8's targets as met or not met; a target not met points at the profiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bench.compare import registry
from bench.compare.profiles import Profile
from bench.compare.profiles import read as read_profile
from bench.compare.results import RunResult, Summary, same_run_ratios, summarize
from bench.compare.runner import Outcome
from bench.compare.targets import Check, checks

PAFKA_SYSTEMS = ("pafka-kafka", "pafka-rest")
MISSING = "n/a"
TABLE_HEADERS = (
    "system",
    "produce rec/s",
    "produce MB/s",
    "consume rec/s",
    "consume MB/s",
    "server CPU s / M rec",
    "paced rec/s (asked / got)",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
)

OWN_HEADERS = ("system", "paced rec/s (asked / got)", "p50 ms", "p99 ms", "p99.9 ms")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub Markdown table; numbers right-aligned (every column but the first)."""
    align = ["---"] + ["---:"] * (len(headers) - 1)
    lines = [headers, align, *rows]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {row!r} has {len(row)} cells, not {len(headers)}")
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def number(value: float | None, digits: int = 0) -> str:
    if value is None:
        return MISSING
    return f"{value:,.{digits}f}"


def ms(value_us: float | None) -> str:
    return MISSING if value_us is None else f"{value_us / 1000:,.1f}"


def times(value: float | None) -> str:
    return MISSING if value is None else f"{value:.2f}x"


def summary_row(s: Summary) -> list[str]:
    paced = (
        MISSING
        if s.latency_rate_per_s is None
        else f"{number(s.latency_rate_per_s)} / {number(s.achieved_rate_per_s)}"
    )
    name = s.system if not s.failures else f"{s.system} (failed: {len(s.failures)})"
    return [
        name,
        number(s.produce_rate),
        number(s.produce_mb_s, 1),
        number(s.consume_rate),
        number(s.consume_mb_s, 1),
        number(s.cpu_s_per_million, 1),
        paced,
        ms(s.p50_us),
        ms(s.p99_us),
        ms(s.p999_us),
    ]


def own_row(s: Summary) -> list[str]:
    return [
        s.system,
        f"{number(s.own_rate_per_s)} / {number(s.own_achieved_rate_per_s)}",
        ms(s.own_p50_us),
        ms(s.own_p99_us),
        ms(s.own_p999_us),
    ]


def ratio_rows(
    results: Sequence[RunResult], workload: str, systems: Sequence[str]
) -> list[list[str]]:
    rows = []
    for ours in (s for s in PAFKA_SYSTEMS if s in systems):
        for peer in (s for s in systems if s not in PAFKA_SYSTEMS):
            r = same_run_ratios(results, workload, ours, peer, "throughput")
            rows.append([f"{ours} / {peer}", times(r.get("produce")), times(r.get("consume"))])
    return rows


def check_line(check: Check, profile: str | None) -> str:
    value = ms(check.value) + " ms" if "p99" in check.what else times(check.value)
    limit = ms(check.threshold) + " ms" if "p99" in check.what else times(check.threshold)
    if check.met is None:
        return (
            f"- {check.workload}: {check.what} {check.sense} {limit}: **not measured** "
            "(no successful run)"
        )
    if check.met:
        return f"- {check.workload}: {check.what} = {value} ({check.sense} {limit}): met"
    where = (
        f"see where the servers spent their time below (py-spy samples in `{profile}/`)"
        if profile
        else "run `pafka bench --profile` for py-spy flame graphs of the broker and gateway"
    )
    return (
        f"- {check.workload}: {check.what} = {value} ({check.sense} {limit}): **NOT met**; {where}"
    )


def render(
    machine: dict[str, str],
    outcome: Outcome,
    figures: dict[str, list[str]],
    note: str = "",
    profiles: dict[str, Profile] | None = None,
) -> str:
    results = outcome.results
    workloads = list(dict.fromkeys(r.workload for r in results))
    systems = list(dict.fromkeys(r.system for r in results))
    summaries = [summarize(results, s, w) for w in workloads for s in systems]
    reps = 1 + max((r.repetition for r in results), default=0)
    out = [
        "# pafka beside its peers",
        "",
        f"Run {machine.get('date', '?')} on {machine.get('cores', '?')} cores "
        f"({machine.get('cpu', '?')}), Linux {machine.get('kernel', '?')}, Python "
        f"{machine.get('python', '?')}; {reps} repetition(s), systems in rotating order; "
        "every client in Python, on loopback. Figures are medians over repetitions; latency is "
        "end to end (send time stamped in each record; each consumer's first second left out as "
        "warm-up), from the paced run at 50% of pafka-kafka's peak, the same rate for every "
        "system, its producers staying on a partition for 10 ms of records at a time; "
        "pafka-rest (one gateway process) also at 50% of its own peak.",
    ]
    if note:
        out += ["", note]
    out += ["", "## Durability as configured", ""]
    out += [f"- **{name}**: {line}" for name, line in outcome.durability.items()]
    out += [f"- **{name}**: not run: {why}" for name, why in outcome.unavailable.items()]
    for workload in workloads:
        mine = [s for s in summaries if s.workload == workload]
        out += ["", f"## {workload}", "", table(TABLE_HEADERS, [summary_row(s) for s in mine])]
        ratios = ratio_rows(results, workload, systems)
        if ratios:
            out += ["", "Same-run ratios (median over repetitions):", ""]
            out += [table(("pafka / peer", "produce", "consume"), ratios)]
        own = [own_row(s) for s in mine if s.own_rate_per_s is not None]
        if own:
            out += ["", "Paced at 50% of the system's own peak (its latency at a load it carries):"]
            out += ["", table(OWN_HEADERS, own)]
        for s in mine:
            out += [f"\n{s.system} failed: {f}" for f in s.failures]
        out += [f"\n![{workload}]({path})" for path in figures.get(workload, [])]
    found = checks(results, summaries, registry.REFERENCE)
    if found:
        out += ["", "## Targets (issues 8 and 22)", ""]
        out += [check_line(c, outcome.profiles.get(c.workload)) for c in found]
    if profiles:
        out += ["", "## Where pafka's servers spent their time (py-spy, throughput runs)", ""]
        out += profile_lines(profiles)
    return "\n".join(out) + "\n"


def profile_lines(profiles: dict[str, Profile]) -> list[str]:
    """Per profiled process: its top functions by own time and by time including callees."""
    lines: list[str] = []
    for name, profile in profiles.items():
        own = ", ".join(f"`{h.frame}` {h.share:.0%}" for h in profile.self_time[:5])
        total = ", ".join(f"`{h.frame}` {h.share:.0%}" for h in profile.inclusive[:5])
        lines.append(f"- `{name}` ({profile.samples} samples): own time: {own}")
        lines.append(f"  - including callees: {total}")
    return lines


def read_profiles(folder: Path, outcome: Outcome) -> dict[str, Profile]:
    found: dict[str, Profile] = {}
    for workload, sub in outcome.profiles.items():
        for path in sorted((folder / sub).glob(f"{workload}-*.txt")):
            profile = read_profile(path)
            if profile.samples:
                found[f"{sub}/{path.name}"] = profile
    return found


def plots(outcome: Outcome, folder: Path) -> dict[str, list[str]]:
    """Throughput bars and latency CDFs per workload; returns file names per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = outcome.results
    made: dict[str, list[str]] = {}
    for workload in dict.fromkeys(r.workload for r in results):
        systems = list(dict.fromkeys(r.system for r in results if r.workload == workload))
        summaries = [summarize(results, s, workload) for s in systems]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        width = 0.38
        xs = range(len(systems))
        ax.bar(
            [x - width / 2 for x in xs],
            [s.produce_rate or 0 for s in summaries],
            width,
            label="produce",
        )
        ax.bar(
            [x + width / 2 for x in xs],
            [s.consume_rate or 0 for s in summaries],
            width,
            label="consume",
        )
        ax.set_xticks(list(xs), systems)
        ax.set_ylabel("records/s")
        ax.set_title(f"{workload}: throughput")
        ax.legend()
        fig.tight_layout()
        bars = f"{workload}-throughput.png"
        fig.savefig(folder / bars, dpi=110)
        plt.close(fig)
        made[workload] = [bars]

        fig, ax = plt.subplots(figsize=(7, 3.5))
        drawn = False
        for system in systems:
            paced = [
                r
                for r in results
                if r.workload == workload
                and r.system == system
                and r.kind == "latency"
                and r.latency
            ]
            if paced and paced[0].latency is not None:
                cdf = paced[0].latency.cdf
                ax.plot([max(v, 1) / 1000 for _, v in cdf], [q for q, _ in cdf], label=system)
                drawn = True
        if drawn:
            ax.set_xscale("log")
            ax.set_xlabel("end-to-end latency (ms, log)")
            ax.set_ylabel("fraction of records")
            ax.set_title(f"{workload}: latency at the paced rate (repetition 0)")
            ax.legend()
            fig.tight_layout()
            cdf_name = f"{workload}-latency-cdf.png"
            fig.savefig(folder / cdf_name, dpi=110)
            made[workload].append(cdf_name)
        plt.close(fig)
    return made


def write(machine: dict[str, str], outcome: Outcome, folder: Path, note: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    figures = plots(outcome, folder)
    path = folder / "report.md"
    path.write_text(render(machine, outcome, figures, note, read_profiles(folder, outcome)))
    return path
