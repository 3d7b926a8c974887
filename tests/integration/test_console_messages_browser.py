"""The console's messages from a time, its server-side search and topics' sizes on disk, in a
real headless Chromium against the session's shared cluster (as ``test_console_browser.py``:
every other host aborted, every failed call expected).

A partition's records carry timestamps a minute apart (written by confluent-kafka with explicit
CreateTime); the browser picks a local date and time, and the page reads oldest first from the
first record at or after it (Kafka's offsetsForTimes), newest first back from the record before
it, as from an offset; from the log end when none is that late. The gateway
searches the partition by key, value and header, a bounded number of records per request, and
"Continue" goes on from where it stopped. Sizes on disk (DescribeLogDirs) show on the topic list
and a topic's page; a user whose ACLs lack DESCRIBE on the cluster sees "not permitted" there
and the rest of both pages (a gateway of its own deciding by the ACLs). Screenshots go to the
test run's temporary folder. One browser for the module; it adds about 10 s to a run (four
tests of under 2 s each, the ACL gateway started and stopped, a browser launched).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from pafka.admin.acls import add_acls, remove_acls
from pafka.security.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal
from tests.integration.chromium import browser_fixture, screenshots_fixture
from tests.integration.console_page import WAIT_MS, console, row, sign_in
from tests.integration.gateway_process import gateway_process

# 2026-03-01 12:00:00 UTC; record n is written at T0 + n minutes.
T0_MS = 1_772_366_400_000
MINUTE_MS = 60_000
RECORDS = 30
NEEDLES = (3, 17, 25)  # the records whose value holds "needle"


chromium = browser_fixture()
shots = screenshots_fixture("console-messages-screenshots")


@pytest.fixture(scope="module")
def timed_topic(cluster: Any) -> str:
    """One partition of RECORDS records, a minute apart, keyed ``k-n``, each with a header."""
    topic = f"console-time-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
    for n in range(RECORDS):
        value = {"n": n, "note": "needle" if n in NEEDLES else "hay"}
        producer.produce(
            topic,
            key=f"k-{n}".encode(),
            value=json.dumps(value).encode(),
            headers=[("trace", f"t{n}".encode())],
            partition=0,
            timestamp=T0_MS + n * MINUTE_MS,
        )
    assert producer.flush(30) == 0
    return topic


def local_time(page: Any, ms: int) -> str:
    """``ms`` as the browser's ``datetime-local`` text in its own time zone."""
    return str(
        page.evaluate(
            """ms => { const d = new Date(ms); const p = (n) => String(n).padStart(2, "0");
            return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}` +
              `T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; }""",
            ms,
        )
    )


def offsets_shown(page: Any, section: Any) -> list[str]:
    return [r.locator("td").first.inner_text() for r in section.locator("tbody tr").all()]


def test_browse_from_a_time_reads_on_from_the_first_record_at_or_after_it_or_back_from_it(
    cluster: Any, chromium: Any, shots: Path, timed_topic: str
) -> None:
    base_url = cluster.gateways[0]
    # The REST view alone: one partition, or all of them; past every record, the log end.
    views = f"{base_url}/v3/clusters/{cluster_id(base_url)}/topics/{timed_topic}"
    got = httpx.get(f"{views}/offsets-for-times", params={"timestamp_ms": T0_MS + 1}, timeout=30)
    assert got.json()["data"] == [{"partition_id": 0, "offset": 1, "found": True}], got.text
    late = {"timestamp_ms": T0_MS + RECORDS * MINUTE_MS, "partition_id": 0}
    got = httpx.get(f"{views}/offsets-for-times", params=late, timeout=30)
    assert got.json()["data"] == [{"partition_id": 0, "offset": RECORDS, "found": False}]

    with console(chromium, base_url) as browser:
        page = browser.open(f"/messages?topic={timed_topic}&partition=0")
        browse = page.locator("form", has=page.get_by_role("button", name="Browse"))
        when = browse.get_by_label("Or from time")
        zone = browse.locator("label", has_text="Or from time").inner_text()
        assert "UTC" in zone, zone  # the zone the time is read in is shown
        # Half a minute past record 10's time: record 11 is the first at or after it.
        when.fill(local_time(page, T0_MS + 10 * MINUTE_MS + 30_000))
        browse.get_by_label("Order").select_option("oldest")
        browse.get_by_label("At most").fill("5")
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text("is offset 11: from there, oldest first.").wait_for(timeout=WAIT_MS)
        records = page.locator("section", has=page.locator("#records-title"))
        assert offsets_shown(page, records) == ["11", "12", "13", "14", "15"]
        assert "2026-03-01 12:11:00 UTC" in records.locator("tbody tr").first.inner_text()
        page.screenshot(path=shots / "messages-from-time.png", full_page=True)

        # Exactly a record's time finds that record; later than all of them, the log end.
        browse.get_by_label("Or from time").fill(local_time(page, T0_MS + 20 * MINUTE_MS))
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text("is offset 20: from there").wait_for(timeout=WAIT_MS)
        browse.get_by_label("Or from time").fill(local_time(page, T0_MS + RECORDS * MINUTE_MS))
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text(f"from the log end, offset {RECORDS}.").wait_for(timeout=WAIT_MS)
        assert records.locator("tbody tr").count() == 0

        # Newest first reads back from the time, as from an offset: the records before it.
        browse.get_by_label("Order").select_option("newest")
        when.fill(local_time(page, T0_MS + 10 * MINUTE_MS + 30_000))
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text("is offset 11: the records before it, newest first.").wait_for(
            timeout=WAIT_MS
        )
        assert offsets_shown(page, records) == ["10", "9", "8", "7", "6"]
        # Later than every record: the newest records.
        when.fill(local_time(page, T0_MS + RECORDS * MINUTE_MS))
        browse.get_by_role("button", name="Browse").click()
        page.get_by_text(f"offset {RECORDS}, newest first.").wait_for(timeout=WAIT_MS)
        assert offsets_shown(page, records) == [str(RECORDS - 1 - n) for n in range(5)]


