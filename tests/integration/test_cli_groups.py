"""``pafka consume --group`` and ``pafka groups`` against the shared real cluster.

The CLI runs in-process (``pafka.cli.main.main``) and talks to the group coordinator over the
Kafka protocol. Each test uses a topic and groups of its own.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from pafka.cli.main import main
from pafka.zk.znodes import ConsumerGroupZNodes

PARTITIONS = 3
PER_PARTITION = 10


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture
def pafka(cluster, capsys):  # type: ignore[no-untyped-def]
    """Run ``pafka ARGS... --bootstrap-server <cluster>`` in-process."""

    def run(*args: str, target: tuple[str, str] | None = None) -> Result:
        capsys.readouterr()
        try:
            main([*args, *(target or ("--bootstrap-server", cluster.bootstrap))])
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _topic(cluster, prefix: str) -> str:  # type: ignore[no-untyped-def]
    name = _name(prefix)
    cluster.create_topic(name, partitions=PARTITIONS, replication_factor=3)
    return name


def _produce(cluster, topic: str, counts: dict[int, int], *, start_ms: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """``counts[p]`` records to partition p, valued ``p{p}-{i}``; timestamps 1 s apart if given."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    futures = []
    for partition, count in counts.items():
        for i in range(count):
            ts = None if start_ms is None else start_ms + i * 1000
            futures.append(
                producer.send(
                    topic, f"p{partition}-{i}".encode(), partition=partition, timestamp_ms=ts
                )
            )
    for future in futures:
        future.get(timeout=30)
    producer.close()


def _described(result: Result) -> dict[int, dict[str, str]]:
    """The rows of ``groups describe`` by partition, as {column: value}."""
    lines = [line for line in result.lines if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP"))
    headers = lines[start].split()
    rows = [dict(zip(headers, line.split(), strict=True)) for line in lines[start + 1 :]]
    return {int(row["PARTITION"]): row for row in rows}


def _offsets(result: Result) -> dict[int, tuple[str, str, str]]:
    """Partition -> (CURRENT-OFFSET, LOG-END-OFFSET, LAG)."""
    return {
        p: (row["CURRENT-OFFSET"], row["LOG-END-OFFSET"], row["LAG"])
        for p, row in _described(result).items()
    }


def _new_offsets(result: Result) -> dict[tuple[str, int], int]:
    rows = [line.split() for line in result.lines[1:]]
    return {(topic, int(p)): int(offset) for _group, topic, p, offset in rows}


def _consumed_group(pafka, cluster, topic: str) -> str:  # type: ignore[no-untyped-def]
    """A group that has consumed (and committed) every record of a freshly filled topic."""
    group = _name("g")
    _produce(cluster, topic, dict.fromkeys(range(PARTITIONS), PER_PARTITION))
    total = PARTITIONS * PER_PARTITION
    consumed = pafka(
        "consume", topic, "--group", group, "--from-beginning", "--max-messages", str(total)
    )
    assert consumed.code == 0, consumed.err
    assert len(consumed.lines) == total
    return group


def test_group_consumption_commits_and_describe_shows_lag(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-lag")
    group = _name("g")
    _produce(cluster, topic, dict.fromkeys(range(PARTITIONS), PER_PARTITION))

    first = pafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "4")
    assert first.code == 0, first.err
    assert len(first.lines) == 4
    partial = _offsets(pafka("groups", "describe", group))
    assert sum(int(current) for current, _, _ in partial.values()) == 4
    assert all(end == "10" for _, end, _ in partial.values())

    # committed partitions resume where they stopped; --from-beginning only covers the others
    rest = pafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "26")
    assert rest.code == 0, rest.err
    everything = {f"p{p}-{i}" for p in range(PARTITIONS) for i in range(PER_PARTITION)}
    assert sorted(first.lines + rest.lines) == sorted(everything)

    listed = pafka("groups", "list")
    assert listed.code == 0, listed.err
    assert group in listed.lines
    by_zookeeper = pafka("groups", "list", target=("--zookeeper", cluster.zk_connect))
    assert group in by_zookeeper.lines

    described = pafka("groups", "describe", group)
    assert described.code == 0, described.err
    assert f"Consumer group '{group}' has no active members." in described.lines
    assert _offsets(described) == {p: ("10", "10", "0") for p in range(PARTITIONS)}
    header = next(line for line in described.lines if line.startswith("GROUP"))
    assert " ".join(header.split()) == (
        "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
    )
    rows = _described(described).values()
    assert all(r["GROUP"] == group and r["TOPIC"] == topic for r in rows)
    assert all(r["CONSUMER-ID"] == r["HOST"] == r["CLIENT-ID"] == "-" for r in rows)
    # aligned: every row starts its columns where the header does
    table = described.lines[described.lines.index(header) :]
    for column in ("TOPIC", "PARTITION", "LAG", "CLIENT-ID"):
        at = header.index(column)
        assert all(line[at - 2 : at] == "  " and line[at] != " " for line in table)

    _produce(cluster, topic, {0: 5, 1: 2})
    assert _offsets(pafka("groups", "describe", group)) == {
        0: ("10", "15", "5"),
        1: ("10", "12", "2"),
        2: ("10", "10", "0"),
    }
    newest = pafka("consume", topic, "--group", group, "--max-messages", "7")
    assert sorted(newest.lines) == sorted(
        [f"p0-{i}" for i in range(5)] + [f"p1-{i}" for i in range(2)]
    )
    assert _offsets(pafka("groups", "describe", group)) == {
        0: ("15", "15", "0"),
        1: ("12", "12", "0"),
        2: ("10", "10", "0"),
    }


