"""Which packets a cut drops, and the nft script that drops them (pure)."""

from __future__ import annotations

from tests.partitions.cuts import isolation, one_way, ruleset, split

ADDRESSES = {"a": "10.0.0.1", "b": "10.0.0.2", "c": "10.0.0.3"}


def test_isolation_is_both_ways_and_never_from_a_node_to_itself() -> None:
    assert isolation("a", ["a", "b", "c"]) == {("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")}


def test_one_way_drops_only_from_the_source() -> None:
    assert one_way("a", ["b", "c"]) == {("a", "b"), ("a", "c")}


def test_split_cuts_every_pair_across_the_sides_and_none_within() -> None:
    pairs = split(["a"], ["b", "c"])
    assert pairs == isolation("a", ["b", "c"])
    assert ("b", "c") not in pairs


def test_ruleset_replaces_the_table_in_one_script() -> None:
    script = ruleset("pfk1", {("a", "b")}, ADDRESSES)
    lines = [line.strip() for line in script.splitlines()]
    assert lines[:3] == ["table bridge pfk1 {}", "delete table bridge pfk1", "table bridge pfk1 {"]
    assert "type filter hook forward priority -200; policy accept;" in lines
    assert "ip saddr 10.0.0.1 ip daddr 10.0.0.2 drop" in lines
    assert "ip saddr 10.0.0.2 ip daddr 10.0.0.1 drop" not in lines


def test_an_empty_ruleset_drops_nothing() -> None:
    assert "drop" not in ruleset("pfk1", set(), ADDRESSES)
