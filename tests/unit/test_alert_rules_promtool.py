"""The chart's alert rules under Debian's `promtool test rules`.

The rules are rendered from the chart by Helm's own engine (what ships is what is tested) into
a rule file beside the cases of `promtool/alert_rules.test.yaml`, which promtool evaluates on
its synthetic series. Beside promtool's verdict, the cases themselves are checked to cover
every alert the chart ships: silent on a healthy cluster, pending while its `for:` runs, then
firing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart_monitoring import alerts, write_rule_file

CASES = Path(__file__).parent / "promtool" / "alert_rules.test.yaml"
NAMESPACE = "data"  # the namespace every case's series carry
HEALTHY = "healthy cluster"

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="needs Debian's promtool (package prometheus; .ci/run installs it)",
)


def cases() -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load(CASES.read_text())["tests"]
    return loaded


def minutes(duration: str) -> float:
    """A Prometheus duration of minutes and seconds (``5m``, ``4m30s``, ``90s``) in minutes."""
    total, number = 0.0, ""
    for char in duration:
        if char.isdigit():
            number += char
            continue
        total += int(number) * {"m": 1.0, "s": 1 / 60, "h": 60.0}[char]
        number = ""
    return total


def test_promtool_passes_every_case(tmp_path: Path) -> None:
    write_rule_file(tmp_path / "pafka-rules.yaml", NAMESPACE)
    shutil.copy(CASES, tmp_path / CASES.name)
    checked = subprocess.run(
        ["promtool", "check", "rules", "pafka-rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run(
        ["promtool", "test", "rules", CASES.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "SUCCESS" in tested.stdout


def test_every_shipped_alert_is_silent_on_a_healthy_cluster() -> None:
    (healthy,) = [group for group in cases() if group["name"] == HEALTHY]
    silent = {c["alertname"] for c in healthy["alert_rule_test"] if not c["exp_alerts"]}
    assert silent == alerts(NAMESPACE).keys()


def test_every_shipped_alert_fires_only_after_its_for_duration() -> None:
    """Each alert has a case where it fires, with its severity and summary; when the rule has a
    `for:`, the same series show it not firing (pending) at most a minute before, so promtool's
    verdict on the pair pins the delay the rule promises."""
    shipped = alerts(NAMESPACE)
    fired: set[str] = set()
    for group in cases():
        checks = group["alert_rule_test"]
        for check in checks:
            if not check["exp_alerts"]:
                continue
            name = check["alertname"]
            rule = shipped[name]
            fired.add(name)
            for alert in check["exp_alerts"]:
                assert alert["exp_labels"]["severity"] == rule["labels"]["severity"], name
                assert alert["exp_annotations"]["summary"] == rule["annotations"]["summary"]
            if "for" not in rule:
                continue
            at = minutes(check["eval_time"])
            earlier = [
                minutes(c["eval_time"])
                for c in checks
                if c["alertname"] == name and not c["exp_alerts"] and minutes(c["eval_time"]) < at
            ]
            assert earlier, (group["name"], name, "no pending check before it fires")
            assert at - max(earlier) <= 1, (group["name"], name)
    assert fired == shipped.keys()


def test_the_broker_down_alert_expects_the_charts_broker_count() -> None:
    expr = alerts(NAMESPACE, brokers=5)["PafkaBrokerDown"]["expr"]
    assert "max(kafka_brokers{" in expr and expr.count("< 5") == 2
    assert 'pod=~"demo-pafka-broker-[0-9]+"' in expr
    assert alerts(NAMESPACE)["PafkaBrokerDown"]["for"] == "1m"
