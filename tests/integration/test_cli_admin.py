"""``pafka configs``, ``pafka topics delete-records`` and ``pafka leaders elect`` against the
shared cluster, as a user runs them (a subprocess per command)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

from confluent_kafka import Producer

from tests.integration.conftest import ClusterHandle


def pafka(cluster: ClusterHandle, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pafka.cli.main", *args, "--bootstrap-server", cluster.bootstrap],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _topic(cluster: ClusterHandle, records: int = 0) -> str:
    name = f"cli-adm-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=1, replication_factor=3)
    if records:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
        for i in range(records):
            producer.produce(name, f"r{i}".encode(), partition=0)
        assert producer.flush(30) == 0
    return name


def test_configs_alter_and_describe_a_topic(cluster: ClusterHandle) -> None:
    topic = _topic(cluster)
    done = pafka(
        cluster,
        "configs",
        "alter",
        "--topic",
        topic,
        "--add-config",
        "retention.ms=1000,cleanup.policy=[delete,compact]",
    )
    assert done.returncode == 0, done.stderr
    assert f"Completed updating config for topic {topic}." in done.stdout
    shown = pafka(cluster, "configs", "describe", "--topic", topic)
    assert shown.returncode == 0, shown.stderr
    assert "  retention.ms=1000 source=DYNAMIC_TOPIC_CONFIG" in shown.stdout
    assert "  cleanup.policy=delete,compact source=DYNAMIC_TOPIC_CONFIG" in shown.stdout
    removed = pafka(
        cluster, "configs", "alter", "--topic", topic, "--delete-config", "retention.ms"
    )
    assert removed.returncode == 0, removed.stderr
    shown = pafka(cluster, "configs", "describe", "--topic", topic)
    assert "  retention.ms=604800000 source=DEFAULT_CONFIG" in shown.stdout
    bad = pafka(cluster, "configs", "alter", "--topic", topic, "--add-config", "retention.ms=x")
    assert bad.returncode == 1
    assert bad.stderr.startswith("pafka configs: ") and len(bad.stderr.splitlines()) == 1


def test_configs_describe_and_refuse_on_a_broker(cluster: ClusterHandle) -> None:
    shown = pafka(cluster, "configs", "describe", "--broker", "1")
    assert shown.returncode == 0, shown.stderr
    assert "Configs for broker 1 are:" in shown.stdout
    assert "  message.max.bytes=" in shown.stdout
    refused = pafka(
        cluster, "configs", "alter", "--broker", "1", "--add-config", "num.io.threads=4"
    )
    assert refused.returncode == 1
    assert "dynamically" in refused.stderr


def test_delete_records_by_arguments_and_by_kafkas_json_file(
    cluster: ClusterHandle, tmp_path: Path
) -> None:
    topic = _topic(cluster, records=10)
    done = pafka(
        cluster, "topics", "delete-records", "--topic", topic, "--partition", "0", "--offset", "3"
    )
    assert done.returncode == 0, done.stderr
    assert f"partition: {topic}-0\tlow_watermark: 3" in done.stdout
    spec = tmp_path / "offsets.json"
    spec.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 6}], "version": 1})
    )
    done = pafka(cluster, "topics", "delete-records", "--offset-json-file", str(spec))
    assert done.returncode == 0, done.stderr
    assert f"partition: {topic}-0\tlow_watermark: 6" in done.stdout
    beyond = pafka(
        cluster, "topics", "delete-records", "--topic", topic, "--partition", "0", "--offset", "99"
    )
    assert beyond.returncode == 1
    assert f"partition: {topic}-0\terror: " in beyond.stdout


def test_leaders_elect_reports_partitions_that_need_no_election(cluster: ClusterHandle) -> None:
    topic = _topic(cluster)
    for kind in ("--preferred", "--unclean"):
        done = pafka(cluster, "leaders", "elect", kind, "--topic", topic, "--partition", "0")
        assert done.returncode == 0, done.stderr
        assert f"Valid replica already elected for partitions {topic}-0" in done.stdout
    unknown = pafka(cluster, "leaders", "elect", "--topic", topic, "--partition", "9")
    assert unknown.returncode == 1
    assert f"Error completing leader election (PREFERRED) for partition {topic}-9" in unknown.stdout
