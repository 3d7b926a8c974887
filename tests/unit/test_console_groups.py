"""The console's group search (filters and paging), ZooKeeper-era groups read from their
znodes (garbage marks only its own member or partition), and the controller's lag history
(a bounded ring per group)."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.groups.zk_coordinated import partition_number
from pafka.zk.znodes import ZkConsumerRegistration
from services.controller.cluster_view_sources import GroupOffsets
from services.controller.lag_history import LagHistory, LagPoint, total_lags
from services.gateway.console import zk_group_view
from services.gateway.console.group_paging import Kind, ListedGroup, ZkRegistry, merge, search

G = "orders"
KAFKA08_ID = f"{G}_web-3-1700000000000-1a2b3c4d"


def _listed(n: int) -> list[ListedGroup]:
    states = ["Stable", "Empty", "PreparingRebalance"]
    return [
        ListedGroup(f"group-{i:04d}", states[i % 3], Kind.ZOOKEEPER if i % 5 == 0 else Kind.BROKER)
        for i in range(n)
    ]


# -- paging --------------------------------------------------------------------------------------


def test_search_filters_by_name_state_and_kind_then_pages_the_sorted_ids() -> None:
    groups = _listed(3000)
    page = search(groups, "GROUP-01", "stable", Kind.BROKER, offset=10, limit=5)
    matching = [
        g
        for g in groups
        if "group-01" in g.group_id and g.state == "Stable" and g.kind is Kind.BROKER
    ]
    assert page.total == len(matching)
    assert page.items == tuple(sorted(matching, key=lambda g: g.group_id)[10:15])


def test_a_state_in_confluents_spelling_matches_kafkas() -> None:
    page = search(_listed(9), state="PREPARING_REBALANCE")
    assert {g.state for g in page.items} == {"PreparingRebalance"} and page.total == 3


@given(st.lists(st.text(max_size=8), unique=True), st.integers(0, 20), st.integers(1, 20))
def test_pages_cover_every_match_once_in_order(ids: list[str], offset: int, limit: int) -> None:
    groups = [ListedGroup(i, "Empty", Kind.BROKER) for i in ids]
    page = search(groups, offset=offset, limit=limit)
    assert page.total == len(ids)
    assert [g.group_id for g in page.items] == sorted(ids)[offset : offset + limit]


def test_merge_keeps_the_brokers_state_and_zookeepers_kind_and_problem() -> None:
    merged = merge(
        {"a": "Stable", "b": "Empty"},
        {
            "b": ZkRegistry(Kind.ZOOKEEPER, 0, "znode x is malformed"),
            "c": ZkRegistry(Kind.ZOOKEEPER, 2),
            "d": ZkRegistry(Kind.BROKER),
        },
    )
    assert merged["a"] == ListedGroup("a", "Stable", Kind.BROKER)
    assert merged["b"] == ListedGroup("b", "Empty", Kind.ZOOKEEPER, "znode x is malformed")
    assert merged["c"] == ListedGroup("c", "Stable", Kind.ZOOKEEPER)  # only ZooKeeper knows it
    # Broker-coordinated and not listed: only its coordinator knows its state.
    assert merged["d"] == ListedGroup("d", None, Kind.BROKER)
    assert search(merged.values(), state="empty").total == 1  # b


# -- ZooKeeper-era groups ------------------------------------------------------------------------


def _registration(topics: tuple[str, ...] = ("t",)) -> bytes:
    return ZkConsumerRegistration(KAFKA08_ID, topics, "static", 1_700_000_000_000).encode()


PAFKA_MEMBER = json.dumps(
    {"version": 1, "client_id": "c", "client_host": "/h", "session_timeout_ms": 10000,
     "rebalance_timeout_ms": 10000, "protocol_type": "consumer", "protocols": []}
).encode()  # fmt: skip


def test_registered_clients_make_a_zookeeper_group() -> None:
    found = zk_group_view.registry(G, ["ids", "owners", "offsets"], {KAFKA08_ID: _registration()})
    assert found == ZkRegistry(Kind.ZOOKEEPER, 1)


def test_offsets_without_pafkas_commit_records_make_a_zookeeper_group() -> None:
    assert zk_group_view.registry(G, ["offsets"], {}).kind is Kind.ZOOKEEPER
    assert zk_group_view.registry(G, ["offsets", "offset_commits"], {}).kind is Kind.BROKER


def test_a_garbage_registration_is_a_problem_named_not_an_error() -> None:
    found = zk_group_view.registry(G, ["ids"], {"c1": b"{not json"})
    assert found.kind is Kind.ZOOKEEPER and found.live_members == 0
    assert found.problem is not None and f"/consumers/{G}/ids/c1" in found.problem


def test_members_with_their_hosts_and_a_broken_one_marked() -> None:
    members = zk_group_view.members(
        G, {KAFKA08_ID: _registration(("t", "u")), "zz": b"\xff\xfe", "web:uuid": b"t"}
    )
    assert [m.consumer_id for m in members] == [KAFKA08_ID, "web:uuid", "zz"]
    good, pykafka, broken = members
    assert (good.host, good.topics, good.registered_at_ms) == (
        "/web-3",
        ("t", "u"),
        1_700_000_000_000,
    )
    assert good.problem is None
    assert (pykafka.host, pykafka.topics) == ("/web", ("t",))
    assert broken.problem is not None and broken.problem.startswith(f"znode /consumers/{G}/ids/zz")


def test_partitions_join_owners_and_offsets_and_mark_garbage_per_partition() -> None:
    owners = {("t", "0"): f"{KAFKA08_ID}-0".encode(), ("t", "1-2"): b"x-0", ("t", "x"): b"y"}
    offsets = {("t", "0"): b"42", ("t", "1"): b"forty", ("t", "2"): b"7", ("u", "-1"): b"3"}
    found, stray = zk_group_view.partitions(G, owners, offsets)
    by_tp = {(p.topic, p.partition): p for p in found}
    assert by_tp[("t", 0)] == zk_group_view.ZkPartition("t", 0, f"{KAFKA08_ID}-0", 42)
    assert by_tp[("t", 1)].committed_offset is None
    assert "'forty' is not a decimal offset" in (by_tp[("t", 1)].problem or "")
    assert by_tp[("t", 2)] == zk_group_view.ZkPartition("t", 2, "x-0", 7)  # pykafka's owner name
    assert sorted(stray) == [
        f"/consumers/{G}/offsets/u/-1 does not name a partition",
        f"/consumers/{G}/owners/t/x does not name a partition",
    ]


@given(
    st.dictionaries(st.tuples(st.sampled_from("tu"), st.text(max_size=6)), st.binary(max_size=30))
)
def test_any_bytes_in_owner_and_offset_nodes_give_partitions_or_problems(
    nodes: dict[tuple[str, str], bytes],
) -> None:
    found, stray = zk_group_view.partitions(G, nodes, {})
    named = {(t, n) for t, n in nodes if partition_number(n, broker_prefixed=True) is not None}
    # Each node is either a partition's owner (or its problem) or a stray named as such.
    assert len(stray) == len(nodes) - len(named)
    for p in found:
        assert (p.owner is None) != (p.problem is None)


def test_lag_needs_both_ends_and_is_never_negative() -> None:
    assert zk_group_view.lag(None, 5) is None and zk_group_view.lag(5, None) is None
    assert zk_group_view.lag(3, 10) == 7 and zk_group_view.lag(12, 10) == 0


# -- lag history ---------------------------------------------------------------------------------


def test_total_lag_sums_a_groups_partitions_and_skips_a_partial_sum() -> None:
    ends = {("t", 0): 10, ("t", 1): 5}
    groups = [
        GroupOffsets("whole", 1, {("t", 0): 4, ("t", 1): 6}),
        GroupOffsets("partial", 1, {("t", 0): 4, ("t", 9): 0}),
        GroupOffsets("none", 0, {}),
    ]
    assert total_lags(groups, ends) == {"whole": 6}


def test_the_ring_keeps_one_point_per_interval_within_the_window() -> None:
    history = LagHistory(window_ms=10_000, interval_ms=1000)
    for second in range(30):
        history.record(second * 1000, {"g": second})
        history.record(second * 1000 + 300, {"g": -1})  # too soon: not kept
    points = history.points("g")
    assert points == [LagPoint(t * 1000, t) for t in range(19, 30)]
    assert history.points("other") == []


def test_a_group_gone_from_the_readings_leaves_with_the_window() -> None:
    history = LagHistory(window_ms=3000, interval_ms=1000)
    history.record(0, {"gone": 5, "stays": 1})
    for t in range(1, 5):
        history.record(t * 1000, {"stays": 1})
    assert history.points("gone") == [] and len(history.points("stays")) == 4


@given(st.lists(st.integers(0, 5000), max_size=200), st.integers(100, 2000), st.integers(1, 10))
def test_the_ring_is_bounded_and_ordered(steps: list[int], interval_ms: int, periods: int) -> None:
    history = LagHistory(window_ms=interval_ms * periods, interval_ms=interval_ms)
    now = 0
    for step in steps:
        now += step
        history.record(now, {"g": step})
    points = history.points("g")
    assert len(points) <= periods + 1
    assert all(
        b.time_ms - a.time_ms >= interval_ms - interval_ms // 10
        for a, b in itertools.pairwise(points)
    )
    assert all(points[-1].time_ms - p.time_ms <= history.window_ms for p in points)


def test_clearing_forgets_everything_and_a_bad_window_is_refused() -> None:
    history = LagHistory(window_ms=2000, interval_ms=1000)
    history.record(0, {"g": 1})
    history.clear()
    assert history.points("g") == [] and history.due(1)
    with pytest.raises(ValueError, match="window"):
        LagHistory(window_ms=500, interval_ms=1000)
