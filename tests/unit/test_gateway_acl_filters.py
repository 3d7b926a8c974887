"""REST Proxy v3's spelling of ACLs to Kafka's and back (pure): every binding survives the
round trip, filters keep REST Proxy's required fields and "empty is any", and a creation
refuses what only a filter may hold."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import RestError
from pafka.security.acls import (
    AccessControlEntry,
    AclBinding,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from pafka.security.principal import KafkaPrincipal
from services.gateway.acl_filters import (
    BAD_REQUEST,
    OPERATIONS,
    PATTERN_TYPES,
    PERMISSIONS,
    RESOURCE_TYPES,
    AclTerms,
    binding,
    binding_filter,
    rest_fields,
)
from services.gateway.rest_acls import ALL_TOPICS_TOKEN, RULES, Need, Source

NAMES = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
BINDINGS = st.builds(
    AclBinding,
    st.builds(
        ResourcePattern,
        st.sampled_from([t for t in ResourceType if t is not ResourceType.ANY]),
        NAMES,
        st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    ),
    st.builds(
        AccessControlEntry,
        st.builds(KafkaPrincipal.user, NAMES),
        st.one_of(st.just("*"), NAMES),
        st.sampled_from([o for o in Operation if o is not Operation.ANY]),
        st.sampled_from([PermissionType.ALLOW, PermissionType.DENY]),
    ),
)
SEARCH = AclTerms("ANY", None, "ANY", None, None, "ANY", "ANY")


@given(BINDINGS)
def test_a_binding_survives_rest_and_back(acl: AclBinding) -> None:
    fields = rest_fields(acl)
    assert binding(AclTerms(**fields)) == acl
    # Its own fields, as a filter, find it and no other kind of binding.
    assert binding_filter(AclTerms(**fields)).matches(acl)


def test_the_enums_are_rest_proxys_spelling() -> None:
    assert RESOURCE_TYPES == [
        "UNKNOWN",
        "ANY",
        "TOPIC",
        "GROUP",
        "CLUSTER",
        "TRANSACTIONAL_ID",
        "DELEGATION_TOKEN",
    ]
    assert PATTERN_TYPES == ["UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED"]
    assert OPERATIONS[:4] == ["UNKNOWN", "ANY", "ALL", "READ"]
    assert "CLUSTER_ACTION" in OPERATIONS and "IDEMPOTENT_WRITE" in OPERATIONS
    assert PERMISSIONS == ["UNKNOWN", "ANY", "DENY", "ALLOW"]


def test_a_search_reads_empty_as_any_and_accepts_any_case() -> None:
    acl_filter = binding_filter(AclTerms("topic", "", "match", "", "", "read", "allow"))
    assert acl_filter.pattern.resource_type is ResourceType.TOPIC
    assert acl_filter.pattern.name is None
    assert acl_filter.pattern.pattern_type is PatternType.MATCH
    assert (acl_filter.entry.principal, acl_filter.entry.host) == (None, None)
    assert acl_filter.entry.operation is Operation.READ


@pytest.mark.parametrize("field", ["resource_type", "pattern_type", "operation", "permission"])
def test_a_search_needs_each_enum_and_refuses_unknown(field: str) -> None:
    for value in (None, "", "UNKNOWN", "sideways"):
        with pytest.raises(RestError) as refused:
            binding_filter(dataclasses.replace(SEARCH, **{field: value}))
        assert refused.value.rest_code == BAD_REQUEST
        assert field in refused.value.message


def test_a_malformed_principal_is_refused_naming_it() -> None:
    with pytest.raises(RestError, match="principal 'alice'"):
        binding_filter(dataclasses.replace(SEARCH, principal="alice"))


CREATE = AclTerms("TOPIC", "orders", "LITERAL", "User:alice", "*", "READ", "ALLOW")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("resource_type", "ANY"),
        ("pattern_type", "ANY"),
        ("pattern_type", "MATCH"),
        ("operation", "ANY"),
        ("permission", "ANY"),
        ("resource_name", ""),
        ("principal", None),
        ("host", ""),
    ],
)
def test_a_creation_needs_every_field_and_no_filter_value(field: str, value: str | None) -> None:
    with pytest.raises(RestError) as refused:
        binding(dataclasses.replace(CREATE, **{field: value}))
    assert refused.value.rest_code == BAD_REQUEST
    assert field in refused.value.message


def test_a_creation_reads_as_kafkas_binding() -> None:
    assert binding(CREATE) == AclBinding(
        ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
        AccessControlEntry(KafkaPrincipal.user("alice"), "*", Operation.READ, PermissionType.ALLOW),
    )


def test_acls_and_users_need_the_cluster_as_kafkas_apis_and_a_token_for_every_topic() -> None:
    security = {
        key: needs
        for key, needs in RULES.items()
        if "/acls" in key[1] or "/user-scram-credentials" in key[1]
    }
    assert len(security) == 7
    for (method, path), needs in security.items():
        wanted = Operation.DESCRIBE if method == "GET" else Operation.ALTER
        assert needs == (Need(wanted, ResourceType.CLUSTER, Source.CLUSTER),), (method, path)
    assert set(security) == ALL_TOPICS_TOKEN