def test_the_gateway_searches_the_partition_a_bounded_scan_at_a_time(
    cluster: Any, chromium: Any, shots: Path, timed_topic: str
) -> None:
    base_url = cluster.gateways[1]
    with console(chromium, base_url) as browser:
        page = browser.open(f"/messages?topic={timed_topic}&partition=0&limit=5")
        search = page.locator("section", has=page.locator("#search-title"))
        found = search.locator("#search-outcome")
        progress = search.locator("#search-progress")

        # Newest first, 10 records a request: each "Continue" goes on below the last.
        search.get_by_label("Value contains", exact=True).fill("needle")
        search.get_by_label("Records to scan").fill("10")
        search.get_by_role("button", name="Search").click()
        progress.filter(has_text="Scanned 10 records, up to offset 20; 1 found.").wait_for(
            timeout=WAIT_MS
        )
        assert offsets_shown(page, found) == ["25"]
        search.get_by_role("button", name="Continue").click()
        progress.filter(has_text="Scanned 20 records, up to offset 10; 2 found.").wait_for(
            timeout=WAIT_MS
        )
        search.get_by_role("button", name="Continue").click()
        progress.filter(has_text="Reached the start of the partition.").wait_for(timeout=WAIT_MS)
        assert "Scanned 30 records, up to offset 0; 3 found." in progress.inner_text()
        assert offsets_shown(page, found) == ["25", "17", "3"]
        assert search.get_by_role("button", name="Continue").count() == 0
        hit = row(page, "k-17").filter(has_text="needle")
        assert json.loads(hit.locator("td").nth(3).inner_text()) == {"n": 17, "note": "needle"}
        page.screenshot(path=shots / "messages-search.png", full_page=True)

        # From an offset typed, newest first: that offset is the first looked at.
        search.get_by_label("Start at offset").fill("17")
        search.get_by_role("button", name="Search").click()
        progress.filter(has_text="Scanned 10 records, up to offset 8; 1 found.").wait_for(
            timeout=WAIT_MS
        )
        assert offsets_shown(page, found) == ["17"]
        search.get_by_label("Start at offset").fill("")

        # Key equals (not contains), oldest first.
        search.get_by_label("Value contains", exact=True).fill("")
        search.get_by_label("Key equals").fill("k-1")
        search.get_by_label("Search order").select_option("forward")
        search.get_by_label("Records to scan").fill("1000")
        search.get_by_role("button", name="Search").click()
        progress.filter(has_text="Reached the end of the partition.").wait_for(timeout=WAIT_MS)
        assert offsets_shown(page, found) == ["1"]

        # A header by name and value: t2, t20 ... t29.
        search.get_by_label("Key equals").fill("")
        search.get_by_label("Header name").fill("trace")
        search.get_by_label("Header value contains").fill("t2")
        search.get_by_role("button", name="Search").click()
        progress.filter(has_text="11 found.").wait_for(timeout=WAIT_MS)
        assert offsets_shown(page, found) == [str(n) for n in (2, *range(20, 30))]


