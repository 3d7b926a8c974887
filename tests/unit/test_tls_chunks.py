"""A TLS connection's pieces in chunks, regions read into them in place."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import KafkaStorageError
from pafka.storage.region import FileRegion
from services.broker.send_pieces import TLS_CHUNK_BYTES, Piece, tls_chunks


@pytest.fixture
def segment() -> Iterator[int]:
    with tempfile.TemporaryFile() as f:
        f.write(bytes(range(256)) * 64)
        f.flush()
        yield os.dup(f.fileno())


@given(
    parts=st.lists(
        st.one_of(
            st.binary(max_size=64).map(lambda b: ("buffer", b)),
            st.tuples(st.integers(0, 100_000), st.integers(0, 150_000)).map(
                lambda r: ("region", r)
            ),
        ),
        max_size=12,
    )
)
def test_the_chunks_are_the_pieces_in_order(parts: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryFile() as f:
        content = os.urandom(250_000)
        f.write(content)
        f.flush()
        pieces: list[Piece] = []
        expected = b""
        for kind, part in parts:
            if kind == "buffer":
                assert isinstance(part, bytes)
                pieces.append(memoryview(part) if len(part) % 2 else part)
                expected += part
            else:
                assert isinstance(part, tuple)
                offset, length = part
                pieces.append(FileRegion.of(f.fileno(), offset, length))
                expected += content[offset : offset + length]
        try:
            chunks = list(tls_chunks(pieces))
            assert b"".join(chunks) == expected
            assert all(len(c) == TLS_CHUNK_BYTES for c in chunks[:-1])
            assert all(chunks), "no empty chunk"
        finally:
            for piece in pieces:
                if isinstance(piece, FileRegion):
                    piece.close()


def test_a_region_whose_file_shrank_is_a_storage_error(segment: int) -> None:
    region = FileRegion(segment, 16_000, 1_000)  # the file holds 16,384 bytes
    try:
        with pytest.raises(KafkaStorageError, match="shrank"):
            list(tls_chunks([b"header", region]))
    finally:
        region.close()
