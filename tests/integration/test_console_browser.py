"""The console at ``/ui`` in a real headless Chromium, against the shared local cluster.

Debian's ``chromium`` driven by Playwright (no browser of Playwright's own); every request to
another host is aborted and counted (none may be made), and every request the console makes
must succeed unless the test expects a refusal. One browser for the module, the session's
shared cluster: the module adds about 20 s to a run (13 s of tests, the guarded gateway and
the browser started and stopped once).

Each page renders the cluster's real data (three brokers, the controller, traffic, a topic's
partitions and log offsets, a record's key, value and headers, a group's members and lag); a
topic is created, partitions added, a config set and reset, a record produced, found in the
message browser and the topic deleted, all by clicking and typing; a group's lag is watched
rising and falling, its offsets reset (dry run first) and the group deleted; with tokens on, the
console asks for one, and a token without rights on a topic gets a clear refusal.
Screenshots of each page go to the test run's temporary folder (their path is printed).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.chromium import headless_chromium
from tests.integration.conftest import TEST_BROKER_ENV, own_cluster
from tests.integration.console_page import NOT_YET, WAIT_MS, config_row, console, row, sign_in
from tests.integration.gateway_process import gateway_process

ADMIN_TOKEN, NARROW_TOKEN = "console-admin-token", "console-narrow-token"


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium() as browser:
        yield browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("console-screenshots")
    print(f"console screenshots: {folder}")
    return folder


def test_pages_render_the_clusters_real_data(cluster: Any, chromium: Any, shots: Path) -> None:
    base_url = cluster.gateways[0]
    topic = f"console-view-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=3, replication_factor=2)
    record = {"key": "order-7", "value": {"amount": 12}, "partition": 1}
    produced = httpx.post(f"{base_url}/topics/{topic}", json={"records": [record]}, timeout=30)
    assert produced.status_code == 200, produced.text
    overview = httpx.get(f"{base_url}/v3/clusters", timeout=30).json()["data"][0]

    with console(chromium, base_url) as browser:
        page = browser.open("/overview?refresh_ms=500")
        brokers = page.locator("#brokers-title + .scroll tbody tr")
        brokers.nth(2).wait_for(timeout=WAIT_MS)
        assert brokers.count() == 3
        assert page.locator("#cluster-title").inner_text() == f"Cluster {overview['cluster_id']}"
        controller = page.locator(".card", has_text="Active controller").locator("dd")
        assert controller.inner_text().startswith("controller ")
        traffic = page.locator("#traffic-title ~ .scroll tbody tr")
        traffic.nth(2).wait_for(timeout=WAIT_MS)
        assert traffic.count() == 3
        bytes_in = [traffic.nth(i).locator("td").nth(4).inner_text() for i in range(3)]
        assert any(b != "0 B" for b in bytes_in), bytes_in  # the record produced above
        # Rates need a second reading: the overview redraws itself without a reload.
        page.locator("#rate-in").filter(has_not_text=NOT_YET).wait_for(timeout=WAIT_MS)
        page.screenshot(path=shots / "overview.png", full_page=True)

        page = browser.open(f"/topics?q={topic[:-3].upper()}")
        found = row(page, topic)
        found.wait_for(timeout=WAIT_MS)
        assert found.locator("td").nth(1).inner_text() == "3"
        assert found.locator("td").nth(2).inner_text() == "2"
        page.screenshot(path=shots / "topics.png", full_page=True)

        found.get_by_role("link", name=topic).click()
        partitions = page.locator("#partitions-title ~ .scroll tbody tr")
        partitions.nth(2).wait_for(timeout=WAIT_MS)
        cells = partitions.nth(1).locator("td").all_inner_texts()
        assert cells[4:6] == ["0", "1"], cells  # log start and end of the partition written
        assert len(cells[2].split(",")) == 2, cells
        configs = page.locator("#configs-title ~ .scroll tbody tr", has_text="cleanup.policy")
        configs.wait_for(timeout=WAIT_MS)
        page.screenshot(path=shots / "topic.png", full_page=True)

        partitions.nth(1).get_by_role("link", name="browse").click()
        shown = row(page, "order-7")
        shown.wait_for(timeout=WAIT_MS)
        assert json.loads(shown.locator("td").nth(3).inner_text()) == {"amount": 12}
        page.screenshot(path=shots / "messages.png", full_page=True)

        # A phone's width: the navigation wraps, wide tables scroll inside their own box.
        page.set_viewport_size({"width": 390, "height": 844})
        browser.open("/overview")
        brokers.nth(2).wait_for(timeout=WAIT_MS)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=shots / "overview-phone.png", full_page=True)


def test_create_produce_find_and_delete_a_topic_through_the_ui(
    cluster: Any, chromium: Any, shots: Path
) -> None:
    base_url = cluster.gateways[1]
    topic = f"console-ui-{uuid.uuid4().hex[:8]}"
    with console(chromium, base_url) as browser:
        page = browser.open("/topics")
        page.get_by_label("Name").fill(topic)
        page.get_by_label("Partitions").fill("2")
        page.get_by_label("Replication factor").fill("3")
        page.get_by_role("button", name="Create topic").click()
        page.locator("#topic-name", has_text=topic).wait_for(timeout=WAIT_MS)
        page.locator("#partitions-title ~ .scroll tbody tr").nth(1).wait_for(timeout=WAIT_MS)

        # Add a partition, override a config, then reset it: each shown once redrawn.
        page.get_by_label("New partition count").fill("3")
        page.get_by_role("button", name="Add partitions").click()
        page.get_by_text(f"{topic} now has 3 partitions.").wait_for(timeout=WAIT_MS)
        assert page.locator("#partitions-title ~ .scroll tbody tr").count() == 3
        page.get_by_label("Config", exact=True).select_option("retention.ms")
        page.get_by_label("Value", exact=True).fill("3600000")
        page.get_by_role("button", name="Set config").click()
        page.get_by_text("retention.ms set to 3600000.").wait_for(timeout=WAIT_MS)
        retention = config_row(page, "retention.ms").locator("td")
        assert retention.nth(1).inner_text() == "3600000"
        assert retention.nth(2).inner_text() == "DYNAMIC_TOPIC_CONFIG"
        page.screenshot(path=shots / "topic-altered.png", full_page=True)
        page.get_by_role("button", name="Reset to default").click()
        page.get_by_text("retention.ms reset to its default.").wait_for(timeout=WAIT_MS)
        assert config_row(page, "retention.ms").locator("td").nth(1).inner_text() == "604800000"

        page.get_by_role("link", name="Browse messages").click()
        produce = page.locator("section", has=page.locator("#produce-title"))
        produce.get_by_label("Partition").fill("1")
        produce.get_by_label("Key").fill("user-42")
        produce.get_by_label("Value").fill('{"greeting": "héllo"}')
        produce.get_by_label("Headers").fill("trace-id: abc123\nsource: console")
        produce.get_by_role("button", name="Produce").click()
        produced = produce.get_by_role("status")
        produced.wait_for(timeout=WAIT_MS)
        assert produced.inner_text() == "Produced to partition 1 at offset 0."
        produce.get_by_role("link", name="See it").click()

        browse = page.locator("form", has=page.get_by_role("button", name="Browse"))
        browse.get_by_label("Key contains").fill("user-4")
        browse.get_by_label("Value or header contains").fill("abc1")
        browse.get_by_role("button", name="Browse").click()
        found = row(page, "user-42")
        found.wait_for(timeout=WAIT_MS)
        cells = found.locator("td").all_inner_texts()
        assert cells[0] == "1" or cells[0] == "0", cells
        assert json.loads(cells[3]) == {"greeting": "héllo"}
        assert "trace-id: abc123" in cells[4] and "source: console" in cells[4]
        browse.get_by_label("Key contains").fill("nobody")
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text("0 of 1 records match.").wait_for(timeout=WAIT_MS)

        browser.open(f"/topic/{topic}")
        page.get_by_role("button", name="Delete topic…").click()
        page.get_by_label(f"Type {topic} to confirm").fill(topic)
        page.screenshot(path=shots / "delete-confirmation.png")
        page.locator("#confirm-ok").click()
        page.get_by_text(f"Topic {topic} deleted.").wait_for(timeout=WAIT_MS)
    # Deletion completes when the controller has removed every replica.
    deadline = time.monotonic() + WAIT_MS / 1000
    while topic in httpx.get(f"{base_url}/topics", timeout=30).json():
        assert time.monotonic() < deadline, f"{topic} still listed"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def guarded_gateway(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway of its own over the shared cluster: one token may use every topic, the
    other only topics named ``open-*``."""
    env = {"PAFKA_GATEWAY_TOKENS": f"{ADMIN_TOKEN} *; {NARROW_TOKEN} open-*"}
    with gateway_process(cluster.zk_connect, tmp_path_factory.mktemp("console-gw"), env) as url:
        yield url


