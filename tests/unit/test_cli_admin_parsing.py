"""What the admin commands accept: kafka-configs.sh's --add-config syntax and
kafka-delete-records.sh's offset file."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.cli.configs import split_pairs
from pafka.cli.delete_records import offsets_from_json
from pafka.errors import ConfigError

names = st.from_regex(r"[a-z][a-z.]{0,12}", fullmatch=True)
plain = st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True)


def test_brackets_keep_a_list_value_together() -> None:
    assert split_pairs("retention.ms=5,cleanup.policy=[delete,compact]") == [
        ("retention.ms", "5"),
        ("cleanup.policy", "delete,compact"),
    ]


@given(st.lists(st.tuples(names, plain | st.lists(plain, min_size=1, max_size=3)), max_size=4))
def test_pairs_round_trip(pairs: list[tuple[str, str | list[str]]]) -> None:
    text = ",".join(f"{k}=[{','.join(v)}]" if isinstance(v, list) else f"{k}={v}" for k, v in pairs)
    expected = [(k, ",".join(v) if isinstance(v, list) else v) for k, v in pairs]
    assert split_pairs(text) == expected


@pytest.mark.parametrize("bad", ["novalue", "=x", "a=[1,2", "a=1]"])
def test_bad_pairs_are_refused(bad: str) -> None:
    with pytest.raises(ConfigError):
        split_pairs(bad)


def test_kafkas_offset_file() -> None:
    text = json.dumps({"partitions": [{"topic": "t", "partition": 1, "offset": 5}], "version": 1})
    assert offsets_from_json(text) == {("t", 1): 5}
    for bad in ["{", "[]", '{"partitions": []}', '{"partitions": [{"topic": "t"}]}']:
        with pytest.raises(ConfigError):
            offsets_from_json(bad)
    twice = {"partitions": [{"topic": "t", "partition": 0, "offset": 1}] * 2}
    with pytest.raises(ConfigError):
        offsets_from_json(json.dumps(twice))