@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky"])
def test_each_assignor_consumes_everything_once(cluster, pafka, assignor: str) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, f"grp-{assignor}")
    group = _name(assignor)
    _produce(cluster, topic, {0: 4, 1: 5, 2: 6})
    consumed = pafka(
        "consume", topic, "--group", group, "--assignor", assignor, "--from-beginning",
        "--max-messages", "15",
    )  # fmt: skip
    assert consumed.code == 0, consumed.err
    assert sorted(consumed.lines) == sorted(
        f"p{p}-{i}" for p, n in ((0, 4), (1, 5), (2, 6)) for i in range(n)
    )
    assert _offsets(pafka("groups", "describe", group)) == {
        0: ("4", "4", "0"),
        1: ("5", "5", "0"),
        2: ("6", "6", "0"),
    }


def test_reset_offsets(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-reset")
    group = _consumed_group(pafka, cluster, topic)

    dry = pafka("groups", "reset-offsets", group, "--to-earliest", "--dry-run")
    assert dry.code == 0, dry.err
    assert dry.lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert _new_offsets(dry) == {(topic, p): 0 for p in range(PARTITIONS)}
    assert _offsets(pafka("groups", "describe", group)) == {
        p: ("10", "10", "0") for p in range(PARTITIONS)
    }

    earliest = pafka("groups", "reset-offsets", group, "--to-earliest", "--execute")
    assert earliest.code == 0, earliest.err
    assert _new_offsets(earliest) == {(topic, p): 0 for p in range(PARTITIONS)}
    assert _offsets(pafka("groups", "describe", group)) == {
        p: ("0", "10", "10") for p in range(PARTITIONS)
    }

    one = pafka("groups", "reset-offsets", group, "--to-offset", "7", "--topic", f"{topic}:1")
    assert _new_offsets(one) == {(topic, 1): 7}
    assert _offsets(pafka("groups", "describe", group)) == {
        0: ("0", "10", "10"),
        1: ("7", "10", "3"),
        2: ("0", "10", "10"),
    }

    high = pafka("groups", "reset-offsets", group, "--to-offset", "1000", "--topic", f"{topic}:0,2")
    assert _new_offsets(high) == {(topic, 0): 10, (topic, 2): 10}
    low = pafka("groups", "reset-offsets", group, "--to-offset", "-3", "--topic", topic)
    assert _new_offsets(low) == {(topic, p): 0 for p in range(PARTITIONS)}

    latest = pafka("groups", "reset-offsets", group, "--to-latest", "--all-topics")
    assert _new_offsets(latest) == {(topic, p): 10 for p in range(PARTITIONS)}
    assert _offsets(pafka("groups", "describe", group)) == {
        p: ("10", "10", "0") for p in range(PARTITIONS)
    }

    # the group consumes from the reset position
    pafka("groups", "reset-offsets", group, "--to-offset", "8", "--topic", f"{topic}:2")
    again = pafka("consume", topic, "--group", group, "--max-messages", "2")
    assert sorted(again.lines) == ["p2-8", "p2-9"]


def test_reset_offsets_to_datetime(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-time")
    group = _name("g")
    start_ms = (int(time.time()) - 60) * 1000  # whole seconds; record i is stamped start + i s
    _produce(cluster, topic, dict.fromkeys(range(PARTITIONS), PER_PARTITION), start_ms=start_ms)
    pafka("consume", topic, "--group", group, "--from-beginning", "--max-messages", "30")

    at = datetime.fromtimestamp((start_ms + 4500) / 1000, UTC)
    zulu = at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    moved = pafka("groups", "reset-offsets", group, "--to-datetime", zulu)
    assert moved.code == 0, moved.err
    assert _new_offsets(moved) == {(topic, p): 5 for p in range(PARTITIONS)}
    assert _offsets(pafka("groups", "describe", group)) == {
        p: ("5", "10", "5") for p in range(PARTITIONS)
    }

    exact = datetime.fromtimestamp((start_ms + 2000) / 1000, UTC).isoformat()  # +00:00
    on_record = pafka("groups", "reset-offsets", group, "--to-datetime", exact, "--topic", topic)
    assert _new_offsets(on_record) == {(topic, p): 2 for p in range(PARTITIONS)}

    # no record at or after the time: the end of the partition
    future = pafka("groups", "reset-offsets", group, "--to-datetime", "2999-01-01T00:00:00Z")
    assert _new_offsets(future) == {(topic, p): 10 for p in range(PARTITIONS)}
    before = pafka("groups", "reset-offsets", group, "--to-datetime", "2001-01-01T00:00:00+02:00")
    assert _new_offsets(before) == {(topic, p): 0 for p in range(PARTITIONS)}


@contextmanager
def _live_member(cluster, group: str, topic: str) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """A kafka-python member of ``group`` polling in a thread, yielded once it has partitions."""
    from kafka import KafkaConsumer

    stop, assigned = threading.Event(), threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            consumer = KafkaConsumer(
                bootstrap_servers=cluster.bootstrap,
                group_id=group,
                client_id="live-member",
                enable_auto_commit=False,
            )
            consumer.subscribe([topic])
            while not stop.is_set():
                consumer.poll(timeout_ms=100)
                if len(consumer.assignment()) == PARTITIONS:
                    assigned.set()
            consumer.close()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        assert assigned.wait(30), f"member never got an assignment: {failure}"
        yield
    finally:
        stop.set()
        thread.join(30)
    assert not failure, failure


def test_reset_and_delete_refused_while_a_member_is_live(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-live")
    group = _consumed_group(pafka, cluster, topic)
    with _live_member(cluster, group, topic):
        refused = pafka("groups", "reset-offsets", group, "--to-earliest")
        assert refused.code == 1
        assert "inactive" in refused.err and "Stable" in refused.err
        assert refused.err.count("\n") == 1 and "Traceback" not in refused.err

        not_deleted = pafka("groups", "delete", group)
        assert not_deleted.code == 1
        assert "has active members" in not_deleted.err

        described = pafka("groups", "describe", group)
        assert "has no active members" not in described.out
        rows = _described(described)
        assert {p: (r["CURRENT-OFFSET"], r["LAG"]) for p, r in rows.items()} == {
            p: ("10", "0") for p in range(PARTITIONS)
        }
        owners = {r["CONSUMER-ID"] for r in rows.values()}
        assert len(owners) == 1 and owners != {"-"}
        assert {r["CLIENT-ID"] for r in rows.values()} == {"live-member"}
        assert all(r["HOST"] != "-" for r in rows.values())

    # once the member has left, the same reset goes through
    done = pafka("groups", "reset-offsets", group, "--to-earliest")
    assert done.code == 0, done.err
    assert _offsets(pafka("groups", "describe", group)) == {
        p: ("0", "10", "10") for p in range(PARTITIONS)
    }


def test_delete_group(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-del")
    group = _consumed_group(pafka, cluster, topic)
    assert cluster.zk.exists(ConsumerGroupZNodes.group_path(group)) is not None

    deleted = pafka("groups", "delete", group)
    assert deleted.code == 0, deleted.err
    assert deleted.lines == [f"Deletion of requested consumer groups ('{group}') was successful."]
    assert group not in pafka("groups", "list").lines
    assert cluster.zk.exists(ConsumerGroupZNodes.group_path(group)) is None

    gone = pafka("groups", "describe", group)
    assert gone.code == 1 and f"consumer group {group!r} does not exist" in gone.err
    again = pafka("groups", "delete", group)
    assert again.code == 1 and "does not exist" in again.err


def test_errors_are_one_line(cluster, pafka) -> None:  # type: ignore[no-untyped-def]
    topic = _topic(cluster, "grp-err")
    missing = _name("nobody")
    cases = [
        (("groups", "describe", missing), "does not exist"),
        (("groups", "reset-offsets", missing, "--to-earliest"), "no committed offsets"),
        (("groups", "reset-offsets", missing, "--to-datetime", "yesterday", "--topic", topic),
         "ISO-8601"),
        (("groups", "reset-offsets", missing, "--to-earliest", "--topic", f"{topic}:x"),
         "T:P,P"),
        (("groups", "reset-offsets", missing, "--to-earliest", "--topic", f"{topic}:7"),
         "no partition 7"),
        (("groups", "reset-offsets", missing, "--to-earliest", "--topic", _name("none")),
         "does not exist"),
        (("consume", topic, "--group", missing, "--partition", "0"), "cannot be used"),
    ]  # fmt: skip
    for args, message in cases:
        result = pafka(*args)
        assert result.code == 1, (args, result)
        line = result.err.strip()
        assert line.startswith("pafka ") and message in line, (args, line)
        assert "\n" not in line, (args, line)
    # nothing was created by the refused commands
    assert missing not in pafka("groups", "list").lines


def test_argument_parsing_is_pure() -> None:
    from pafka.cli.groups import clamp, format_table, parse_datetime_ms, parse_topic_spec

    assert parse_topic_spec("t") == ("t", None)
    assert parse_topic_spec("t:2,0,2") == ("t", (0, 2))
    assert parse_datetime_ms("2026-11-22T10:00:00Z") == 1_795_341_600_000
    assert parse_datetime_ms("2026-11-22T10:00:00.250+01:00") == 1_795_338_000_250
    naive = datetime(2026, 11, 22, 10, 0, 0).timestamp()  # local time, as Kafka's tool reads it
    assert parse_datetime_ms("2026-11-22T10:00:00") == round(naive * 1000)
    assert [clamp(o, 3, 9) for o in (-1, 3, 5, 9, 12)] == [3, 3, 5, 9, 9]
    assert format_table(("A", "LONGER"), [("xyz", 1), ("x", 22)]) == [
        "A    LONGER",
        "xyz  1",
        "x    22",
    ]