def test_a_token_without_rights_sees_a_clear_refusal(
    cluster: Any, chromium: Any, guarded_gateway: str, shots: Path
) -> None:
    topic = f"console-closed-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    # 401s: the first call unsigned, a wrong token, then the page's two calls after signing out
    # (both wait on one dialog); 403s: the topic's partitions and its configs.
    with console(chromium, guarded_gateway, failing=(401, 401, 401, 401, 403, 403)) as browser:
        page = browser.open(f"/topic/{topic}")
        sign_in(page, "not-a-token")
        page.get_by_text("did not accept these credentials").wait_for(timeout=WAIT_MS)
        sign_in(page, NARROW_TOKEN)
        refusal = page.locator(".refusal").first
        refusal.wait_for(timeout=WAIT_MS)
        assert refusal.get_attribute("role") == "alert"
        assert "Refused" in refusal.inner_text()
        assert "no access to topic" in refusal.inner_text()
        assert page.locator("#who").inner_text() == "Signed in as token"
        page.screenshot(path=shots / "refusal.png", full_page=True)

        # Signed out, the page's two calls are refused; the configs' refusal is held back until
        # the person has signed in again on the other call's dialog, so it comes back after the
        # credentials changed: the call goes again with them rather than asking a second time.
        held: list[Any] = []

        def hold(route: Any) -> None:
            if held:
                route.fallback()
            else:
                held.append(route)

        page.route("**/configs", hold)
        page.get_by_role("button", name="Sign out").click()
        sign_in(page, ADMIN_TOKEN)
        page.locator("#who", has_text="Signed in as token").wait_for(timeout=WAIT_MS)
        (configs,) = held
        configs.fulfill(response=configs.fetch())
        page.locator("#partitions-title ~ .scroll tbody tr").first.wait_for(timeout=WAIT_MS)
        assert page.locator(".refusal").count() == 0
        assert not page.get_by_role("dialog", name="Credentials needed").is_visible()


