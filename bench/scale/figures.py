"""Every figure the scale benchmark reports, its unit, and issue 15's target for it ("Must
show", stated at 10,000 partitions, RF 3, 3 brokers, on the 2-core machine)."""

from __future__ import annotations

from dataclasses import dataclass

# Issue 15's thresholds; the leaderless window's is relative to the brokers' session timeout.
LEADERLESS_MARGIN_S = 2.0
ISR_FULL_S = 30.0
PREFERRED_S = 10.0
IDLE_BROKER_CPU_PERCENT = 2.0
CONTROLLED_SHUTDOWN_S = 3.0
FAILOVER_LOADED_S = 2.0
TARGET_PARTITIONS = 10_000


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    unit: str
    digits: int = 1
    # The upper bound issue 15 sets (None: reported, no target), and what it is made of.
    limit: float | None = None
    limit_note: str = ""

    @property
    def target(self) -> str:
        if self.limit is None:
            return ""
        return f"≤ {self.limit:g}{' ' + self.limit_note if self.limit_note else ''}"

    def verdict(self, value: float | None) -> str:
        """``met``, ``not met`` (also when the event never came within its deadline: ``value``
        is None) or ``""`` for a figure without a target."""
        if self.limit is None:
            return ""
        return "met" if value is not None and value <= self.limit else "not met"


def figures(session_timeout_s: float) -> list[Figure]:
    leaderless = session_timeout_s + LEADERLESS_MARGIN_S
    return [
        Figure("create_s", "topic creation: every partition led, ISR full", "s"),
        Figure("create_rate_pps", "topic creation rate", "partitions/s", 0),
        Figure("metadata_p50_ms", "Metadata (all topics) p50", "ms"),
        Figure("metadata_max_ms", "Metadata (all topics) max", "ms"),
        Figure(
            "idle_cpu_broker_pct",
            "idle CPU, busiest broker",
            "% of a core",
            limit=IDLE_BROKER_CPU_PERCENT,
        ),
        Figure("idle_cpu_controller_pct", "idle CPU, active controller", "% of a core"),
        Figure("rss_broker_mib", "RSS, largest broker", "MiB", 0),
        Figure("rss_controller_mib", "RSS, active controller", "MiB", 0),
        Figure("zk_rss_mib", "RSS, ZooKeeper", "MiB", 0),
        Figure("zk_znodes", "ZooKeeper znodes", "znodes", 0),
        Figure("fds_per_replica", "descriptors per hosted replica (idle broker)", "fds", 2),
        Figure("kill_led", "kill -9: partitions the broker led", "partitions", 0),
        Figure("kill_znode_gone_s", "kill -9: broker's /brokers/ids znode gone", "s"),
        Figure(
            "kill_new_leaders_s",
            "kill -9: every partition it led has a new leader",
            "s",
            limit=leaderless,
            limit_note=f"(session timeout + {LEADERLESS_MARGIN_S:g})",
        ),
        Figure(
            "restart_isr_full_s",
            "restart: every ISR full again",
            "s",
            limit=ISR_FULL_S,
        ),
        Figure("produce_count", "acks=all during recovery: records sent", "records", 0),
        Figure("produce_p50_ms", "acks=all during recovery: p50", "ms"),
        Figure("produce_p99_ms", "acks=all during recovery: p99", "ms"),
        Figure("produce_max_ms", "acks=all during recovery: max", "ms"),
        Figure(
            "produce_failed",
            "acks=all during recovery: refused, or unanswered a phase after sending stopped",
            "records",
            0,
            limit=0,
            limit_note="(no request times out)",
        ),
        Figure("produce_longest_stall_s", "acks=all: longest stall of a partition", "s"),
        Figure(
            "preferred_s",
            "preferred election of all partitions",
            "s",
            limit=PREFERRED_S,
        ),
        Figure("shutdown_led", "controlled shutdown: partitions the broker led", "partitions", 0),
        Figure(
            "shutdown_no_leaders_s",
            "controlled shutdown: broker leads nothing",
            "s",
            2,
            limit=CONTROLLED_SHUTDOWN_S,
        ),
        Figure("shutdown_exit_s", "controlled shutdown: process exited", "s", 2),
        Figure("shutdown_restart_isr_full_s", "after controlled shutdown: every ISR full", "s"),
        Figure("failover_elected_s", "controller kill -9: new /controller", "s", 2),
        Figure(
            "failover_loaded_s",
            "controller failover: elected to state loaded",
            "s",
            2,
            limit=FAILOVER_LOADED_S,
        ),
    ]
