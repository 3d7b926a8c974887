# syntax=docker/dockerfile:1
# One image for every pafka service; the command picks which one runs:
#   docker run IMAGE broker | controller | gateway   (configured by PAFKA_<SERVICE>_* variables)
# The chart (charts/pafka) sets the command per component.

ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm

# --- build: install pafka and its dependencies into a self-contained virtualenv -------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
RUN python -m venv /opt/pafka
COPY pyproject.toml ./
COPY pafka ./pafka
COPY services ./services
# Every dependency ships manylinux wheels, so no compiler is needed; the venv is compiled to
# bytecode here because the running container's root filesystem is read-only.
RUN /opt/pafka/bin/pip install --no-compile . \
    && /opt/pafka/bin/python -m compileall -q /opt/pafka/lib

# --- runtime: the virtualenv on a clean slim base, run as an unprivileged numeric user ------
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
