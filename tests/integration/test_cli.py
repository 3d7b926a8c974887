"""The `pafka` command line end to end: a local cluster started, used and stopped by the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pafka.local.zookeeper import ZooKeeperServer


def pafka(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", *args],
        env={**os.environ, "PAFKA_HOME": str(home)},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cluster_topics_produce_consume(tmp_path: Path, zookeeper: ZooKeeperServer) -> None:
    home = tmp_path / "home"
    up = pafka(
        home,
        "cluster",
        "up",
        "--brokers",
        "2",
        "--controllers",
        "1",
        "--zookeeper",
        zookeeper.connect_string + "/cli",
    )
    assert up.returncode == 0, up.stderr
    assert "bootstrap servers:" in up.stdout
    try:
        status = pafka(home, "cluster", "status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.stdout.count("ready") == 4  # 2 brokers, 1 controller, 1 gateway

        created = pafka(
            home, "topics", "create", "cli-demo", "--partitions", "4", "--replication-factor", "2"
        )
        assert created.returncode == 0, created.stderr
        again = pafka(home, "topics", "create", "cli-demo", "--partitions", "4")
        assert again.returncode != 0
        assert "already exists" in again.stderr and "Traceback" not in again.stderr
        kept = pafka(home, "topics", "create", "cli-demo", "--partitions", "9", "--if-not-exists")
        assert kept.returncode == 0, kept.stderr
        assert 'Topic "cli-demo" already exists.' in kept.stdout
        described = pafka(home, "topics", "describe", "cli-demo")
        lines = described.stdout.splitlines()
        assert lines[0].startswith("Topic: cli-demo\tTopicId: ")
        assert "PartitionCount: 4\tReplicationFactor: 2" in lines[0]
        assert len(lines) == 5 and all("Leader: " in line for line in lines[1:])

        produced = pafka(
            home, "produce", "cli-demo", "--key-separator", ":", stdin="k1:one\nk2:two\nk1:three\n"
        )
        assert produced.returncode == 0, produced.stderr
        consumed = pafka(
            home, "consume", "cli-demo", "--from-beginning", "--max-messages", "3", "--print-key"
        )
        assert sorted(consumed.stdout.splitlines()) == ["k1\tone", "k1\tthree", "k2\ttwo"]

        bad = pafka(home, "topics", "create", "no/slashes")
        assert bad.returncode != 0
        assert "illegal" in bad.stderr and "Traceback" not in bad.stderr

        altered = pafka(home, "topics", "alter", "cli-demo", "--config", "retention.ms=1000")
        assert altered.returncode == 0, altered.stderr
        assert "retention.ms=1000" in pafka(home, "topics", "describe", "cli-demo").stdout
        assert pafka(home, "topics", "delete", "cli-demo").returncode == 0
    finally:
        down = pafka(home, "cluster", "down")
    assert down.returncode == 0
    assert not (home / "cluster.json").exists()


@pytest.mark.parametrize("args", [["topics", "list"], ["consume", "x"]])
def test_without_a_cluster_the_cli_says_so(tmp_path: Path, args: list[str]) -> None:
    result = pafka(tmp_path, *args)
    assert result.returncode != 0
    assert "pafka cluster up" in result.stderr and "Traceback" not in result.stderr


def test_service_settings_errors_are_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", "broker"],
        env={k: v for k, v in os.environ.items() if not k.startswith("PAFKA_")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "PAFKA_BROKER_ID is required" in result.stderr
