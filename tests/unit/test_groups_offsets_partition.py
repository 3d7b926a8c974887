"""A group's ``__consumer_offsets`` partition: Kafka's ``Utils.abs(groupId.hashCode) % 50``,
checked against values printed by Java (OpenJDK 17, ``String.hashCode``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.groups.offsets_partition import java_abs, java_string_hash, offsets_partition

# (group id, Java's hashCode, Utils.abs(hashCode) % 50), from a Java program.
JAVA = [
    ("", 0, 0),
    ("a", 97, 47),
    ("hello", 99162322, 22),
    ("test-group", 627841412, 12),
    ("my-group", -1906497762, 12),
    ("console-consumer-12345", 158455506, 6),
    # hashCode is Integer.MIN_VALUE, whose Math.abs is negative: Utils.abs gives 0.
    ("polygenelubricants", -(2**31), 0),
    ("\N{LATIN SMALL LETTER E WITH ACUTE}t\N{LATIN SMALL LETTER E WITH ACUTE}", 227742, 42),
    # Outside the BMP: Java hashes the two UTF-16 surrogates, not the code point.
    ("\N{GRINNING FACE}grp", 1276929186, 36),
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
]


@pytest.mark.parametrize(("group", "hash_code", "partition"), JAVA)
def test_matches_java(group: str, hash_code: int, partition: int) -> None:
    assert java_string_hash(group) == hash_code
    assert offsets_partition(group) == partition


def test_utils_abs() -> None:
    assert java_abs(-(2**31)) == 0
    assert java_abs(-5) == 5
    assert java_abs(7) == 7


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least one partition"):
        offsets_partition("g", 0)


@given(st.text(), st.integers(1, 1000))
def test_is_a_partition_of_the_topic(group: str, partitions: int) -> None:
    assert 0 <= offsets_partition(group, partitions) < partitions
    assert -(2**31) <= java_string_hash(group) < 2**31


@given(st.text(alphabet=st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",))))
def test_bmp_hash_is_the_textbook_sum(group: str) -> None:
    expected = 0
    for ch in group:
        expected = (expected * 31 + ord(ch)) % 2**32
    assert java_string_hash(group) % 2**32 == expected
