"""The console's arithmetic (pure): topic search pages, partition health, broker loads, traffic
counters, offset reset targets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pafka.client.cluster import PartitionLeader
from services.gateway.console.group_admin import reset_target
from services.gateway.console.summaries import (
    BrokerLoad,
    broker_loads,
    lagging,
    search,
    topic_health,
)
from services.gateway.console.throughput import totals

names = st.lists(st.text("abAB-_.0", min_size=1, max_size=6), unique=True, max_size=40)


@given(names, st.text("abAB", max_size=2), st.integers(0, 50), st.integers(1, 20))
def test_pages_of_a_search_cover_every_match_once_in_order(
    topics: list[str], query: str, offset: int, limit: int
) -> None:
    found = sorted(t for t in topics if query.lower() in t.lower())
    page = search(topics, query, offset, limit)
    assert page.total == len(found)
    assert list(page.items) == found[offset : offset + limit]
    walked = [
        n
        for start in range(0, len(found), limit)
        for n in search(topics, query, start, limit).items
    ]
    assert walked == found


def test_search_ignores_case() -> None:
    assert search(["Orders", "payments", "ORDERS-dlq"], "orders", 0, 10).items == (
        "ORDERS-dlq",
        "Orders",
    )


def test_replicas_out_of_the_isr_are_lagging_and_no_leader_is_offline() -> None:
    partitions = {
        0: PartitionLeader(leader=1, leader_epoch=0, replicas=(1, 2, 3), isr=(1, 2, 3)),
        1: PartitionLeader(leader=2, leader_epoch=3, replicas=(2, 3, 1), isr=(2,)),
        2: PartitionLeader(leader=-1, leader_epoch=5, replicas=(3, 1, 2), isr=(3,)),
    }
    assert lagging(partitions[1]) == (3, 1)
    health = topic_health("orders", partitions)
    assert (health.partitions, health.replication_factor) == (3, 3)
    assert (health.under_replicated, health.offline) == (2, 1)
    assert broker_loads([partitions]) == {
        1: BrokerLoad(replicas=3, leaders=1),
        2: BrokerLoad(replicas=3, leaders=1),
        3: BrokerLoad(replicas=3, leaders=0),
    }


def test_broker_traffic_sums_each_counter_over_topics() -> None:
    exposition = "\n".join(
        [
            "# TYPE kafka_server_brokertopicmetrics_bytesin counter",
            'kafka_server_brokertopicmetrics_bytesin_total{topic="a"} 100.0',
            'kafka_server_brokertopicmetrics_bytesin_total{topic="b"} 20.0',
            'kafka_server_brokertopicmetrics_bytesin_created{topic="a"} 1.7e9',
            'kafka_server_brokertopicmetrics_bytesout_total{topic="odd} name"} 7.0',
            "# TYPE kafka_server_brokertopicmetrics_messagesin counter",
            'kafka_server_brokertopicmetrics_messagesin_total{topic="a"} 3.0',
            "# TYPE process_cpu_seconds_total counter",
            "process_cpu_seconds_total 5.0",
            "",
        ]
    )
    assert totals(exposition) == {"bytes_in": 120.0, "bytes_out": 7.0, "messages_in": 3.0}


@given(st.integers(0, 100), st.integers(0, 100), st.integers(0, 300))
def test_a_reset_lands_inside_the_log(earliest: int, length: int, offset: int) -> None:
    latest = earliest + length
    assert reset_target("earliest", None, earliest, latest) == earliest
    assert reset_target("latest", None, earliest, latest) == latest
    target = reset_target("offset", offset, earliest, latest)
    assert earliest <= target <= latest
    assert target == offset or not earliest <= offset <= latest
