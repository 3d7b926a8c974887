"""The console's consumer groups in a real headless Chromium, against the shared local cluster:
the group search a page at a time, ZooKeeper-era groups shown apart with garbage marked in
place (and deleted once its consumer left), and a group's lag drawn from before its page
opened (the active controller's record).

One browser for the module and the session's shared cluster. The module adds about 25 s to a
run, most of it waiting for the active controller's next cluster-view refresh (every 15 s by
default) to record the history group's lag; that wait begins with the module, so the other
tests overlap it. Groups are made by writing their znodes as ZooKeeper-era clients do (Kafka
0.8's registrations, owners and bare decimal offsets) and, for a broker-coordinated one, by a
native REST member; every node written is deleted at the end. Screenshots go to the test run's
temporary folder (their path is printed).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pafka.zk.znodes import ConsumerGroupZNodes as Z
from pafka.zk.znodes import ZkConsumerRegistration
from tests.integration.chromium import browser_fixture, screenshots_fixture
from tests.integration.console_page import NOT_YET, WAIT_MS, console, row

# A gateway of its own asking for tokens, as the console's tests have it.
from tests.integration.test_console_browser import ADMIN_TOKEN, guarded_gateway

FIXTURES = (guarded_gateway,)
chromium = browser_fixture()
shots = screenshots_fixture("console-groups-screenshots")

ZOOKEEPER_GROUPS = 120
PAGE = 100
HISTORY_WAIT_S = 60
DASH = "\u2013"  # the pager's ranges


def _produce(base_url: str, topic: str, partition: int, count: int) -> None:
    records = [{"value": {"n": n}, "partition": partition} for n in range(count)]
    answer = httpx.post(f"{base_url}/topics/{topic}", json={"records": records}, timeout=30)
    assert answer.status_code == 200, answer.text


def _set(zk: Any, path: str, data: bytes, *, ephemeral: bool = False) -> None:
    if zk.exists(path):
        zk.set(path, data)
    else:
        zk.create(path, data, makepath=True, ephemeral=ephemeral)


def _offsets_alone(zk: Any, groups: list[str], topic: str) -> None:
    """Groups holding only an offset of 0 on partition 0, created in one transaction rather
    than a round trip per node."""
    transaction = zk.transaction()
    for g in groups:
        transaction.create(Z.group_path(g))
        transaction.create(Z.offsets_path(g))
        transaction.create(Z.offsets_topic_path(g, topic))
        transaction.create(Z.offset_path(g, topic, 0), b"0")
    assert all(isinstance(r, str) for r in transaction.commit())


@pytest.fixture(scope="module")
def history_group(cluster: Any) -> Iterator[tuple[str, str]]:
    """A group with lag 3 (offset 1 of 4 records) in ZooKeeper from the module's start, so the
    controller's next refresh records it while the other tests run."""
    topic, group = f"console-hist-{uuid.uuid4().hex[:8]}", f"console-hist-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    _produce(cluster.gateways[0], topic, 0, 4)
    _set(cluster.zk, Z.offset_path(group, topic, 0), b"1")
    try:
        yield topic, group
    finally:
        cluster.zk.delete(Z.group_path(group), recursive=True)