def test_a_groups_lag_rising_and_falling_its_offsets_reset_and_its_deletion(
    cluster: Any, chromium: Any, shots: Path
) -> None:
    base_url = cluster.gateways[0]
    topic, group = f"console-lag-{uuid.uuid4().hex[:8]}", f"console-group-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    with httpx.Client(base_url=base_url, timeout=60) as http:

        def produce(count: int) -> None:
            records = [{"value": {"n": n}} for n in range(count)]
            answer = http.post(f"/topics/{topic}", json={"records": records})
            assert answer.status_code == 200, answer.text

        def commit(offset: int) -> None:
            entry = {"topic": topic, "partition": 0, "offset": offset}
            body = {**member, "offsets": [entry]}
            assert http.post(f"/groups/{group}/offsets", json=body).status_code == 200

        produce(3)
        # A native REST member (a real Kafka group member), alive without heartbeats meanwhile.
        join = {"topics": [topic], "session_timeout_ms": 60_000}
        joined = http.post(f"/groups/{group}/members", json=join).json()
        member = {"member_id": joined["member_id"], "generation": joined["generation"]}
        commit(1)
        try:
            # The one failed call: the reset refused (409) while the member is there.
            with console(chromium, base_url, failing=(409,)) as browser:
                page = browser.open("/groups")
                page.get_by_role("link", name=group).wait_for(timeout=WAIT_MS)
                # Redrawn every 500 ms rather than 3 s, for a quicker test.
                page = browser.open(f"/group/{group}?refresh_ms=500")
                page.locator("#group-state", has_text="Stable").wait_for(timeout=WAIT_MS)
                lags = page.locator("#lags-title ~ .scroll tbody tr")
                assert lags.first.locator("td").all_inner_texts() == [topic, "0", "1", "3", "2"]
                members = page.locator("#members-title ~ .scroll tbody tr")
                assert members.count() == 1
                cells = members.first.locator("td").all_inner_texts()
                assert cells[0] == joined["member_id"] and cells[3] == f"{topic}-0", cells
                assert cells[2] != "", cells  # the member's host
                page.screenshot(path=shots / "group.png", full_page=True)

                # The page redraws itself: lag rises with new records, falls with a commit.
                produce(2)
                page.locator("#group-lag", has_text="4").wait_for(timeout=WAIT_MS)
                commit(5)
                page.locator("#group-lag", has_text="0").wait_for(timeout=WAIT_MS)
                # The line of total lag went through 2, 4 and 0.
                chart = page.get_by_role("img", name="Total lag over the last")
                assert "from 0 to 4, now 0" in (chart.get_attribute("aria-label") or "")

                # A reset is refused while the member is there; previewed, then done once
                # it left; then the group is deleted.
                admin = page.locator("section", has=page.locator("#admin-title"))
                admin.get_by_label("Topic to reset").fill(topic)
                admin.get_by_label("Reset to").select_option("offset")
                admin.get_by_label("Offset", exact=True).fill("2")
                admin.get_by_role("button", name="Reset offsets").click()
                refused = admin.locator(".error", has_text="has 1 members")
                refused.wait_for(timeout=WAIT_MS)
                assert http.delete(f"/groups/{group}/members/{member['member_id']}").is_success
                page.locator("#group-state", has_text="Empty").wait_for(timeout=WAIT_MS)
                admin.get_by_role("button", name="Preview (dry run)").click()
                planned = admin.locator("tbody tr")
                planned.first.wait_for(timeout=WAIT_MS)
                assert planned.first.locator("td").all_inner_texts() == ["0", "5", "2"]
                assert admin.get_by_text("Dry run: nothing was committed.").is_visible()
                page.locator("#group-lag", has_text="0").wait_for(timeout=WAIT_MS)
                admin.get_by_role("button", name="Reset offsets").click()
                admin.get_by_text("Offsets reset:").wait_for(timeout=WAIT_MS)
                page.locator("#group-lag", has_text="3").wait_for(timeout=WAIT_MS)
                page.screenshot(path=shots / "group-reset.png", full_page=True)

                admin.get_by_role("button", name="Delete group…").click()
                page.get_by_label(f"Type {group} to confirm").fill(group)
                page.locator("#confirm-ok").click()
                page.get_by_text(f"Group {group} deleted.").wait_for(timeout=WAIT_MS)
                assert page.get_by_role("link", name=group).count() == 0
        finally:
            http.delete(f"/groups/{group}/members/{joined['member_id']}")


