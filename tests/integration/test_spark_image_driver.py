"""The Spark job image's driver path, without Docker: the image's SPARK_HOME layout (a directory
linking into pyspark's pip package, as the Dockerfile's spark stage makes it) and its entrypoint
given the arguments a Spark-on-Kubernetes driver pod gets, with the job file named by a
``local://`` URI and the properties file Spark mounts. Only the master differs (local instead
of k8s://). The job reads a topic of the shared cluster through its gateway into Parquet.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

import pyarrow.parquet as pq
import pyspark

from tests.integration.conftest import ClusterHandle
from tests.integration.test_spark_source import produce

JOBS = Path(__file__).resolve().parents[2] / "spark-jobs"


def image_spark_home(root: Path) -> Path:
    """/opt/spark as the Dockerfile builds it: conf/ and work-dir/ of its own, the rest linked."""
    package = Path(pyspark.__file__).parent
    home = root / "spark"
    (home / "conf").mkdir(parents=True)
    (home / "work-dir").mkdir()
    for part in ("bin", "jars", "python", "sbin"):
        assert (package / part).is_dir(), part
        (home / part).symlink_to(package / part)
    return home


def test_driver_pod_arguments_run_a_job(cluster: ClusterHandle, tmp_path: Path) -> None:
    gw = cluster.gateways[0]
    cluster.create_topic("image-driver", partitions=2, replication_factor=3)
    produce(gw, "image-driver", [{"key": b"k%d" % i, "value": b"v%d" % i} for i in range(9)])

    home = image_spark_home(tmp_path)
    properties = home / "conf" / "spark.properties"  # where Spark mounts the driver's conf
    properties.write_text(
        "spark.master=local[1]\n"
        "spark.app.name=pafka-image-driver\n"
        "spark.ui.enabled=false\n"
        "spark.sql.shuffle.partitions=1\n"
    )
    output = tmp_path / "parquet"
    argv = [
        "driver",
        "--properties-file",
        str(properties),
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        f"local://{JOBS / 'topic_to_parquet.py'}",
        "--gateway",
        gw,
        "--topic",
        "image-driver",
        "--output",
        str(output),
    ]
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    done = subprocess.run(
        [sys.executable, "-m", "pafka.spark.entrypoint", *argv],
        env=env,
        cwd=home / "work-dir",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    table = pq.read_table(output).to_pydict()
    assert sorted(table["value"]) == sorted(f"v{i}" for i in range(9))
    assert set(table["topic"]) == {"image-driver"}
