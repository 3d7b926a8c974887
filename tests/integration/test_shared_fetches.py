"""Held Fetches shared by the readers of one leader (:mod:`pafka.client.shared_fetches`),
against real brokers: readers waiting together go in one Fetch per leader, each gets its own
partition's batches as they come, a reader joining later is not held behind a held Fetch, a
reader coming back finds its partition fetched ahead, and each wait, error and close ends its
readers as a Fetch of their own would."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pafka.client import shared_fetches
from pafka.client.batch_fetch import BatchesResult
from pafka.client.batch_reading import select_records
from pafka.client.cluster import ClusterClient
from pafka.client.producer import Producer
from pafka.client.shared_fetches import SharedFetches
from pafka.errors import OffsetOutOfRangeError, PafkaError, UnknownTopicOrPartitionError

PARTITIONS = 4
HELD_MS = 30_000
# Long enough for a Fetch to reach the broker and be held there.
SETTLE_S = 0.5


def new_topic(cluster: Any) -> str:
    name = f"shared-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions=PARTITIONS, replication_factor=1)
    return name


def bootstrap(cluster: Any) -> list[tuple[str, int]]:
    return [("127.0.0.1", int(a.rsplit(":", 1)[1])) for a in cluster.bootstrap.split(",")]


def run(
    cluster: Any,
    scenario: Callable[[ClusterClient, list[int]], Awaitable[None]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Run ``scenario`` with a client and the count of Fetches sent so far (one element). A
    Fetch is held as long as its readers wait, so that counts do not depend on timing."""
    monkeypatch.setattr(shared_fetches, "MAX_HOLD_MS", HELD_MS)

    async def main() -> None:
        client = ClusterClient(bootstrap=bootstrap(cluster), client_id="shared-fetches-test")
        sent = [0]
        real = shared_fetches.send_fetch

        async def counted(*args: Any, **kwargs: Any) -> Any:
            sent[0] += 1
            return await real(*args, **kwargs)

        monkeypatch.setattr(shared_fetches, "send_fetch", counted)
        try:
            await scenario(client, sent)
        finally:
            await client.close()

    asyncio.run(main())


def values(result: BatchesResult) -> list[bytes | None]:
    data = b"".join(result.chunks)
    records, _ = select_records(data, 0, max_records=1000, high_watermark=result.high_watermark)
    return [r.value for r in records]


async def leaders(client: ClusterClient, topic: str) -> dict[int, int]:
    info = await client.topic(topic, refresh=True)
    return {p: info.partitions[p].leader for p in range(PARTITIONS)}


