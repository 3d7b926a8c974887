"""ACL model: wire codes, ZooKeeper words, validation, and DescribeAcls/DeleteAcls filters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import InvalidRequestError
from pafka.security.acls import (
    ANY_BINDING,
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    entry_from_payload,
    entry_to_payload,
    parse_principal,
)
from pafka.security.principal import KafkaPrincipal
from pafka.zk.znodes import AclEntryPayload

ALICE = KafkaPrincipal.user("alice")


def test_wire_codes_are_kafkas() -> None:
    assert [int(t) for t in ResourceType] == [1, 2, 3, 4, 5, 6]
    assert (PatternType.ANY, PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED) == (
        1,
        2,
        3,
        4,
    )
    assert Operation.ALL == 2 and Operation.IDEMPOTENT_WRITE == 12
    assert (PermissionType.DENY, PermissionType.ALLOW) == (2, 3)
    with pytest.raises(InvalidRequestError):
        Operation.from_code(0)


def test_zookeeper_words_are_kafkas() -> None:
    assert [t.word for t in ResourceType if t is not ResourceType.ANY] == [
        "Topic",
        "Group",
        "Cluster",
        "TransactionalId",
        "DelegationToken",
    ]
    assert Operation.CLUSTER_ACTION.word == "ClusterAction"
    assert Operation.parse("IdempotentWrite") is Operation.IDEMPOTENT_WRITE
    assert Operation.parse("describe_configs") is Operation.DESCRIBE_CONFIGS
    assert Operation.parse("READ") is Operation.READ
    assert PermissionType.parse("Allow") is PermissionType.ALLOW
    with pytest.raises(ValueError):
        Operation.parse("Fly")


def test_entry_round_trips_through_the_stored_words() -> None:
    entry = AccessControlEntry(ALICE, "*", Operation.READ, PermissionType.ALLOW)
    payload = entry_to_payload(entry)
    assert payload == AclEntryPayload("User:alice", "Allow", "Read", "*")
    assert entry_from_payload(payload) == entry


@pytest.mark.parametrize(
    "payload",
    [
        AclEntryPayload("alice", "Allow", "Read", "*"),
        AclEntryPayload("User:alice", "Maybe", "Read", "*"),
        AclEntryPayload("User:alice", "Allow", "Any", "*"),
    ],
)
def test_malformed_stored_entries_are_refused(payload: AclEntryPayload) -> None:
    with pytest.raises(ValueError):
        entry_from_payload(payload)


@pytest.mark.parametrize(
    "pattern",
    [
        ResourcePattern(ResourceType.TOPIC, "", PatternType.LITERAL),
        ResourcePattern(ResourceType.ANY, "t", PatternType.LITERAL),
        ResourcePattern(ResourceType.TOPIC, "t", PatternType.MATCH),
        ResourcePattern(ResourceType.CLUSTER, "other", PatternType.LITERAL),
    ],
)
def test_invalid_patterns_are_invalid_requests(pattern: ResourcePattern) -> None:
    with pytest.raises(InvalidRequestError):
        pattern.validate()


def test_valid_binding_passes() -> None:
    AclBinding(
        ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL),
        AccessControlEntry(ALICE, "*", Operation.ALTER, PermissionType.DENY),
    ).validate()
    with pytest.raises(InvalidRequestError):
        parse_principal("nocolon")


def _pattern(name: str, kind: PatternType) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name, kind)


def test_match_filter_selects_what_applies_to_a_name() -> None:
    match = ResourcePatternFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH)
    assert match.matches(_pattern("orders-eu", PatternType.LITERAL))
    assert match.matches(_pattern("*", PatternType.LITERAL))
    assert match.matches(_pattern("orders-", PatternType.PREFIXED))
    assert match.matches(_pattern("orders-eu", PatternType.PREFIXED))
    assert not match.matches(_pattern("orders", PatternType.LITERAL))
    assert not match.matches(_pattern("orders-eu-1", PatternType.PREFIXED))
    assert not match.matches(ResourcePattern(ResourceType.GROUP, "*", PatternType.LITERAL))


def test_literal_and_any_filters_compare_names_exactly() -> None:
    literal = ResourcePatternFilter(ResourceType.TOPIC, "*", PatternType.LITERAL)
    assert literal.matches(_pattern("*", PatternType.LITERAL))
    assert not literal.matches(_pattern("t", PatternType.LITERAL))
    assert not literal.matches(_pattern("*", PatternType.PREFIXED))
    anything = ResourcePatternFilter(ResourceType.ANY, "t", PatternType.ANY)
    assert anything.matches(_pattern("t", PatternType.PREFIXED))
    assert not anything.matches(_pattern("*", PatternType.LITERAL))


def test_entry_filter() -> None:
    entry = AccessControlEntry(ALICE, "10.0.0.1", Operation.WRITE, PermissionType.ALLOW)
    assert AccessControlEntryFilter("User:alice", None, Operation.ANY, PermissionType.ANY).matches(
        entry
    )
    assert not AccessControlEntryFilter(None, "*", Operation.ANY, PermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, Operation.READ, PermissionType.ANY).matches(
        entry
    )
    assert not AccessControlEntryFilter(None, None, Operation.ANY, PermissionType.DENY).matches(
        entry
    )


names = st.sampled_from(["a", "ab", "abc", "b", "*"])
patterns = st.builds(
    ResourcePattern,
    st.sampled_from([ResourceType.TOPIC, ResourceType.GROUP]),
    names,
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
)
entries = st.builds(
    AccessControlEntry,
    st.sampled_from([ALICE, KafkaPrincipal.user("bob")]),
    st.sampled_from(["*", "h1"]),
    st.sampled_from([Operation.READ, Operation.ALL]),
    st.sampled_from([PermissionType.ALLOW, PermissionType.DENY]),
)


@given(st.builds(AclBinding, patterns, entries))
def test_the_any_filter_matches_every_binding(binding: AclBinding) -> None:
    assert ANY_BINDING.matches(binding)


@given(st.builds(AclBinding, patterns, entries))
def test_a_binding_matches_its_own_exact_filter(binding: AclBinding) -> None:
    own = AclBindingFilter(
        ResourcePatternFilter(
            binding.pattern.resource_type, binding.pattern.name, binding.pattern.pattern_type
        ),
        AccessControlEntryFilter(
            str(binding.entry.principal),
            binding.entry.host,
            binding.entry.operation,
            binding.entry.permission,
        ),
    )
    assert own.matches(binding)