def test_groups_are_searched_a_page_at_a_time_by_name_state_and_kind(
    cluster: Any, chromium: Any, shots: Path, history_group: tuple[str, str]
) -> None:
    base_url = cluster.gateways[0]
    prefix = f"console-page-{uuid.uuid4().hex[:6]}"
    topic = f"{prefix}-topic"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    # Many ZooKeeper-era groups (offsets alone, as Kafka 0.8 left them) and one a broker
    # coordinates, with a live native member.
    many = [f"{prefix}-zk-{i:03d}" for i in range(ZOOKEEPER_GROUPS)]
    _offsets_alone(cluster.zk, many, topic)
    native = f"{prefix}-native"
    with httpx.Client(base_url=base_url, timeout=60) as http:
        joined = http.post(
            f"/groups/{native}/members", json={"topics": [topic], "session_timeout_ms": 60_000}
        ).json()
        try:
            with console(chromium, base_url) as browser:
                page = browser.open(f"/groups?q={prefix.upper()}")
                rows = page.locator("#groups-found ~ .scroll tbody tr")
                rows.nth(PAGE - 1).wait_for(timeout=WAIT_MS)
                assert rows.count() == PAGE
                pager = page.locator(".pager [role=status]")
                assert pager.inner_text() == f"1{DASH}{PAGE} of {ZOOKEEPER_GROUPS + 1}"
                first = rows.first.locator("td").all_inner_texts()
                assert first[:3] == [f"{native}", "Broker", "Stable"], first
                assert rows.nth(1).locator("td").all_inner_texts()[:3] == [
                    f"{prefix}-zk-000",
                    "ZooKeeper",
                    "Empty",
                ]
                page.screenshot(path=shots / "groups-search.png", full_page=True)
                page.get_by_role("button", name="Next").click()
                page.locator(
                    ".pager [role=status]", has_text=f"101{DASH}{ZOOKEEPER_GROUPS + 1}"
                ).wait_for(timeout=WAIT_MS)
                assert rows.count() == ZOOKEEPER_GROUPS + 1 - PAGE

                # Filters by state and kind, answered by the gateway.
                page.get_by_label("State").select_option("Stable")
                page.get_by_role("button", name="Search").click()
                page.locator(".pager [role=status]", has_text=f"1{DASH}1 of 1").wait_for(
                    timeout=WAIT_MS
                )
                assert row(page, native).count() == 1
                page.get_by_label("State").select_option("")
                page.get_by_label("Coordinated by").select_option("zookeeper")
                page.get_by_role("button", name="Search").click()
                page.locator(".pager [role=status]", has_text=f"of {ZOOKEEPER_GROUPS}").wait_for(
                    timeout=WAIT_MS
                )
                assert row(page, native).count() == 0
        finally:
            http.delete(f"/groups/{native}/members/{joined['member_id']}")
            # Brokers may have added nodes of their own under these since.
            for group in many:
                cluster.zk.delete(Z.group_path(group), recursive=True)


