"""The connector's HTTP client of the pafka REST gateway (httpx, synchronous; no pyspark here).

Used on the driver (topics, partitions, offsets) and in Spark's Python workers (range reads,
produce). Every call tries the configured gateways in turn, with a short backoff, until the
request timeout: a gateway replica that is down or answers 503 is as good as any other to retry,
because reads change nothing and every produce carries an ``Idempotency-Key``.

Errors: 404 with 40401/40402 is :class:`UnknownTopicError`; no answer in time is
:class:`GatewayUnavailableError`; a 416 (41601, offset outside the log) is returned to the
caller, which knows whether that is data loss.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from pafka.spark.bulk_http import BulkHttp
from pafka.spark.errors import (
    ConnectorError,
    GatewayUnavailableError,
    ProduceError,
    UnknownTopicError,
)
from pafka.spark.options import GatewayOptions, Subscription, TopicPartition

BINARY = "application/vnd.kafka.binary.v2+json"
BATCHES = "application/vnd.pafka.batches"
OFFSET_OUT_OF_RANGE = 41601
IN_PROGRESS = 40905
BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0)


@dataclass(frozen=True)
class ReadPage:
    """One answer of the range endpoint (records as the gateway renders them)."""

    records: list[dict[str, Any]]
    next_offset: int
    high_watermark: int
    log_start_offset: int


@dataclass(frozen=True)
class BatchPage:
    """One answer of the range endpoint in the batch format: record batches as stored (the
    first may begin before the offset asked for), and where to read on."""

    data: bytes
    next_offset: int
    high_watermark: int
    log_start_offset: int


class OffsetOutOfRange(ConnectorError):
    """The gateway answered 41601: the offset is below the log start or past the end."""


class BatchesUnsupported(ConnectorError):
    """The gateway does not answer in the record-batch format (406: it predates it)."""


class GatewayClient:
    def __init__(self, options: GatewayOptions, first: int = 0) -> None:
        """``first`` picks the gateway tried first (tasks pass their partition, so that their
        load is spread over the gateways)."""
        self.options = options
        timeout = options.request_timeout_ms / 1000
        headers = {"Authorization": f"Bearer {options.token}"} if options.token else {}
        # Loading the CA bundle costs about 20 ms, paid by every Spark task: only for https.
        tls = any(url.startswith("https://") for url in options.gateways)
        connect = min(5.0, timeout)
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout, connect=connect), headers=headers, verify=tls
        )
        self._bulk = BulkHttp(timeout_s=timeout, connect_timeout_s=connect, headers=headers)
        self._preferred = first % len(options.gateways)

    def close(self) -> None:
        self._http.close()
        self._bulk.close()

    def __enter__(self) -> GatewayClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- metadata ------------------------------------------------------------------------------

    def topics(self) -> list[str]:
        return sorted(self._call("GET", "/topics").json())

    def partitions(self, topic: str) -> list[int]:
        body = self._call("GET", f"/topics/{topic}/partitions").json()
        return sorted(int(p["partition"]) for p in body)

    def subscribed(self, subscription: Subscription) -> list[TopicPartition]:
        """The partitions a subscription covers now (a pattern may match none yet)."""
        if subscription.kind == "subscribePattern":
            topics = [t for t in self.topics() if subscription.matches(t)]
        elif subscription.kind == "subscribe":
            topics = list(subscription.topics)
        else:
            topics = sorted({t for t, _ in subscription.assigned})
        found: list[TopicPartition] = []
        for topic in topics:
            try:
                found.extend((topic, p) for p in self.partitions(topic))
            except UnknownTopicError:
                raise UnknownTopicError(f"topic {topic!r} does not exist") from None
        if subscription.kind != "assign":
            return found
        missing = sorted(set(subscription.assigned) - set(found))
        if missing:
            named = ", ".join(f"{t}-{p}" for t, p in missing)
            raise UnknownTopicError(f"assign names partitions that do not exist: {named}")
        return list(subscription.assigned)

    def bounds(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, tuple[int, int]]:
        """(beginning, end) of each partition."""
        out = {}
        for topic, partition in partitions:
            body = self._call("GET", f"/topics/{topic}/partitions/{partition}/offsets").json()
            out[(topic, partition)] = (int(body["beginning_offset"]), int(body["end_offset"]))
        return out

    # -- records -------------------------------------------------------------------------------

    def read(self, topic: str, partition: int, offset: int, max_records: int) -> ReadPage:
        body = self._range_read(topic, partition, offset, max_records, BINARY).json()
        return ReadPage(
            body["records"],
            int(body["next_offset"]),
            int(body["high_watermark"]),
            int(body["log_start_offset"]),
        )

    def read_batches(self, topic: str, partition: int, offset: int, max_records: int) -> BatchPage:
        """Whole batches from ``offset`` holding up to about ``max_records`` records, within
        the gateway's byte cap of one read."""
        response = self._range_read(topic, partition, offset, max_records, BATCHES, (406,))
        if response.headers.get("content-type", "").split(";")[0].strip() != BATCHES:
            raise BatchesUnsupported(
                f"the gateway answered a batch read with {response.status_code} "
                f"{response.headers.get('content-type')}"
            )
        h = response.headers
        return BatchPage(
            response.content,
            int(h["pafka-next-offset"]),
            int(h["pafka-high-watermark"]),
            int(h["pafka-log-start-offset"]),
        )

    def _range_read(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_records: int,
        accept: str,
        passthrough: tuple[int, ...] = (),
    ) -> httpx.Response:
        params = {"offset": offset, "max_records": max_records, "timeout_ms": 0}
        response = self._call(
            "GET",
            f"/topics/{topic}/partitions/{partition}/records",
            params=params,
            headers={"Accept": accept},
            passthrough=(416, *passthrough),
            bulk=accept == BATCHES,
        )
        if response.status_code == 416:
            raise OffsetOutOfRange(_message(response))
        return response

    def produce(self, topic: str, records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
        """Write ``records`` (binary v2 form) with acks=all under the idempotency ``key``,
        retrying until every record is acknowledged; the per-record offsets are returned."""
        body = json.dumps({"records": records}, separators=(",", ":")).encode()
        deadline = time.monotonic() + self.options.request_timeout_ms / 1000
        for attempt in range(1_000_000):
            response = self._call(
                "POST",
                f"/topics/{topic}",
                params={"acks": "all"},
                content=body,
                headers={"Content-Type": BINARY, "Idempotency-Key": key},
                passthrough=(409, 503),
            )
            if response.status_code == 200:
                return list(response.json()["offsets"])
            code = _code(response)
            if response.status_code == 409 and code != IN_PROGRESS:
                raise _produce_error(topic, key, response)
            if time.monotonic() > deadline:
                raise _produce_error(topic, key, response)
            time.sleep(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)])
        raise AssertionError("unreachable")

    # -- transport -----------------------------------------------------------------------------

    def _call(
        self,
        method: str,
        path: str,
        *,
        passthrough: tuple[int, ...] = (),
        bulk: bool = False,
        **kwargs: Any,
    ) -> httpx.Response:
        """``bulk``: a GET whose answer may be many MiB (:mod:`pafka.spark.bulk_http`)."""
        deadline = time.monotonic() + self.options.request_timeout_ms / 1000
        urls = self.options.gateways
        problem = ""
        for attempt in range(1_000_000):
            url = urls[(self._preferred + attempt) % len(urls)]
            try:
                if bulk:
                    response = self._bulk.get(url + path, **kwargs)
                else:
                    response = self._http.request(method, url + path, **kwargs)
            except httpx.TransportError as exc:
                problem = f"{url}: {type(exc).__name__} {exc}"
            else:
                status = response.status_code
                if status < 300 or status in passthrough:
                    self._preferred = urls.index(url)
                    return response
                if status == 404 and _code(response) in (40401, 40402, 40403):
                    raise UnknownTopicError(f"{_message(response)} ({method} {path})")
                if status in (401, 403):
                    raise ConnectorError(
                        f"gateway {url} refused {method} {path}: {status} {_message(response)} "
                        "(check the token option)"
                    )
                if status < 500:
                    raise ConnectorError(
                        f"gateway {url} refused {method} {path}: {status} {_message(response)}"
                    )
                problem = f"{url}: {status} {_message(response)}"
            if time.monotonic() > deadline:
                break
            time.sleep(BACKOFF_S[min(attempt // len(urls), len(BACKOFF_S) - 1)])
        raise GatewayUnavailableError(
            f"no pafka gateway answered {method} {path} within "
            f"{self.options.request_timeout_ms} ms (last: {problem})"
        )


def _code(response: httpx.Response) -> int | None:
    try:
        return int(response.json().get("error_code"))
    except (ValueError, TypeError, AttributeError):
        return None


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json().get("message") or response.text)
    except (ValueError, AttributeError):
        return response.text[:200]


def _produce_error(topic: str, key: str, response: httpx.Response) -> ConnectorError:
    return ProduceError(
        f"producing to {topic} (Idempotency-Key {key}) failed: "
        f"{response.status_code} {_message(response)}"
    )
