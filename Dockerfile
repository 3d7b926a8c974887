# syntax=docker/dockerfile:1
# Two images from one file:
#   docker build -t pafka .                        the services (default target, `runtime`):
#     docker run IMAGE broker | controller | gateway   (configured by PAFKA_<SERVICE>_* variables)
#     The chart (charts/pafka) sets the command per component.
#   docker build --target spark -t pafka-spark .   Spark jobs: Java 17, pyspark, the pafka
#     connector and spark-jobs/ at /opt/pafka/spark-jobs, with the driver/executor entrypoint
#     Spark on Kubernetes expects (pafka/spark/entrypoint.py). See the README's Spark section.
# The service stage stays last, so a build without --target gives the service image.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# --- build: install pafka and its dependencies into a self-contained virtualenv -------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
# binutils for strip: some wheels' extension modules carry their debug info (uvloop's and
# zstandard's are 12 MB each, a tenth of that stripped); only those are stripped, since a library
# auditwheel rewrote with patchelf (numpy's openblas) no longer loads once stripped. This stage
# is not shipped. An air-gapped build mounts apt's package lists and the .deb files at
# /run/pafka-apt (images/build.sh fetches them outside the build) and installs from them alone.
RUN if [ -d /run/pafka-apt ]; then set -- --no-download -o Dir::State::Lists=/run/pafka-apt/lists \
       -o Dir::Cache::Archives=/run/pafka-apt/archives; else apt-get update; fi \
    && apt-get install -y --no-install-recommends "$@" binutils \
    && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/pafka
COPY pyproject.toml ./
COPY pafka ./pafka
COPY services ./services
# Every dependency ships manylinux wheels, so no compiler is needed; the venv is compiled to
# bytecode here because the running container's root filesystem is read-only. An air-gapped
# build mounts prebuilt wheels at /run/pafka-wheels (images/build.sh) and installs from them
# alone: no index, no CA certificate in any layer.
RUN if [ -d /run/pafka-wheels ]; then set -- --no-index --find-links /run/pafka-wheels; fi \
    && /opt/pafka/bin/pip install --no-compile "$@" . \
    && /opt/pafka/bin/pip uninstall -q -y pip setuptools \
    && find /opt/pafka -type f \( -name '*.so' -o -name '*.so.[0-9]*' \) -not -path '*.libs/*' \
       -exec sh -c 'for f; do if readelf -S "$f" | grep -q debug_info; then strip --strip-unneeded "$f"; fi; done' - {} + \
    && /opt/pafka/bin/python -m compileall -q /opt/pafka/lib

# --- spark-build: the same virtualenv plus the spark extra (pyspark and its SQL deps) --------
FROM build AS spark-build
# pip comes back from the interpreter's own bundled wheel (ensurepip, offline) for this stage.
# pyspark's jars dominate the image (460 MB); jars/connect-repl (58 MB) is Spark Connect's Scala
# shell (Ammonite), which neither spark-submit nor a driver or executor loads.
RUN /opt/pafka/bin/python -m ensurepip \
    && if [ -d /run/pafka-wheels ]; then set -- --no-index --find-links /run/pafka-wheels; fi \
    && /opt/pafka/bin/python -m pip install --no-cache-dir --no-compile "$@" ".[spark]" \
    && rm -rf /opt/pafka/lib/python3.11/site-packages/pyspark/jars/connect-repl \
    && /opt/pafka/bin/python -m pip uninstall -q -y pip setuptools \
    && find /opt/pafka -type f \( -name '*.so' -o -name '*.so.[0-9]*' \) -not -path '*.libs/*' \
       -exec sh -c 'for f; do if readelf -S "$f" | grep -q debug_info; then strip --strip-unneeded "$f"; fi; done' - {} + \
    && /opt/pafka/bin/python -m compileall -q /opt/pafka/lib

# --- spark: the Spark job image (driver and executors), Java 17 from Debian -----------------
FROM ${PYTHON_IMAGE} AS spark
LABEL org.opencontainers.image.title="pafka-spark" \
      org.opencontainers.image.description="Spark jobs on pafka: pyspark, the pafka connector, spark-jobs/"
# openjdk's postinst links its man pages, whose directory the slim base leaves out; tini runs
# as PID 1 and reaps the Python workers the JVM may leave behind.
RUN mkdir -p /usr/share/man/man1 \
    && if [ -d /run/pafka-apt ]; then set -- --no-download -o Dir::State::Lists=/run/pafka-apt/lists \
       -o Dir::Cache::Archives=/run/pafka-apt/archives; else apt-get update; fi \
    && apt-get install -y --no-install-recommends "$@" openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/*
COPY --from=spark-build /opt/pafka /opt/pafka
COPY spark-jobs /opt/pafka/spark-jobs
# SPARK_HOME is a directory of its own, pointing into the pip package, so that Spark's mounts
# (conf/ for the driver's properties) and work-dir/ stay outside site-packages.
RUN groupadd --system --gid 10001 pafka \
    && useradd --system --uid 10001 --gid 10001 --home-dir /opt/spark/work-dir --no-create-home pafka \
    && pyspark_dir="$(/opt/pafka/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')" \
    && mkdir -p /opt/spark/conf /opt/spark/work-dir \
    && ln -s "$pyspark_dir/bin" "$pyspark_dir/jars" "$pyspark_dir/python" "$pyspark_dir/sbin" /opt/spark/ \
    && chown 10001:10001 /opt/spark/work-dir \
    && java -version
ENV PATH=/opt/pafka/bin:/opt/spark/bin:$PATH \
    SPARK_HOME=/opt/spark \
    PYSPARK_PYTHON=/opt/pafka/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/pafka/bin/python \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /opt/spark/work-dir
USER 10001:10001
# Spark on Kubernetes starts pods with the arguments `driver ...` or `executor`; anything else
# runs as given (spark-submit, python /opt/pafka/spark-jobs/JOB.py ...).
ENTRYPOINT ["/usr/bin/tini", "--", "/opt/pafka/bin/python", "-m", "pafka.spark.entrypoint"]
CMD ["spark-submit", "--version"]

# --- runtime: the virtualenv on a clean slim base, run as an unprivileged numeric user ------
# (last, so that the default target is the service image)
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="pafka" \
      org.opencontainers.image.description="Kafka-style commit log: broker, controller and REST gateway"
ENV PATH=/opt/pafka/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PAFKA_BROKER_DATA_DIR=/var/lib/pafka
COPY --from=build /opt/pafka /opt/pafka
RUN groupadd --system --gid 10001 pafka \
    && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/pafka --no-create-home pafka \
    && mkdir -p /var/lib/pafka \
    && chown 10001:10001 /var/lib/pafka
WORKDIR /var/lib/pafka
VOLUME ["/var/lib/pafka"]
USER 10001:10001
# 9092 broker Kafka protocol, 8091 broker HTTP, 8090 controller HTTP, 8082 gateway REST.
EXPOSE 9092 8091 8090 8082
# Exec form: the service is PID 1 and receives SIGTERM itself (the broker then asks the
# controller for a controlled shutdown).
ENTRYPOINT ["pafka"]
CMD ["gateway"]