def test_a_zookeeper_era_group_is_shown_with_its_owners_offsets_and_garbage_marked(
    cluster: Any, chromium: Any, shots: Path, history_group: tuple[str, str]
) -> None:
    base_url = cluster.gateways[1]
    topic, group = f"console-zk-{uuid.uuid4().hex[:8]}", f"console-zk-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=2, replication_factor=1)
    _produce(base_url, topic, 0, 5)
    _produce(base_url, topic, 1, 3)
    # As Kafka 0.8's ZookeeperConsumerConnector writes them, plus garbage a person left.
    consumer = f"{group}_console-host-{int(time.time() * 1000)}-1a2b3c4d"
    registration = ZkConsumerRegistration(consumer, (topic,), "static", int(time.time() * 1000))
    zk = cluster.zk
    _set(zk, Z.member_path(group, consumer), registration.encode(), ephemeral=True)
    _set(zk, Z.member_path(group, "broken-consumer"), b"{oops", ephemeral=True)
    for p in (0, 1):
        _set(zk, Z.owner_path(group, topic, p), f"{consumer}-0".encode(), ephemeral=True)
    _set(zk, Z.offset_path(group, topic, 0), b"2")
    _set(zk, Z.offset_path(group, topic, 1), b"forty")
    try:
        # The one failed call: the deletion refused (409) while a consumer is registered.
        with console(chromium, base_url, failing=(409,)) as browser:
            page = browser.open(f"/groups?q={group}")
            found = row(page, group)
            found.wait_for(timeout=WAIT_MS)
            cells = found.locator("td").all_inner_texts()
            assert cells[1] == "ZooKeeper" and cells[2].startswith("Stable (unreadable: "), cells
            assert f"/consumers/{group}/ids/broken-consumer" in cells[2]
            page.get_by_role("link", name=group).click()
            page.locator("#group-kind", has_text="ZooKeeper").wait_for(timeout=WAIT_MS)
            assert page.locator("#group-state").inner_text() == "Stable"
            assert page.locator("#group-lag").inner_text() == "3"
            members = page.locator("#members-title ~ .scroll tbody tr")
            assert members.count() == 2
            broken, good = (members.nth(i).locator("td").all_inner_texts() for i in range(2))
            assert good[:3] == [consumer, "/console-host", topic], good
            assert good[4] == NOT_YET
            assert broken[0] == "broken-consumer" and "is malformed" in broken[4], broken
            lags = page.locator("#lags-title ~ .scroll tbody tr")
            assert lags.nth(0).locator("td").all_inner_texts() == [
                topic, "0", f"{consumer}-0", "2", "5", "3", NOT_YET,
            ]  # fmt: skip
            second = lags.nth(1).locator("td").all_inner_texts()
            assert second[:6] == [topic, "1", f"{consumer}-0", "none", "3", NOT_YET], second
            assert "'forty' is not a decimal offset" in second[6]
            # Read-only but for deletion: no reset, and no deletion while a consumer is there.
            assert page.get_by_role("button", name="Reset offsets").count() == 0
            page.screenshot(path=shots / "group-zookeeper.png", full_page=True)
            outcome = page.locator("#group-outcome .error")

            def delete() -> None:
                page.get_by_role("button", name="Delete group…").click()
                page.get_by_label(f"Type {group} to confirm").fill(group)
                page.locator("#confirm-ok").click()

            # Not while a registration is unreadable (its coordinator would not touch the
            # group), nor while a consumer is registered (refused: 409).
            page.get_by_role("button", name="Delete group…").click()  # refused before asking
            refusal = outcome.filter(has_text="the registration of broken-consumer; the nodes of")
            refusal.wait_for(timeout=WAIT_MS)
            assert f"{topic}-1: unreadable" in refusal.inner_text()
            zk.delete(Z.member_path(group, "broken-consumer"))
            zk.set(Z.offset_path(group, topic, 1), b"1")
            members.nth(1).wait_for(state="detached", timeout=WAIT_MS)  # the next reading
            delete()
            outcome.filter(has_text="Error 409").wait_for(timeout=WAIT_MS)  # NON_EMPTY_GROUP
            # Its consumer gone (its ephemeral nodes with it), the group can go.
            zk.delete(Z.member_path(group, consumer))
            for p in (0, 1):
                zk.delete(Z.owner_path(group, topic, p))
            delete()
            page.get_by_text(f"Group {group} deleted.").wait_for(timeout=WAIT_MS)
            assert zk.exists(Z.offset_path(group, topic, 0)) is None
    finally:
        if zk.exists(Z.group_path(group)):
            zk.delete(Z.group_path(group), recursive=True)


def test_a_groups_lag_is_drawn_from_before_its_page_opened(
    cluster: Any, chromium: Any, shots: Path, history_group: tuple[str, str]
) -> None:
    base_url = cluster.gateways[0]
    topic, group = history_group
    url = f"{base_url}/v3/clusters/{_cluster_id(base_url)}/consumer-groups/{group}/lag-history"
    # The controller records at its cluster view's refreshes: wait for the one after the
    # module's start.
    deadline = time.monotonic() + HISTORY_WAIT_S
    while not (history := httpx.get(url, timeout=30).json())["points"]:
        assert time.monotonic() < deadline, history
        time.sleep(0.5)
    assert history["points"][0]["total_lag"] == 3 and history["interval_ms"] > 0, history
    # Lag falls to 1 before the page opens: the recorded 3 is history only the controller has.
    _set(cluster.zk, Z.offset_path(group, topic, 0), b"3")
    with console(chromium, base_url) as browser:
        page = browser.open(f"/group/{group}?kind=zookeeper&refresh_ms=500")
        page.locator("#group-lag", has_text="1").wait_for(timeout=WAIT_MS)
        page.locator("#lag-recorded").wait_for(state="attached", timeout=WAIT_MS)
        source = page.locator("#lag-history-source").inner_text()
        assert "recorded by the active controller" in source, source
        chart = page.get_by_role("img", name="Total lag over the last")
        assert "from 1 to 3, now 1" in (chart.get_attribute("aria-label") or "")
        # Live readings are appended to the recorded line.
        _produce(base_url, topic, 0, 2)
        page.locator("#group-lag", has_text="3").wait_for(timeout=WAIT_MS)
        page.get_by_role("img", name="now 3").wait_for(timeout=WAIT_MS)
        page.screenshot(path=shots / "group-lag-history.png", full_page=True)


