"""The consumer instance state: its znode codec and its pure changes; record trimming."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from pafka.client.batch_reading import FetchedRecord, TimestampType
from pafka.client.isolation import IsolationLevel
from pafka.errors import RestError
from services.gateway.consumer_instances import InstanceState, check_name
from services.gateway.consumer_reads import trim
from services.gateway.formats import EmbeddedFormat

T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)


def state(**changes: object) -> InstanceState:
    base = InstanceState("g", "i", EmbeddedFormat.JSON, created_ms=5, last_used_ms=7)
    return replace(base, **changes)  # type: ignore[arg-type]


def test_the_payload_round_trips() -> None:
    full = state(
        topics=("t", "u"),
        positions={T0: 3, U0: 9},
        committed={T0: 2},
        member_id="m-1",
        generation=4,
        owned=frozenset({T0, U0}),
        rejoin=True,
        auto_commit=False,
        auto_offset_reset="earliest",
        isolation=IsolationLevel.READ_UNCOMMITTED,
    )
    assert InstanceState.decode("g", "i", full.encode()) == full
    manual = state(format=EmbeddedFormat.BINARY, assigned=frozenset({T1}))
    assert InstanceState.decode("g", "i", manual.encode()) == manual
    with pytest.raises(ValueError):
        InstanceState.decode("g", "i", b'{"version": 99}')


def test_an_instance_written_before_isolation_levels_reads_committed() -> None:
    payload = json.loads(state().encode())
    del payload["isolation_level"]
    old = InstanceState.decode("g", "i", json.dumps(payload).encode())
    assert old.isolation is IsolationLevel.READ_COMMITTED


def test_subscription_and_assignment_exclude_each_other() -> None:
    with pytest.raises(RestError) as refused:
        state(assigned=frozenset({T0})).subscribe(["t"])
    assert refused.value.rest_code == 40903
    with pytest.raises(RestError):
        state(topics=("t",)).assign([T0])
    # A member subscribing to other topics rejoins with them; without membership, no rejoin.
    assert state(topics=("t",), member_id="m").subscribe(["u"]).rejoin
    assert not state().subscribe(["u"]).rejoin
    assert state(topics=("t",), member_id="m").subscribe(["t"]).rejoin is False


def test_seek_only_within_the_assignment() -> None:
    manual = state(assigned=frozenset({T0}))
    assert manual.seek({T0: 5}).positions == {T0: 5}
    with pytest.raises(RestError) as refused:
        manual.seek({T1: 0})
    assert refused.value.rest_code == 40902


def test_positions_advance_only_where_nobody_moved_them() -> None:
    s = state(assigned=frozenset({T0, T1}), positions={T0: 3, T1: 8})
    # T1 was seeked to 8 by another request after this read started at 5.
    after, moved = s.advanced({T0: 3, T1: 5}, {T0: 6, T1: 7})
    assert (after.positions, moved) == ({T0: 6, T1: 8}, {T0})
    # Another read that went from 5 to 8 as well: it moved nothing, its records are not its own.
    assert s.advanced({T1: 5}, {T1: 8})[1] == frozenset()
    # A partition without a position takes the resolved start's end.
    fresh, moved = state(assigned=frozenset({T0})).advanced({T0: 0}, {T0: 2})
    assert (fresh.positions, moved) == ({T0: 2}, {T0})


def test_a_rejoin_keeps_positions_of_partitions_still_owned() -> None:
    member = state(
        topics=("t",),
        member_id="m",
        generation=1,
        owned=frozenset({T0, T1}),
        positions={T0: 4, T1: 6},
        committed={T0: 4, T1: 5},
    )
    after = member.joined("m", 2, frozenset({T1, U0}))
    assert (after.generation, after.owned, after.positions) == (2, frozenset({T1, U0}), {T1: 6})
    assert after.committed == {T1: 5}
    assert after.uncommitted() == {T1: 6}
    assert member.must_rejoin(as_new=True).member_id == ""
    assert member.must_rejoin(as_new=False).rejoin


def test_expiry_and_names() -> None:
    assert state(last_used_ms=1_000).expired(2_001, 1_000)
    assert not state(last_used_ms=1_000).expired(2_000, 1_000)
    assert check_name("reader-1.a_b") == "reader-1.a_b"
    for bad in ("", "..", "a/b", "x" * 201, "ü"):
        with pytest.raises(RestError):
            check_name(bad)


def record(offset: int, size: int) -> FetchedRecord:
    return FetchedRecord(offset, 0, TimestampType.CREATE_TIME, None, b"x" * size, ())


def test_trim_keeps_at_least_one_record_and_stops_at_the_limits() -> None:
    fetched = [(T0, [record(0, 10), record(1, 10)]), (T1, [record(5, 10)])]
    assert trim(fetched, 1, 100) == [(T0, [record(0, 10)])]
    assert trim(fetched, 25, 100) == [(T0, [record(0, 10), record(1, 10)])]
    assert trim(fetched, 1000, 2) == [(T0, [record(0, 10), record(1, 10)])]
    assert trim(fetched, 1000, 100) == fetched
