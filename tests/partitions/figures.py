"""One scenario's figures, their targets, and the table the README carries."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

RECOVERY_TARGET_S = 10.0
NO_ACK_SLACK_S = 10.0

# Each scenario's figures in this session, for the table printed at its end.
FIGURES: list[dict[str, Any]] = []


@dataclass
class Figures:
    scenario: str
    cut_s: float
    zk_session_timeout_s: float
    # Seconds from the heal until every partition had its full ISR and took an acks=all write.
    recovery_s: float | None = None
    # The longest stretch of the run in which some partition had no acknowledged write, and
    # the longest in which none of the topic's partitions had one.
    longest_no_ack_s: float = 0.0
    longest_no_ack_topic_s: float = 0.0
    # The longest stretch during which two controllers both said active.
    dual_active_s: float = 0.0
    fatal_errors: list[str] = field(default_factory=list)
    sent: int = 0
    acked: int = 0
    failed: int = 0
    timed_out: int = 0
    client_errors: int = 0
    consumed: int = 0  # records the client's consumer read during the run
    # "ok", or what the produce-consume-validate check found.
    validation: str = "not run"
    figures_path: str = ""
    notes: list[str] = field(default_factory=list)

    def missed_targets(self) -> list[str]:
        missed = []
        if self.recovery_s is None:
            missed.append("never recovered full ISR and acks=all writes after the heal")
        elif self.recovery_s > RECOVERY_TARGET_S:
            missed.append(f"recovery {self.recovery_s:.1f} s > {RECOVERY_TARGET_S:.0f} s")
        if self.longest_no_ack_s > self.cut_s + NO_ACK_SLACK_S:
            missed.append(
                f"no acknowledged write for {self.longest_no_ack_s:.1f} s"
                f" > cut {self.cut_s:.0f} s + {NO_ACK_SLACK_S:.0f} s"
            )
        if self.dual_active_s > self.zk_session_timeout_s:
            missed.append(
                f"two active controllers for {self.dual_active_s:.1f} s"
                f" > session timeout {self.zk_session_timeout_s:.0f} s"
            )
        if self.fatal_errors:
            missed.append(f"producer fatal errors: {self.fatal_errors}")
        return missed

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "missed_targets": self.missed_targets()}


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of scenarios' figures (``Figures.to_json`` rows)."""
    lines = [
        "| scenario | cut s | recovery s (≤10) | longest no-ack s, a partition (≤cut+10) "
        "| longest no-ack s, whole topic | two active controllers s (≤6) | fatal | acked "
        "| validation |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        fatal = len(row["fatal_errors"])
        lines.append(
            f"| {row['scenario']} | {row['cut_s']:.0f} | {_seconds(row['recovery_s'])} "
            f"| {row['longest_no_ack_s']:.1f} | {row['longest_no_ack_topic_s']:.1f} "
            f"| {row['dual_active_s']:.1f} | {fatal} "
            f"| {row['acked']} | {row['validation']} |"
        )
    return "\n".join(lines)