def test_topic_sizes_on_the_topics_list_and_the_topic_page(
    cluster: Any, chromium: Any, shots: Path
) -> None:
    base_url = cluster.gateways[0]
    topic = f"console-size-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    records = [{"value": {"n": n, "pad": "x" * 200}, "partition": 0} for n in range(20)]
    produced = httpx.post(f"{base_url}/topics/{topic}", json={"records": records}, timeout=30)
    assert produced.status_code == 200, produced.text
    views = f"{base_url}/v3/clusters/{cluster_id(base_url)}"
    sizes = httpx.get(f"{views}/topics/{topic}/partition-sizes", timeout=30).json()
    first, second = sizes["data"]
    assert first["size_bytes"] > 20 * 200 and second["size_bytes"] == 0, sizes
    assert len(first["replicas"]) == 2
    assert first["leader_id"] == cluster.partition_state(topic, 0).leader
    assert sizes["size_bytes"] == first["size_bytes"]
    assert sizes["replicas_size_bytes"] >= sizes["size_bytes"]
    listed = httpx.get(f"{views}/topic-sizes", params={"topic_name": [topic]}, timeout=30).json()
    assert listed["data"][0]["size_bytes"] == first["size_bytes"], listed

    with console(chromium, base_url) as browser:
        page = browser.open(f"/topics?q={topic}")
        found = row(page, topic)
        size = found.locator("td").nth(5)
        size.filter(has_text="KiB").wait_for(timeout=WAIT_MS)
        shown = size.inner_text()
        page.screenshot(path=shots / "topics-sizes.png", full_page=True)

        found.get_by_role("link", name=topic).click()
        summary = page.locator("#topic-size")
        summary.filter(has_text="with every replica").wait_for(timeout=WAIT_MS)
        assert summary.inner_text().startswith(f"Size: {shown} (")
        cells = page.locator("#partitions-title ~ .scroll tbody tr").nth(0).locator("td")
        assert cells.nth(6).inner_text() == shown
        replicas = cells.nth(7).inner_text().split(", ")
        assert len(replicas) == 2 and all(": " in r for r in replicas), replicas
        page.screenshot(path=shots / "topic-sizes.png", full_page=True)


ALICE_TOKEN = "console-sizes-alice"


@pytest.fixture(scope="module")
def acl_gateway(cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A gateway of its own over the shared cluster deciding by the ACLs in ZooKeeper, its one
    token standing for User:console-alice."""
    env = {
        "PAFKA_GATEWAY_AUTHORIZER": "acl",
        "PAFKA_GATEWAY_TOKENS": f"{ALICE_TOKEN} User:console-alice",
    }
    with gateway_process(cluster.zk_connect, tmp_path_factory.mktemp("console-acl-gw"), env) as url:
        yield url


def test_without_describe_on_the_cluster_sizes_say_not_permitted(
    cluster: Any, chromium: Any, acl_gateway: str, shots: Path
) -> None:
    topic = f"console-nosize-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    pattern = ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL)
    alice = KafkaPrincipal.parse("User:console-alice")
    grants = [
        AclBinding(pattern, AccessControlEntry(alice, "*", operation, PermissionType.ALLOW))
        for operation in (Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS)
    ]
    add_acls(cluster.zk, grants)
    try:
        # The gateway learns of new ACLs from their change notification: wait for it.
        described = (
            f"{acl_gateway}/v3/clusters/{cluster_id(acl_gateway, ALICE_TOKEN)}/topics/{topic}"
        )
        deadline = time.monotonic() + WAIT_MS / 1000
        while httpx.get(described, headers=bearer(ALICE_TOKEN), timeout=30).status_code != 200:
            assert time.monotonic() < deadline, "the gateway never applied the new ACLs"
            time.sleep(0.1)
        # The two refusals: the list's sizes and the topic page's (DescribeLogDirs needs
        # DESCRIBE on the cluster); every other call of both pages succeeds.
        with console(chromium, acl_gateway, failing=(401, 403, 403)) as browser:
            page = browser.open("/topics")
            sign_in(page, ALICE_TOKEN)
            found = row(page, topic)
            found.locator("td").nth(5).filter(has_text="not permitted").wait_for(timeout=WAIT_MS)
            assert page.locator("tbody tr").count() == 1  # only the topic it may describe
            found.get_by_role("link", name=topic).click()
            page.locator("#topic-size", has_text="Size: not permitted").wait_for(timeout=WAIT_MS)
            cells = page.locator("#partitions-title ~ .scroll tbody tr").first.locator("td")
            assert cells.nth(6).inner_text() == "not permitted"
            assert cells.nth(4).inner_text() == "0"  # the rest of the page is there
            page.locator("#configs-title ~ .scroll tbody tr").first.wait_for(timeout=WAIT_MS)
            assert page.locator(".refusal, .error").count() == 0
            page.screenshot(path=shots / "topic-size-not-permitted.png", full_page=True)
    finally:
        remove_acls(
            cluster.zk,
            AclBindingFilter(
                ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
                AccessControlEntryFilter(None, None, Operation.ANY, PermissionType.ANY),
            ),
        )


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def cluster_id(base_url: str, token: str | None = None) -> str:
    listing = httpx.get(f"{base_url}/v3/clusters", headers=bearer(token), timeout=30).json()
    return str(listing["data"][0]["cluster_id"])
