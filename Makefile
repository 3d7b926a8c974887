# pafka: `make up` starts a local cluster and shows it working; `make test` runs the suite.
# Both install what is missing first (Debian's zookeeper and a JDK, the Python environment).

VENV    ?= .venv
PYTHON  := $(VENV)/bin/python
PAFKA   := $(VENV)/bin/pafka
STAMP   := $(VENV)/.installed
export PAFKA_HOME ?= $(CURDIR)/.pafka

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: up down status test test-faults test-partitions lint bench bench-scale system-deps compat-system-deps browser-deps container-system-deps deps test-deps clean image image-spark

# ZooKeeper and a JDK for pafka; redis-server and nats-server for the comparison benchmark
# (`make bench`, and its smoke test in `make test`). nats-server lives in /usr/sbin. iproute2
# and nftables for the network partition suite (namespaces, bridge, drops). prometheus (with
# promtool) for the chart's alert rules and dashboard on a real Prometheus.
system-deps:
	@missing=""; \
	{ [ -f /usr/share/java/zookeeper.jar ] && command -v java >/dev/null; } || missing="zookeeper default-jre-headless"; \
	{ command -v ip >/dev/null || [ -x /usr/sbin/ip ]; } || missing="$$missing iproute2"; \
	{ command -v nft >/dev/null || [ -x /usr/sbin/nft ]; } || missing="$$missing nftables"; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	{ command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ]; } || missing="$$missing nats-server"; \
	{ command -v promtool >/dev/null && command -v prometheus >/dev/null; } || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
		echo "installing from Debian:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# The client compatibility suite (tests/compat/, part of `make test`): kcat, Node for kafkajs,
# and Go with Debian's Sarama and kafka-go sources (built offline in GOPATH mode from
# /usr/share/gocode).
GOCODE := /usr/share/gocode/src/github.com
compat-system-deps:
	@missing=""; \
	command -v kcat >/dev/null || missing="$$missing kcat"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	command -v go >/dev/null || missing="$$missing golang-go"; \
	[ -d $(GOCODE)/Shopify/sarama ] || missing="$$missing golang-github-shopify-sarama-dev"; \
	[ -d $(GOCODE)/segmentio/kafka-go ] || missing="$$missing golang-github-segmentio-kafka-go-dev"; \
	if [ -n "$$missing" ]; then \
		echo "installing from Debian:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# Debian's Chromium for the browser test of the gateway's /docs and /redoc (Playwright from PyPI
# drives it; no browser is downloaded).
browser-deps:
	@command -v chromium >/dev/null || { \
		echo "installing from Debian: chromium"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium >/dev/null; \
	}

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PYTHON) -m pip install -q --upgrade pip
	$(PYTHON) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# The compatibility suite's clients beside the Python environment: pykafka in an environment of
# its own (it pins kazoo 2.5), kafkajs from the committed lockfile.
PYKAFKA_STAMP := $(VENV)/compat/pykafka/.installed
KAFKAJS_STAMP := tests/compat/kafkajs/node_modules/.installed

$(PYKAFKA_STAMP): tests/compat/pykafka-requirements.txt $(STAMP)
	python3 -m venv $(VENV)/compat/pykafka
	$(VENV)/compat/pykafka/bin/pip install -q -r tests/compat/pykafka-requirements.txt
	touch $@

$(KAFKAJS_STAMP): tests/compat/kafkajs/package-lock.json
	cd tests/compat/kafkajs && npm ci --no-audit --no-fund --loglevel=error
	touch $@

deps: system-deps $(STAMP)

test-deps: deps compat-system-deps browser-deps container-system-deps $(PYKAFKA_STAMP) $(KAFKAJS_STAMP)

