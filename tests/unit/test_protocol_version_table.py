"""The README's API version table is the generated one, and every served API is Kafka's."""

from __future__ import annotations

from pathlib import Path

from pafka.protocol.version_table import BEGIN_MARKER, DASH, END_MARKER, KAFKA_2_8, markdown
from pafka.protocol.versions import SUPPORTED

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_is_the_generated_one() -> None:
    text = README.read_text()
    start = text.index(BEGIN_MARKER)
    end = text.index(END_MARKER) + len(END_MARKER) + 1
    assert text[start:end] == markdown(), "run: python -m pafka.protocol.version_table"


def test_every_served_api_is_a_kafka_2_8_api_under_its_name() -> None:
    for key in SUPPORTED:
        name = KAFKA_2_8[int(key)][0]
        assert name.upper() == key.name.replace("_", "")


def test_a_row_shows_both_ranges_and_an_unserved_api_says_so() -> None:
    rows = markdown().splitlines()
    assert f"| CreateTopics (19) | 0{DASH}7 | 0{DASH}7 |" in rows
    assert f"| AlterReplicaLogDirs (34) | not served | 0{DASH}2 |" in rows
    assert len(rows) == len(KAFKA_2_8) + 4
