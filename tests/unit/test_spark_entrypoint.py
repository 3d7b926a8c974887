"""The Spark job image's entrypoint (pafka/spark/entrypoint.py): the commands it builds for the
pods Spark on Kubernetes starts, from the arguments and environment Spark gives them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import ConfigError
from pafka.spark.entrypoint import EXECUTOR_BACKEND, class_path, command, java_options

# What Spark's driver puts in an executor pod's environment.
EXECUTOR_ENV = {
    "SPARK_HOME": "/opt/spark",
    "JAVA_HOME": "/usr/lib/jvm/java-17",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@10.0.0.5:7078",
    "SPARK_EXECUTOR_ID": "3",
    "SPARK_EXECUTOR_CORES": "2",
    "SPARK_EXECUTOR_MEMORY": "1024m",
    "SPARK_APPLICATION_ID": "spark-0123abcd",
    "SPARK_EXECUTOR_POD_IP": "10.0.0.9",
    "SPARK_EXECUTOR_POD_NAME": "job-exec-3",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_CONF_DIR": "/opt/spark/conf",
    "SPARK_JAVA_OPT_0": "-Dspark.driver.port=7078",
    "SPARK_JAVA_OPT_1": "--add-opens=java.base/java.lang=ALL-UNNAMED",
}


def test_driver_resubmits_in_client_mode_bound_to_the_pod() -> None:
    argv = [
        "driver",
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        "local:///opt/pafka/spark-jobs/topic_to_parquet.py",
        "--topic",
        "events",
    ]
    env = {"SPARK_HOME": "/opt/spark", "SPARK_DRIVER_BIND_ADDRESS": "10.0.0.5"}
    assert command(argv, env) == [
        "/opt/spark/bin/spark-submit",
        "--conf",
        "spark.driver.bindAddress=10.0.0.5",
        "--conf",
        "spark.executorEnv.SPARK_DRIVER_POD_IP=10.0.0.5",
        "--deploy-mode",
        "client",
        *argv[1:],
    ]


def test_executor_starts_the_kubernetes_backend() -> None:
    got = command(["executor"], EXECUTOR_ENV)
    assert got[0] == "/usr/lib/jvm/java-17/bin/java"
    assert got[1:3] == ["-Dspark.driver.port=7078", "--add-opens=java.base/java.lang=ALL-UNNAMED"]
    assert got[3:5] == ["-Xms1024m", "-Xmx1024m"]
    assert got[5:7] == ["-cp", "/opt/spark/conf:/opt/spark/jars/*"]
    assert got[7] == EXECUTOR_BACKEND
    flags = dict(zip(got[8::2], got[9::2], strict=True))
    assert flags == {
        "--driver-url": "spark://CoarseGrainedScheduler@10.0.0.5:7078",
        "--executor-id": "3",
        "--cores": "2",
        "--app-id": "spark-0123abcd",
        "--hostname": "10.0.0.9",
        "--resourceProfileId": "0",
        "--podName": "job-exec-3",
    }
    # Without JAVA_HOME, java from PATH; without a profile id, the default profile.
    bare = {
        k: v for k, v in EXECUTOR_ENV.items() if k not in ("JAVA_HOME", "SPARK_RESOURCE_PROFILE_ID")
    }
    plain = command(["executor"], bare)
    assert plain[0] == "java"
    assert plain[plain.index("--resourceProfileId") + 1] == "0"


@pytest.mark.parametrize(
    "missing",
    ["SPARK_DRIVER_URL", "SPARK_EXECUTOR_ID", "SPARK_EXECUTOR_MEMORY", "SPARK_EXECUTOR_POD_IP"],
)
def test_executor_without_what_spark_sets_is_a_clear_error(missing: str) -> None:
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != missing}
    with pytest.raises(ConfigError, match=f"{missing} is not set.*executor pods"):
        command(["executor"], env)


def test_driver_without_its_address_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="SPARK_DRIVER_BIND_ADDRESS is not set"):
        command(["driver", "--class", "x"], {})
    with pytest.raises(ConfigError, match="no command"):
        command([], {})


@pytest.mark.parametrize(
    "argv",
    [
        ["spark-submit", "--version"],
        ["python", "/opt/pafka/spark-jobs/topic_to_parquet.py", "--topic", "t"],
        ["bash"],
    ],
)
def test_anything_else_runs_as_given(argv: list[str]) -> None:
    assert command(argv, {}) == argv


@given(st.dictionaries(st.integers(0, 40), st.text(min_size=1, max_size=8), max_size=12))
def test_java_options_keep_spark_s_numbering(options: dict[int, str]) -> None:
    env = {f"SPARK_JAVA_OPT_{n}": v for n, v in options.items()}
    env["SPARK_JAVA_OPT_X"] = "not numbered"
    env["OTHER"] = "ignored"
    assert java_options(env) == [options[n] for n in sorted(options)]


def test_class_path_puts_configuration_first() -> None:
    env = {
        "SPARK_CONF_DIR": "/c",
        "HADOOP_CONF_DIR": "/h",
        "SPARK_CLASSPATH": "/x.jar",
        "SPARK_EXTRA_CLASSPATH": "/e/*",
        "SPARK_DIST_CLASSPATH": "/d/*",
    }
    assert class_path(env, "/s") == "/c:/h:/x.jar:/s/jars/*:/e/*:/d/*"
    assert class_path({}, "/s") == "/s/jars/*"
