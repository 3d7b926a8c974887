"""Client quotas applied to requests as Kafka 2.8's ``KafkaApis`` applies them.

Produce records the request's size against ``producer_byte_rate``; Fetch (consumers only:
followers are never throttled by client quotas) records its response's size against
``consumer_byte_rate``, and a throttled fetch is answered empty, its data taken back from the
sensor; every request records the time it held the event loop against ``request_percentage``.
The answer carries the larger throttle time as ``throttle_time_ms``. Clients of KIP-219 versions
(Produce v6+, Fetch v8+, ...) get their answer at once and the broker then stops reading their
connection for the throttle time; older clients get their answer that much later.

Request time is the loop time the handler's coroutine really ran, step by step (Kafka counts
the network and I/O threads' time, not the time a request waits for data or replication).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Generator
from typing import TYPE_CHECKING, Any

from pafka.protocol.fetch_codec import FetchResponseBody
from pafka.protocol.messages import ApiKey
from pafka.protocol.produce_codec import ProduceResponseBody
from pafka.storage.region import close_regions
from services.broker.quota_manager import PERCENT_PER_SECOND, QuotaManager

if TYPE_CHECKING:  # the handlers import this module (fetch_reads)
    from services.broker.handlers.context import RequestContext

# The first version of each API whose clients throttle themselves (KIP-219's
# ``shouldClientThrottle``); APIs newer than KIP-219 throttle at every version.
_SELF_THROTTLING_FROM = {
    ApiKey.PRODUCE: 6,
    ApiKey.FETCH: 8,
    ApiKey.LIST_OFFSETS: 3,
    ApiKey.METADATA: 6,
    ApiKey.OFFSET_COMMIT: 4,
    ApiKey.OFFSET_FETCH: 4,
    ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 3,
    ApiKey.HEARTBEAT: 2,
    ApiKey.LEAVE_GROUP: 2,
    ApiKey.SYNC_GROUP: 2,
    ApiKey.DESCRIBE_GROUPS: 2,
    ApiKey.LIST_GROUPS: 2,
    ApiKey.API_VERSIONS: 2,
    ApiKey.CREATE_TOPICS: 3,
    ApiKey.DELETE_TOPICS: 2,
    ApiKey.DELETE_RECORDS: 1,
    ApiKey.INIT_PRODUCER_ID: 1,
    ApiKey.ADD_PARTITIONS_TO_TXN: 1,
    ApiKey.ADD_OFFSETS_TO_TXN: 1,
    ApiKey.END_TXN: 1,
    ApiKey.TXN_OFFSET_COMMIT: 1,
    ApiKey.DESCRIBE_CONFIGS: 2,
    ApiKey.ALTER_CONFIGS: 1,
    ApiKey.DESCRIBE_LOG_DIRS: 1,
    ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.DELETE_GROUPS: 1,
}
# Cluster actions and authentication are exempt from request quotas (Kafka's exempt APIs).
_EXEMPT = frozenset(
    {
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
    }
)
CONSUMER_REPLICA_ID = -1


def client_throttles_itself(api_key: int, api_version: int) -> bool:
    return api_version >= _SELF_THROTTLING_FROM.get(ApiKey(api_key), 0)


class TimedCoroutine:
    """Await a coroutine, adding up the time each of its steps held the loop."""

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self._steps = awaitable.__await__()
        self.busy_s = 0.0

    def __await__(self) -> Generator[Any, Any, Any]:
        steps, sent, thrown = self._steps, None, None
        while True:
            started = time.perf_counter()
            try:
                step = steps.throw(thrown) if thrown is not None else steps.send(sent)
            except StopIteration as done:
                self.busy_s += time.perf_counter() - started
                return done.value
            except BaseException:
                self.busy_s += time.perf_counter() - started
                raise
            self.busy_s += time.perf_counter() - started
            try:
                sent, thrown = (yield step), None
            except GeneratorExit:  # this wrapper is being closed: so is the handler
                steps.close()
                raise
            except BaseException as exc:  # cancellation reaches the handler where it waits
                sent, thrown = None, exc


def _user(ctx: RequestContext) -> str:
    return ctx.principal.name


def _client(ctx: RequestContext) -> str:
    return ctx.client_id or ""


def fetch_quota_bytes(ctx: RequestContext, replica_id: int) -> float:
    """The most a consumer's fetch may return: what its quota allows in the windows (Kafka's
    ``getMaxValueInQuotaWindow``); unbounded for followers."""
    if replica_id >= 0:
        return float("inf")
    return ctx.broker.quotas.fetch.max_value_in_window(_user(ctx), _client(ctx))


def apply_quotas(
    ctx: RequestContext,
    quotas: QuotaManager,
    body: Any,
    response: Any,
    request_bytes: int,
    busy_s: float | None,
) -> tuple[Any, int]:
    """Record the request against its client's quotas: the response to send (its throttle
    time set, a throttled fetch emptied) and the throttle time owed."""
    api = ApiKey(ctx.api_key)
    if api is ApiKey.FETCH and int(getattr(body, "replica_id", CONSUMER_REPLICA_ID)) >= 0:
        return response, 0  # a follower's fetch is a cluster action, beyond client quotas
    user, client = _user(ctx), _client(ctx)
    now_ms = quotas.clock_ms()
    request_ms = 0
    # acks=0 produces are not answered, so Kafka does not count their time.
    unanswered = api is ApiKey.PRODUCE and int(body.acks) == 0
    if busy_s is not None and api not in _EXEMPT and not unanswered:
        request_ms = quotas.request.record(user, client, busy_s * PERCENT_PER_SECOND, now_ms)
    bandwidth_ms, bandwidth = 0, quotas.produce
    if api is ApiKey.PRODUCE:
        bandwidth_ms = quotas.produce.record(user, client, request_bytes, now_ms)
    elif api is ApiKey.FETCH:
        bandwidth = quotas.fetch
        size = _fetch_bytes(response)
        bandwidth_ms = quotas.fetch.record(user, client, size, now_ms)
        if max(bandwidth_ms, request_ms) > 0:
            quotas.fetch.unrecord(user, client, size, now_ms)
            response = _emptied(response)
    throttle_ms = max(bandwidth_ms, request_ms)
    if throttle_ms <= 0:
        return response, 0
    if bandwidth_ms > request_ms:
        bandwidth.throttled(user, client, bandwidth_ms, now_ms)
    else:
        quotas.request.throttled(user, client, request_ms, now_ms)
    if isinstance(response, ProduceResponseBody | FetchResponseBody):
        response = dataclasses.replace(response, throttle_time_ms=throttle_ms)
    elif hasattr(response, "throttle_time_ms"):
        response.throttle_time_ms = throttle_ms
    return response, throttle_ms


def _fetch_bytes(response: Any) -> int:
    if not isinstance(response, FetchResponseBody):
        return 0
    return sum(len(p.records) for t in response.responses for p in t.partitions)


def _emptied(response: Any) -> Any:
    """Kafka's ``getThrottledResponse``: no partitions, the session kept; the read regions are
    closed, since nothing will send them."""
    if not isinstance(response, FetchResponseBody):
        return response
    close_regions(p.records for t in response.responses for p in t.partitions)
    return dataclasses.replace(response, responses=[])


async def delay_for_old_client(ctx: RequestContext, throttle_ms: int) -> int:
    """Before KIP-219 the broker held the answer for the throttle; from it, the client waits
    on its own and the connection is muted (the returned time) after the answer."""
    if throttle_ms <= 0:
        return 0
    if client_throttles_itself(ctx.api_key, ctx.api_version):
        return throttle_ms
    await asyncio.sleep(throttle_ms / 1000)
    return 0


async def handle_within_quotas(
    ctx: RequestContext, handling: Awaitable[Any], body: Any, request_bytes: int
) -> tuple[Any, int]:
    """Run a handler and apply its client's quotas: (the response, how long to mute the
    connection after sending it)."""
    quotas = ctx.broker.quotas
    if not (quotas.produce.enabled or quotas.fetch.enabled or quotas.request.enabled):
        return await handling, 0
    busy_s = None
    if quotas.request.enabled:
        timed = TimedCoroutine(handling)
        response = await timed
        busy_s = timed.busy_s
    else:
        response = await handling
    response, throttle_ms = apply_quotas(ctx, quotas, body, response, request_bytes, busy_s)
    return response, await delay_for_old_client(ctx, throttle_ms)