def _cluster_id(base_url: str) -> str:
    return str(httpx.get(f"{base_url}/v3/clusters", timeout=30).json()["data"][0]["cluster_id"])


def test_the_group_views_ask_for_credentials_like_every_rest_route(
    cluster: Any, guarded_gateway: str
) -> None:
    topic, group = (
        f"console-rights-{uuid.uuid4().hex[:8]}",
        f"console-rights-{uuid.uuid4().hex[:8]}",
    )
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    _set(cluster.zk, Z.offset_path(group, topic, 0), b"0")
    root = f"{guarded_gateway}/v3/clusters/{_cluster_id(cluster.gateways[0])}"
    views = [
        f"{root}/group-search?q={group}",
        f"{root}/zookeeper-groups/{group}",
        f"{root}/consumer-groups/{group}/lag-history",
    ]
    try:
        for url in views:
            assert httpx.get(url, timeout=30).status_code == 401, url
        auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        found, view, history = (httpx.get(url, headers=auth, timeout=30) for url in views)
        assert [g["consumer_group_id"] for g in found.json()["data"]] == [group], found.text
        assert [(p["topic"], p["committed_offset"]) for p in view.json()["partitions"]] == [
            (topic, 0)
        ], view.text
        assert history.status_code == 200 and history.json()["group"] == group, history.text
    finally:
        cluster.zk.delete(Z.group_path(group), recursive=True)


# Benchmark mode: PAFKA_CONSOLE_BENCH_GROUPS=3000 times the group search with that many more
# (ZooKeeper-era, offsets alone) groups on the shared cluster (printed with -s, never asserted).
BENCH_GROUPS = int(os.environ.get("PAFKA_CONSOLE_BENCH_GROUPS", "0"))
BENCH_CHUNK = 200  # groups per transaction, well under ZooKeeper's 1 MB request limit
BENCH_LOADS = 3


@pytest.mark.skipif(not BENCH_GROUPS, reason="set PAFKA_CONSOLE_BENCH_GROUPS to run")
def test_benchmark_the_group_search_on_many_groups(cluster: Any, chromium: Any) -> None:
    base_url = cluster.gateways[0]
    prefix = f"console-bench-{uuid.uuid4().hex[:6]}"
    topic = f"{prefix}-topic"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    many = [f"{prefix}-{i:05d}" for i in range(BENCH_GROUPS)]
    for begin in range(0, len(many), BENCH_CHUNK):
        _offsets_alone(cluster.zk, many[begin : begin + BENCH_CHUNK], topic)
    search = f"{base_url}/v3/clusters/{_cluster_id(base_url)}/group-search"
    try:
        for _ in range(BENCH_LOADS):
            began = time.perf_counter()
            found = httpx.get(search, params={"q": prefix, "limit": PAGE}, timeout=120).json()
            print(f"group-search of {found['total']} groups: {time.perf_counter() - began:.2f} s")
        with console(chromium, base_url) as browser:
            for _ in range(BENCH_LOADS):
                began = time.perf_counter()
                page = browser.open(f"/groups?q={prefix}&offset={len(many) // 2}")
                rows = page.locator("#groups-found ~ .scroll tbody tr")
                rows.nth(PAGE - 1).wait_for(timeout=120_000)
                print(f"groups page, {len(many)} groups: {time.perf_counter() - began:.2f} s")
                browser.open("/overview")
    finally:
        for group in many:
            cluster.zk.delete(Z.group_path(group), recursive=True)