# Benchmark mode: PAFKA_CONSOLE_BENCH_PARTITIONS=10000 times the console on a cluster of its own
# with that many partitions (printed with -s, never asserted).
BENCH_PARTITIONS = int(os.environ.get("PAFKA_CONSOLE_BENCH_PARTITIONS", "0"))
BENCH_TOPIC_PARTITIONS = 1000
BENCH_LOADS = 3


def timed_load(page: Any, url: str, ready: Any) -> float:
    """Seconds from navigating to ``url`` (from a blank page) until ``ready`` is visible."""
    page.goto("about:blank")
    start = time.monotonic()
    page.goto(url)
    ready.wait_for(timeout=120_000)
    return time.monotonic() - start


@pytest.mark.skipif(
    not BENCH_PARTITIONS, reason="benchmark mode: set PAFKA_CONSOLE_BENCH_PARTITIONS=10000"
)
def test_benchmark_the_console_on_many_partitions(
    tmp_path_factory: pytest.TempPathFactory, chromium: Any, shots: Path
) -> None:
    with own_cluster(
        tmp_path_factory,
        "console-bench",
        brokers=3,
        controllers=1,
        gateways=1,
        broker_env=TEST_BROKER_ENV,
    ) as big:
        left = BENCH_PARTITIONS
        while left > 0:
            count = min(left, BENCH_TOPIC_PARTITIONS)
            name = f"bench-{left:06d}"
            big.create_topic(name, partitions=count, replication_factor=1, timeout_s=600)
            left -= count
        base_url = big.gateways[0]
        with console(chromium, base_url) as browser:
            page = browser.page
            total = page.locator(".card", has_text="Partitions").locator(
                "dd", has_text=str(BENCH_PARTITIONS)
            )
            # The first view after the topics were made also waits for the brokers to finish
            # making them and fills the gateway's metadata: reported apart, as a first load.
            first_overview = timed_load(page, f"{base_url}/ui#/overview", total)
            overview = [
                timed_load(page, f"{base_url}/ui#/overview", total) for _ in range(BENCH_LOADS)
            ]
            page.screenshot(path=shots / "overview-bench.png", full_page=True)
            found = page.locator("tbody tr", has_text="bench-").first
            topics = [
                timed_load(page, f"{base_url}/ui#/topics?q=bench", found)
                for _ in range(BENCH_LOADS)
            ]
            first = page.locator("tbody tr").nth(99)
            partitions = [
                timed_load(page, f"{base_url}/ui#/topic/bench-{BENCH_PARTITIONS:06d}", first)
                for _ in range(BENCH_LOADS)
            ]
    print(
        f"console benchmark, {BENCH_PARTITIONS} partitions, first overview "
        f"{first_overview:.3f} s; then best of {BENCH_LOADS}: "
        f"overview {min(overview):.3f} s, topic search {min(topics):.3f} s, "
        f"a topic's first 100 partitions with offsets {min(partitions):.3f} s "
        f"(all: {overview}, {topics}, {partitions})"
    )