def test_readers_waiting_together_share_a_fetch_and_each_gets_its_own_batches(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        shared, producer = SharedFetches(client), Producer(client, linger_ms=0)
        led_by = await leaders(client, topic)
        readers = {
            p: asyncio.ensure_future(
                shared.read(topic, p, 0, max_records=100, max_bytes=1 << 20, max_wait_ms=HELD_MS)
            )
            for p in range(PARTITIONS)
        }
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == len(set(led_by.values()))  # one Fetch per leader, not per reader
        assert not any(r.done() for r in readers.values())

        await producer.send_columns(topic, 2, None, [b"two"])
        got = await asyncio.wait_for(readers[2], HELD_MS / 1000)
        assert values(got) == [b"two"] and got.next_offset == 1 and got.high_watermark == 1
        await asyncio.sleep(SETTLE_S)
        others = [p for p in range(PARTITIONS) if p != 2]
        assert not any(readers[p].done() for p in others)
        # The others of partition 2's leader went on in one new Fetch, with partition 2
        # fetched ahead in it from offset 1.
        assert sent[0] == len(set(led_by.values())) + 1

        for p in others:
            await producer.send_columns(topic, p, None, [b"v%d" % p])
        for p in others:
            assert values(await asyncio.wait_for(readers[p], HELD_MS / 1000)) == [b"v%d" % p]
        await producer.close()
        await shared.close()

    run(cluster, scenario, monkeypatch)


def test_a_reader_joining_while_a_fetch_is_held_is_not_held_behind_it(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        shared, producer = SharedFetches(client), Producer(client, linger_ms=0)
        idle = [
            asyncio.ensure_future(
                shared.read(topic, p, 0, max_records=10, max_bytes=1 << 20, max_wait_ms=HELD_MS)
            )
            for p in range(1, PARTITIONS)
        ]
        await asyncio.sleep(SETTLE_S)
        await producer.send_columns(topic, 0, None, [b"late"])
        late = await asyncio.wait_for(
            shared.read(topic, 0, 0, max_records=10, max_bytes=1 << 20, max_wait_ms=HELD_MS),
            HELD_MS / 1000,
        )
        assert values(late) == [b"late"]
        assert not any(r.done() for r in idle)  # answered while the others' Fetches are held
        await producer.close()
        await shared.close()
        for reader in idle:  # a close ends the readers still waiting, not retriable
            with pytest.raises(PafkaError) as failed:
                await reader
            assert not failed.value.retriable

    run(cluster, scenario, monkeypatch)


def test_a_wait_ends_on_time_without_cutting_the_shared_fetch_short(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        shared = SharedFetches(client)
        led_by = await leaders(client, topic)
        p, q = next((p, q) for p in led_by for q in led_by if p < q and led_by[p] == led_by[q])
        patient = asyncio.ensure_future(
            shared.read(topic, q, 0, max_records=10, max_bytes=1024, max_wait_ms=HELD_MS)
        )
        short = await shared.read(topic, p, 0, max_records=10, max_bytes=1024, max_wait_ms=300)
        # Nothing came, and no answer either: the partition's offsets are not known.
        assert (short.chunks, short.next_offset, short.high_watermark) == ([], 0, -1)
        await asyncio.sleep(SETTLE_S)
        assert not patient.done()
        assert sent[0] == 1  # the short wait's end sent no Fetch for the patient reader
        patient.cancel()
        await shared.close()

    run(cluster, scenario, monkeypatch)


def test_a_wait_ends_with_nothing_and_errors_are_the_partitions(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        shared = SharedFetches(client)
        monkeypatch.setattr(shared_fetches, "MAX_HOLD_MS", 100)
        # Held 100 ms at a time: the answers before the wait ends give the partition's offsets.
        empty = await shared.read(topic, 1, 0, max_records=10, max_bytes=1024, max_wait_ms=500)
        assert (empty.chunks, empty.next_offset, empty.high_watermark) == ([], 0, 0)
        with pytest.raises(OffsetOutOfRangeError):
            await shared.read(topic, 1, 5, max_records=10, max_bytes=1024, max_wait_ms=300)
        with pytest.raises(UnknownTopicOrPartitionError):
            await shared.read(topic, PARTITIONS, 0, max_records=1, max_bytes=1, max_wait_ms=0)
        with pytest.raises(ValueError):
            await shared.read(topic, 0, -1, max_records=1, max_bytes=1, max_wait_ms=0)
        await shared.close()

    run(cluster, scenario, monkeypatch)


def test_a_reader_coming_back_takes_the_fetch_made_ahead_for_it(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        shared, producer = SharedFetches(client), Producer(client, linger_ms=0)

        async def read(offset: int) -> BatchesResult:
            return await asyncio.wait_for(
                shared.read(
                    topic, 0, offset, max_records=100, max_bytes=1 << 20, max_wait_ms=HELD_MS
                ),
                HELD_MS / 1000,
            )

        first = asyncio.ensure_future(read(0))
        await asyncio.sleep(SETTLE_S)
        await producer.send_columns(topic, 0, None, [b"a"])
        assert values(await first) == [b"a"]
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 2  # the first, and offset 1 fetched ahead at once

        # Appended before the reader comes back: the Fetch held ahead brought it already.
        await producer.send_columns(topic, 0, None, [b"b"])
        await asyncio.sleep(SETTLE_S)
        second = await read(1)
        assert values(second) == [b"b"] and second.next_offset == 2
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 3  # offset 2 fetched ahead as the reader took offset 1's answer

        # Coming back before anything is appended: it waits in the Fetch held ahead.
        third = asyncio.ensure_future(read(2))
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 3 and not third.done()
        await producer.send_columns(topic, 0, None, [b"c"])
        assert values(await third) == [b"c"]

        # A read from elsewhere does not take what was fetched ahead from offset 3.
        again = await read(0)
        assert values(again) == [b"a", b"b", b"c"]
        await producer.close()
        await shared.close()

    run(cluster, scenario, monkeypatch)


def test_what_was_fetched_ahead_for_a_reader_that_stays_away_is_dropped(
    cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = new_topic(cluster)

    async def scenario(client: ClusterClient, sent: list[int]) -> None:
        monkeypatch.setattr(shared_fetches, "MAX_HOLD_MS", 200)
        shared, producer = SharedFetches(client), Producer(client, linger_ms=0)
        await producer.send_columns(topic, 0, None, [b"a"])
        # Its answer ends its read: nothing is fetched ahead for it.
        done = await shared.read(topic, 0, 0, max_records=1, max_bytes=1 << 20, max_wait_ms=5000)
        assert values(done) == [b"a"]
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 1

        first = await shared.read(topic, 0, 0, max_records=10, max_bytes=1 << 20, max_wait_ms=5000)
        assert values(first) == [b"a"]
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 3  # offset 1 fetched ahead
        await producer.send_columns(topic, 0, None, [b"b"])
        await asyncio.sleep(SETTLE_S * 2)  # answered ahead, kept 200 ms, dropped
        late = await shared.read(topic, 0, 1, max_records=1, max_bytes=1 << 20, max_wait_ms=5000)
        assert values(late) == [b"b"]
        await asyncio.sleep(SETTLE_S)
        assert sent[0] == 4  # read in a Fetch of its own: the answer kept was dropped
        await producer.close()
        await shared.close()

    run(cluster, scenario, monkeypatch)
