"""The Spark job image's entrypoint: what Spark on Kubernetes runs in driver and executor pods.

Spark's own container images carry an entrypoint script that pyspark's pip package lacks; this
module plays its part, so that the image built with ``docker build --target spark`` serves
``spark-submit --master k8s://...`` and the Kubeflow spark-operator. Spark starts its pods with
the image's entrypoint and one of these argument lists:

* ``driver --properties-file /opt/spark/conf/spark.properties --class ... APP ARGS...``: the
  driver pod runs spark-submit again, in client mode, bound to the pod's address
  (``SPARK_DRIVER_BIND_ADDRESS``), which executors are told as well;
* ``executor``: the executor JVM, configured by what the driver put in the pod's environment
  (``SPARK_DRIVER_URL``, ``SPARK_EXECUTOR_ID``, ``SPARK_EXECUTOR_CORES``,
  ``SPARK_EXECUTOR_MEMORY``, ``SPARK_APPLICATION_ID``, ``SPARK_EXECUTOR_POD_IP``,
  ``SPARK_EXECUTOR_POD_NAME``, ``SPARK_RESOURCE_PROFILE_ID``, JVM options as
  ``SPARK_JAVA_OPT_<n>``, extra class paths);
* anything else runs as given: ``spark-submit ...``, ``python /opt/pafka/spark-jobs/JOB.py``.

:func:`command` decides (pure); :func:`main` replaces this process with the result, so the JVM
gets the signals Kubernetes sends (the image runs it under tini, which reaps the Python workers
a JVM may leave behind).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from pafka.errors import ConfigError

DEFAULT_SPARK_HOME = "/opt/spark"
EXECUTOR_BACKEND = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
JAVA_OPT_PREFIX = "SPARK_JAVA_OPT_"


def command(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The program and arguments to run for the container arguments ``argv``."""
    if not argv:
        raise ConfigError("no command: expected driver, executor, or a program to run")
    role, rest = argv[0], list(argv[1:])
    spark_home = env.get("SPARK_HOME") or DEFAULT_SPARK_HOME
    if role == "driver":
        address = _required(env, "SPARK_DRIVER_BIND_ADDRESS", role)
        return [
            f"{spark_home}/bin/spark-submit",
            "--conf",
            f"spark.driver.bindAddress={address}",
            "--conf",
            f"spark.executorEnv.SPARK_DRIVER_POD_IP={address}",
            "--deploy-mode",
            "client",
            *rest,
        ]
    if role == "executor":
        return _executor(env, spark_home)
    return list(argv)


def _executor(env: Mapping[str, str], spark_home: str) -> list[str]:
    memory = _required(env, "SPARK_EXECUTOR_MEMORY", "executor")
    java_home = env.get("JAVA_HOME")
    java = f"{java_home}/bin/java" if java_home else "java"
    return [
        java,
        *java_options(env),
        f"-Xms{memory}",
        f"-Xmx{memory}",
        "-cp",
        class_path(env, spark_home),
        EXECUTOR_BACKEND,
        "--driver-url",
        _required(env, "SPARK_DRIVER_URL", "executor"),
        "--executor-id",
        _required(env, "SPARK_EXECUTOR_ID", "executor"),
        "--cores",
        _required(env, "SPARK_EXECUTOR_CORES", "executor"),
        "--app-id",
        _required(env, "SPARK_APPLICATION_ID", "executor"),
        "--hostname",
        _required(env, "SPARK_EXECUTOR_POD_IP", "executor"),
        "--resourceProfileId",
        env.get("SPARK_RESOURCE_PROFILE_ID") or "0",
        "--podName",
        _required(env, "SPARK_EXECUTOR_POD_NAME", "executor"),
    ]


def java_options(env: Mapping[str, str]) -> list[str]:
    """``SPARK_JAVA_OPT_<n>`` values in the order of n (their order matters to the JVM)."""
    numbered = []
    for name, value in env.items():
        suffix = name.removeprefix(JAVA_OPT_PREFIX)
        if name.startswith(JAVA_OPT_PREFIX) and suffix.isdigit():
            numbered.append((int(suffix), value))
    return [value for _, value in sorted(numbered)]


def class_path(env: Mapping[str, str], spark_home: str) -> str:
    """Configuration directories first (their files win over those inside jars), then the
    class path the driver asked for, Spark's jars and any extra entries."""
    parts = [
        env.get("SPARK_CONF_DIR", ""),
        env.get("HADOOP_CONF_DIR", ""),
        env.get("SPARK_CLASSPATH", ""),
        f"{spark_home}/jars/*",
        env.get("SPARK_EXTRA_CLASSPATH", ""),
        env.get("SPARK_DIST_CLASSPATH", ""),
    ]
    return ":".join(p for p in parts if p)


def _required(env: Mapping[str, str], name: str, role: str) -> str:
    value = env.get(name)
    if not value:
        raise ConfigError(f"{name} is not set: Spark on Kubernetes sets it in {role} pods")
    return value


def main(argv: Sequence[str] | None = None) -> None:
    try:
        program = command(sys.argv[1:] if argv is None else argv, os.environ)
    except ConfigError as exc:
        print(f"pafka spark image: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    sys.stdout.flush()
    os.execvp(program[0], program)


if __name__ == "__main__":
    main()
