"""``GET /v3/clusters/{id}/throughput``: each broker's traffic counters, read from its own
Prometheus metrics (Kafka's ``BrokerTopicMetrics`` BytesIn, BytesOut, MessagesIn, summed over
topics).

Only those series are asked for (``name[]``): a broker of thousands of partitions would
otherwise render all of theirs for each reading. The counters are totals since the broker
started; the console polls and turns two readings into rates, so the gateway keeps nothing
between requests. A broker whose metrics do not answer
within :data:`SCRAPE_TIMEOUT_S` is reported without counters rather than failing the view.
"""

from __future__ import annotations

import asyncio
import time

import httpx
from fastapi import APIRouter
from pydantic import BaseModel, Field

from pafka.zk.znodes import BROKER_IDS, BrokerInfo
from services.gateway.context import Ctx
from services.gateway.v3 import At

router = APIRouter(prefix="/v3/clusters/{cluster_id}", tags=["console views"])

SCRAPE_TIMEOUT_S = 2.0
PREFIX = "kafka_server_brokertopicmetrics_"
TOTAL = "_total"
FAMILIES = {
    "kafka_server_brokertopicmetrics_bytesin": "bytes_in",
    "kafka_server_brokertopicmetrics_bytesout": "bytes_out",
    "kafka_server_brokertopicmetrics_messagesin": "messages_in",
}


class BrokerTraffic(BaseModel):
    broker_id: int
    bytes_in_total: float | None = Field(description="Bytes appended by produce requests")
    bytes_out_total: float | None = Field(description="Record bytes served to fetches")
    messages_in_total: float | None
    error: str | None = Field(None, description="Why the broker's metrics were not read")


class Throughput(BaseModel):
    read_at_ms: int = Field(description="When the counters were read (the gateway's clock)")
    brokers: list[BrokerTraffic]


def totals(exposition: str) -> dict[str, float]:
    """Each counter of :data:`FAMILIES` summed over its topics, from Prometheus text.

    Only the lines of those counters are parsed: a broker with 10,000 partitions exposes
    tens of thousands of other series, which a full parse would spend a second on.
    """
    found = dict.fromkeys(FAMILIES.values(), 0.0)
    for line in exposition.splitlines():
        if not line.startswith(PREFIX):
            continue
        name, _, rest = line.partition("{") if "{" in line else line.partition(" ")
        if not name.endswith(TOTAL) or (field := FAMILIES.get(name[: -len(TOTAL)])) is None:
            continue
        # The value follows the label set (whose values may hold spaces); no timestamps.
        value = rest[rest.rindex("}") + 1 :] if "{" in line else rest
        found[field] += float(value.split()[0])
    return found


async def _read(client: httpx.AsyncClient, broker: BrokerInfo) -> BrokerTraffic:
    try:
        answer = await client.get(
            f"{broker.control_url.rstrip('/')}/metrics",
            params={"name[]": [family + TOTAL for family in FAMILIES]},
        )
        answer.raise_for_status()
        counted = totals(answer.text)
    except (httpx.HTTPError, ValueError) as exc:
        return BrokerTraffic(
            broker_id=broker.id,
            bytes_in_total=None,
            bytes_out_total=None,
            messages_in_total=None,
            error=str(exc) or type(exc).__name__,
        )
    return BrokerTraffic(
        broker_id=broker.id,
        bytes_in_total=counted["bytes_in"],
        bytes_out_total=counted["bytes_out"],
        messages_in_total=counted["messages_in"],
        error=None,
    )


@router.get(
    "/throughput",
    response_model=Throughput,
    summary="Each broker's traffic counters (totals; rates come from two readings)",
)
async def throughput(at: At, ctx: Ctx) -> Throughput:
    brokers: list[BrokerInfo] = []
    if ctx.zk is not None:
        ids = [int(c) for c in await ctx.zk.get_children(BROKER_IDS) if c.isdigit()]
        got = await ctx.zk.get_many([BrokerInfo.path(b) for b in ids])
        brokers = [BrokerInfo.decode(b, g[0]) for b, g in zip(ids, got, strict=True) if g]
    async with httpx.AsyncClient(timeout=SCRAPE_TIMEOUT_S) as client:
        read = await asyncio.gather(
            *(_read(client, b) for b in sorted(brokers, key=lambda b: b.id))
        )
    return Throughput(read_at_ms=int(time.time() * 1000), brokers=list(read))
