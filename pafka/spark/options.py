"""The options of the ``pafka`` data source, parsed once into frozen values (no pyspark here).

They mirror Spark's Kafka source and sink, so a job moves between the two by changing the format
name and ``kafka.bootstrap.servers`` into ``gateway``::

    gateway               base URL(s) of pafka REST gateways, comma-separated (tried in turn)
    subscribe             topics, comma-separated            ┐
    subscribePattern      a regular expression on names     ├ exactly one (reads)
    assign                JSON {"topic": [0, 1]}            ┘
    startingOffsets       earliest | latest | JSON {"topic": {"0": 23, "1": -2}}
                          (-2 earliest, -1 latest; default earliest for batch, latest for streams)
    endingOffsets         latest | JSON (batch only; default latest)
    minPartitions         split offset ranges so a read has at least this many Spark partitions
    maxOffsetsPerTrigger  cap on records per micro-batch, shared out by partition backlog
    failOnDataLoss        true (default): fail when needed records were deleted; false: skip
                          them with a warning
    includeHeaders        add the ``headers`` column (default false)
    topic                 writes: the topic of every row (else the ``topic`` column)
    maxRecordsPerRequest  records per gateway request, writes (default 1000) and, when given,
                          reads (else a read asks for whole record batches up to the
                          gateway's byte cap, ``PAFKA_GATEWAY_MAX_FETCH_BYTES``)
    requestTimeoutMs      how long to keep trying unreachable gateways (default 30000)
    token                 bearer token, for gateways that require one (sent on every request)

Partitions that a JSON offset object leaves out start at earliest and end at latest.
Option names are case-insensitive, as everywhere in Spark.

Jobs (spark-jobs/) take the token from the environment variable ``PAFKA_SPARK_TOKEN``
(:func:`token_from_env`), never from their command line, which Spark shows in its UI and logs;
on Kubernetes the chart fills it from a Secret in the driver pod. The driver is enough: the
options travel to the executors inside the query plan.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pafka.spark.errors import OptionError

EARLIEST = -2
LATEST = -1
TOKEN_ENV = "PAFKA_SPARK_TOKEN"

TopicPartition = tuple[str, int]
# "earliest", "latest", or offsets by partition (which may be EARLIEST / LATEST)
OffsetSpec = Literal["earliest", "latest"] | dict[TopicPartition, int]


@dataclass(frozen=True)
class Subscription:
    """Which partitions a read covers: named topics, a name pattern, or fixed partitions."""

    kind: Literal["subscribe", "subscribePattern", "assign"]
    topics: tuple[str, ...] = ()
    pattern: str = ""
    assigned: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.assigned)


@dataclass(frozen=True)
class GatewayOptions:
    gateways: tuple[str, ...]
    max_records_per_request: int = 1000
    request_timeout_ms: int = 30_000
    token: str | None = None
    # maxRecordsPerRequest when given: record-batch reads are otherwise bounded by bytes only.
    read_records_per_request: int | None = None


@dataclass(frozen=True)
class ReadOptions:
    gateway: GatewayOptions
    subscription: Subscription
    starting: OffsetSpec
    ending: OffsetSpec = "latest"
    min_partitions: int | None = None
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False


@dataclass(frozen=True)
class WriteOptions:
    gateway: GatewayOptions
    topic: str | None = None


_COMMON = {"gateway", "maxrecordsperrequest", "requesttimeoutms", "token", "path"}
_READ = _COMMON | {
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "minpartitions",
    "maxoffsetspertrigger",
    "failondataloss",
    "includeheaders",
}
_WRITE = _COMMON | {"topic", "checkpointlocation"}


def token_from_env(env: Mapping[str, str]) -> dict[str, str]:
    """The ``token`` option from ``PAFKA_SPARK_TOKEN``, or no option when it is unset."""
    token = env.get(TOKEN_ENV, "").strip()
    return {"token": token} if token else {}


def parse_read(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    opts = _lower(options, _READ, "reads")
    if streaming and "endingoffsets" in opts:
        raise OptionError("endingOffsets is for batch reads; a stream has no end")
    if not streaming and "maxoffsetspertrigger" in opts:
        raise OptionError("maxOffsetsPerTrigger is for streaming reads")
    starting = _offsets(opts, "startingOffsets", "latest" if streaming else "earliest")
    ending = _offsets(opts, "endingOffsets", "latest")
    if ending == "earliest" or (
        isinstance(ending, dict) and any(o == EARLIEST for o in ending.values())
    ):
        raise OptionError("endingOffsets cannot be earliest (-2): the range would be empty")
    if starting == "latest" and not streaming:
        raise OptionError("startingOffsets cannot be latest for a batch read: nothing to read")
    if isinstance(starting, dict) and not streaming and LATEST in starting.values():
        raise OptionError("startingOffsets cannot hold latest (-1) for a batch read")
    return ReadOptions(
        gateway=_gateway(opts),
        subscription=_subscription(opts),
        starting=starting,
        ending=ending,
        min_partitions=_positive(opts, "minPartitions"),
        max_offsets_per_trigger=_positive(opts, "maxOffsetsPerTrigger"),
        fail_on_data_loss=_boolean(opts, "failOnDataLoss", True),
        include_headers=_boolean(opts, "includeHeaders", False),
    )


def parse_write(options: Mapping[str, str]) -> WriteOptions:
    opts = _lower(options, _WRITE, "writes")
    topic = opts.get("topic") or None
    return WriteOptions(gateway=_gateway(opts), topic=topic)


def _lower(options: Mapping[str, str], known: set[str], where: str) -> dict[str, str]:
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    unknown = sorted(k for k in opts if k not in known and not k.startswith("spark."))
    if unknown:
        raise OptionError(f"unknown option(s) for pafka {where}: {', '.join(unknown)}")
    return opts


def _gateway(opts: dict[str, str]) -> GatewayOptions:
    raw = opts.get("gateway", "")
    urls = tuple(u.strip().rstrip("/") for u in raw.split(",") if u.strip())
    if not urls:
        raise OptionError("option gateway is required: the base URL of a pafka REST gateway")
    for url in urls:
        if not re.fullmatch(r"https?://[^\s/]+(/\S*)?", url):
            raise OptionError(f"gateway {url!r} is not an http:// or https:// URL")
    return GatewayOptions(
        gateways=urls,
        max_records_per_request=_positive(opts, "maxRecordsPerRequest") or 1000,
        request_timeout_ms=_positive(opts, "requestTimeoutMs") or 30_000,
        token=opts.get("token") or None,
        read_records_per_request=_positive(opts, "maxRecordsPerRequest"),
    )


def _subscription(opts: dict[str, str]) -> Subscription:
    given = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(given) != 1:
        raise OptionError("give exactly one of subscribe, subscribePattern or assign")
    value = opts[given[0]]
    if given[0] == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError("subscribe names no topic")
        return Subscription("subscribe", topics=topics)
    if given[0] == "subscribepattern":
        try:
            re.compile(value)
        except re.error as exc:
            raise OptionError(
                f"subscribePattern {value!r} is not a regular expression: {exc}"
            ) from None
        return Subscription("subscribePattern", pattern=value)
    data = _json(value, "assign")
    if not isinstance(data, dict) or not data:
        raise OptionError('assign must be a JSON object such as {"topic": [0, 1]}')
    assigned: list[TopicPartition] = []
    for topic, partitions in data.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in partitions
        ):
            raise OptionError(f"assign: partitions of {topic!r} must be a list of integers >= 0")
        assigned.extend((topic, p) for p in partitions)
    return Subscription("assign", assigned=tuple(sorted(set(assigned))))


def _offsets(opts: dict[str, str], name: str, default: str) -> OffsetSpec:
    raw = opts.get(name.lower(), default).strip()
    if raw.lower() == "earliest":
        return "earliest"
    if raw.lower() == "latest":
        return "latest"
    data = _json(raw, name)
    if not isinstance(data, dict):
        raise OptionError(f'{name} must be earliest, latest or JSON like {{"t": {{"0": 5}}}}')
    spec: dict[TopicPartition, int] = {}
    for topic, by_partition in data.items():
        if not isinstance(by_partition, dict):
            raise OptionError(f"{name}: the value of topic {topic!r} must be an object")
        for partition, offset in by_partition.items():
            if not str(partition).isdigit():
                raise OptionError(f"{name}: partition {partition!r} of {topic!r} is not a number")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < -2:
                raise OptionError(
                    f"{name}: offset of {topic}-{partition} must be an integer >= 0, "
                    "-2 (earliest) or -1 (latest)"
                )
            spec[(topic, int(partition))] = offset
    return spec


def _json(raw: str, name: str) -> object:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise OptionError(f"{name} is not valid JSON: {exc}") from None


def _positive(opts: dict[str, str], name: str) -> int | None:
    raw = opts.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"{name} must be a positive integer, not {raw!r}") from None
    if value <= 0:
        raise OptionError(f"{name} must be a positive integer, not {raw!r}")
    return value


def _boolean(opts: dict[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name.lower())
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(f"{name} must be true or false, not {raw!r}")
