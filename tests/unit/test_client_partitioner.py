"""The default partitioner against Kafka's published vectors and kafka-python's implementation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from pafka.client.partitioner import murmur2, partition_for_key, to_positive

# Kafka's own UtilsTest.testMurmur2 (signed Java ints).
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]

# Partitions among 1000 that Java's DefaultPartitioner picks (kafka-python's compatibility test).
JAVA_PARTITIONS_OF_1000 = [
    (b"", 681),
    (b"a", 524),
    (b"ab", 434),
    (b"abc", 107),
    (b"123456789", 566),
    (b"\x00 ", 742),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafkas_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


@pytest.mark.parametrize(("key", "expected"), JAVA_PARTITIONS_OF_1000)
def test_partition_matches_javas_partitioner(key: bytes, expected: int) -> None:
    assert partition_for_key(key, 1000) == expected


@given(st.binary(max_size=300))
def test_murmur2_equals_kafka_python(key: bytes) -> None:
    # kafka-python returns the hash as an unsigned 32-bit pattern.
    assert murmur2(key) & 0xFFFFFFFF == kafka_python_murmur2(key) & 0xFFFFFFFF


@given(st.binary(max_size=300), st.integers(min_value=1, max_value=10_000))
def test_partition_equals_kafka_pythons_default_partitioner(key: bytes, partitions: int) -> None:
    expected = (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    found = partition_for_key(key, partitions)
    assert found == expected
    assert 0 <= found < partitions


def test_to_positive_drops_only_the_sign_bit() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(5) == 5


def test_no_partitions_is_refused() -> None:
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)