# Images without a Docker engine (and the container test, tests/containers/, in `make test`):
# buildah and podman (rootful, runc, vfs storage) and debootstrap for a base image made from
# Debian packages where no registry is reachable.
container-system-deps:
	@missing=""; \
	for tool in buildah podman runc debootstrap; do \
		command -v $$tool >/dev/null || [ -x /usr/sbin/$$tool ] || missing="$$missing $$tool"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing from Debian:$$missing"; \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# The images from the Dockerfile: `docker build` where a Docker engine answers, else buildah
# (chroot isolation, vfs storage) with the debootstrap stand-in base and the wheels built here,
# both cached in build/images/ (images/build.sh). PYTHON_IMAGE=... picks another base.
IMAGE       ?= pafka:dev
SPARK_IMAGE ?= pafka-spark:dev
image: $(STAMP)
	@docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory container-system-deps
	PYTHON=$(abspath $(PYTHON)) images/build.sh service $(IMAGE)

image-spark: $(STAMP)
	@docker info >/dev/null 2>&1 || $(MAKE) --no-print-directory container-system-deps
	PYTHON=$(abspath $(PYTHON)) images/build.sh spark $(SPARK_IMAGE)

# A failed REST step prints the gateway's answer (--fail-with-body), not only curl's exit code.
up: deps
	$(PAFKA) cluster up --brokers 3 --controllers 2
	$(PAFKA) topics create demo --partitions 6 --replication-factor 3 --if-not-exists
	$(PAFKA) topics describe demo
	printf 'hello\npafka\n' | $(PAFKA) produce demo
	$(PAFKA) consume demo --from-beginning --max-messages 2 --timeout-ms 5000
	@GW=$$($(PYTHON) -c 'import json,os; print(json.load(open(os.environ["PAFKA_HOME"]+"/cluster.json"))["endpoints"]["gateways"]["1"])'); \
	$(PAFKA) topics create rest-demo --partitions 1 --replication-factor 3 --if-not-exists >/dev/null && \
	echo "REST produce and read through $$GW:" && \
	curl -sS --fail-with-body -XPOST $$GW/topics/rest-demo -H 'Content-Type: application/vnd.kafka.json.v2+json' \
	     -d '{"records":[{"key":"rest","value":{"hello":"pafka"}}]}' && echo && \
	curl -sS --fail-with-body "$$GW/topics/rest-demo/partitions/0/records?offset=0&max_records=5" \
	     -H 'Accept: application/vnd.kafka.json.v2+json' && echo
	@echo; $(PAFKA) cluster status

down:
	-$(PAFKA) cluster down

status:
	$(PAFKA) cluster status

lint: deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Test files spread over TEST_WORKERS processes, each file whole (a module's cluster starts
# once), in collection order so the container test (a few tests, ten minutes of image builds
# and pods) starts at once: about 36 minutes on 2 cores with two, against 60 in one
# (TEST_WORKERS=0).
TEST_WORKERS ?= 2
test: test-deps lint
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30

test-faults: deps
	$(VENV)/bin/pytest -q -m faults

# The network partition suite (tests/partitions/, root needed for namespaces and nftables):
# ten 60 s cuts plus the short CI subset, about 15 minutes; figures table at the end.
test-partitions: deps
	$(VENV)/bin/pytest -q -rA -m partitions tests/partitions

# pafka beside Redis Streams and NATS JetStream: the default comparison (100-byte records, 1 and
# 6 partitions, acks 1, RF 1), report under bench/results/<UTC time>/. BENCH_ARGS adds options.
bench: deps
	$(PAFKA) bench --workloads default $(BENCH_ARGS)

clean: down
	rm -rf $(PAFKA_HOME)

# A cluster at 1k, 5k and 10k partitions (RF 3; and 50k at RF 1 if the brokers' descriptor
# limit allows): issue 15's figures and targets, report under bench/results/scale-<UTC time>/.
bench-scale: deps
	$(PYTHON) -m bench.scale --partitions 1000,5000,10000 --rf1-partitions 50000 $(BENCH_ARGS)
