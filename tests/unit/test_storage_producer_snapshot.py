"""Producer-state snapshots: Kafka's file layout, CRC, choosing and pruning files."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
from hypothesis import given
from hypothesis import strategies as st

from pafka.storage import layout, producer_snapshot
from pafka.storage.producer_snapshot import CorruptSnapshotError, SnapshotEntry

ENTRY = SnapshotEntry(7, 2, 9, 100, 3, 1_700_000_000_000, 4, 95)


def test_golden_bytes() -> None:
    body = struct.pack(">i", 1) + struct.pack(
        ">qhiqiqiq", 7, 2, 9, 100, 3, 1_700_000_000_000, 4, 95
    )
    assert producer_snapshot.encode([ENTRY]) == struct.pack(">hI", 1, crc32c.crc32c(body)) + body


entries = st.lists(
    st.builds(
        SnapshotEntry,
        st.integers(0, 2**63 - 1),
        st.integers(-1, 2**15 - 1),
        st.integers(-1, 2**31 - 1),
        st.integers(-1, 2**62),
        st.integers(0, 2**31 - 1),
        st.integers(-1, 2**62),
        st.integers(-1, 2**31 - 1),
        st.integers(-1, 2**62),
    ),
    max_size=5,
)


@given(entries)
def test_round_trip(found: list[SnapshotEntry]) -> None:
    assert producer_snapshot.decode(producer_snapshot.encode(found)) == found


@given(entries, st.data())
def test_any_flipped_byte_or_cut_is_refused(
    found: list[SnapshotEntry], data: st.DataObject
) -> None:
    encoded = bytearray(producer_snapshot.encode(found))
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] ^= data.draw(st.integers(1, 255))
    try:
        producer_snapshot.decode(bytes(encoded))
    except CorruptSnapshotError:
        pass
    else:
        raise AssertionError("a damaged snapshot was accepted")
    cut = data.draw(st.integers(0, len(encoded) - 1))
    try:
        producer_snapshot.decode(producer_snapshot.encode(found)[:cut])
    except CorruptSnapshotError:
        return
    raise AssertionError("a cut snapshot was accepted")


def test_newest_readable_at_or_below_wins_and_corrupt_ones_go(tmp_path: Path) -> None:
    for offset in (10, 20, 30):
        producer_snapshot.write(tmp_path, offset, [ENTRY._replace(last_offset=offset)])
    assert layout.snapshot_file(tmp_path, 20).name == "00000000000000000020.snapshot"
    found = producer_snapshot.load_latest(tmp_path, 25)
    assert found is not None and found[0] == 20 and found[1][0].last_offset == 20
    layout.snapshot_file(tmp_path, 30).write_bytes(b"\x00\x01garbage")
    found = producer_snapshot.load_latest(tmp_path, 40)
    assert found is not None and found[0] == 20
    assert not layout.snapshot_file(tmp_path, 30).exists()
    assert producer_snapshot.load_latest(tmp_path, 5) is None
    producer_snapshot.delete_outside(tmp_path, 15, 25)
    assert layout.snapshot_offsets(tmp_path) == [20]
