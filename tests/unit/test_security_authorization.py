"""Kafka 2.8's AclAuthorizer decisions, checked against a small independent model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pafka.security.acls import (
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    Operation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from pafka.security.authorization import (
    AclSnapshot,
    AuthorizerConfig,
    authorize,
    authorize_by_resource_type,
)
from pafka.security.principal import ANONYMOUS, KafkaPrincipal

ALICE = KafkaPrincipal.user("alice")
BOB = KafkaPrincipal.user("bob")
TOPIC = ResourceType.TOPIC
CONCRETE_OPS = [op for op in Operation if op not in (Operation.ANY, Operation.ALL)]


def _binding(
    name: str,
    op: Operation,
    permission: PermissionType = PermissionType.ALLOW,
    *,
    principal: KafkaPrincipal = ALICE,
    host: str = "*",
    pattern: PatternType = PatternType.LITERAL,
    resource_type: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource_type, name, pattern),
        AccessControlEntry(principal, host, op, permission),
    )


def _allowed(
    bindings: list[AclBinding],
    op: Operation,
    name: str = "orders",
    *,
    principal: KafkaPrincipal = ALICE,
    host: str = "10.0.0.1",
    config: AuthorizerConfig | None = None,
) -> bool:
    return authorize(
        AclSnapshot.of(bindings), config or AuthorizerConfig(), principal, host, op, TOPIC, name
    )


def test_no_acls_denies_unless_allow_everyone() -> None:
    assert not _allowed([], Operation.READ)
    assert _allowed(
        [], Operation.READ, config=AuthorizerConfig(allow_everyone_if_no_acl_found=True)
    )


def test_acls_for_others_deny_even_with_allow_everyone() -> None:
    acls = [_binding("orders", Operation.READ, principal=BOB)]
    config = AuthorizerConfig(allow_everyone_if_no_acl_found=True)
    assert not _allowed(acls, Operation.READ, config=config)


def test_super_users_bypass_denies() -> None:
    acls = [_binding("orders", Operation.ALL, PermissionType.DENY)]
    assert _allowed(acls, Operation.WRITE, config=AuthorizerConfig(super_users=frozenset({ALICE})))


def test_deny_wins_over_allow() -> None:
    acls = [
        _binding("orders", Operation.ALL),
        _binding("ord", Operation.WRITE, PermissionType.DENY, pattern=PatternType.PREFIXED),
    ]
    assert _allowed(acls, Operation.READ)
    assert not _allowed(acls, Operation.WRITE)


def test_implied_describe() -> None:
    for op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
        assert _allowed([_binding("orders", op)], Operation.DESCRIBE)
    assert not _allowed([_binding("orders", Operation.CREATE)], Operation.DESCRIBE)
    assert _allowed([_binding("orders", Operation.ALTER_CONFIGS)], Operation.DESCRIBE_CONFIGS)
    # A denied READ does not deny the DESCRIBE it would have implied.
    acls = [_binding("orders", Operation.READ, PermissionType.DENY), _binding("*", Operation.ALL)]
    assert _allowed(acls, Operation.DESCRIBE)


def test_wildcards_of_resource_principal_and_host() -> None:
    acls = [_binding("*", Operation.READ, principal=WILDCARD_PRINCIPAL)]
    assert _allowed(acls, Operation.READ, principal=ANONYMOUS)
    assert not _allowed([_binding("orders", Operation.READ, host="10.0.0.2")], Operation.READ)
    assert _allowed([_binding("orders", Operation.READ, host="10.0.0.1")], Operation.READ)


def test_prefixes_apply_to_longer_names_only() -> None:
    acls = [_binding("orders-", Operation.READ, pattern=PatternType.PREFIXED)]
    assert _allowed(acls, Operation.READ, "orders-eu")
    assert _allowed(acls, Operation.READ, "orders-")
    assert not _allowed(acls, Operation.READ, "orders")


def test_other_resource_types_do_not_apply() -> None:
    acls = [_binding("orders", Operation.READ, resource_type=ResourceType.GROUP)]
    assert not _allowed(acls, Operation.READ)


# -- the model --------------------------------------------------------------------------------

# What an ALLOW of each operation grants (the converse of Kafka's implication table).
GRANTS: dict[Operation, set[Operation]] = {op: {op} for op in CONCRETE_OPS}
for _op in (Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER):
    GRANTS[_op].add(Operation.DESCRIBE)
GRANTS[Operation.ALTER_CONFIGS].add(Operation.DESCRIBE_CONFIGS)
GRANTS[Operation.ALL] = set(CONCRETE_OPS)


def _model(
    bindings: list[AclBinding],
    config: AuthorizerConfig,
    principal: KafkaPrincipal,
    host: str,
    op: Operation,
    name: str,
) -> bool:
    if principal in config.super_users:
        return True
    applies = ResourcePatternFilter(TOPIC, name, PatternType.MATCH)
    relevant = [b.entry for b in bindings if applies.matches(b.pattern)]
    if not relevant:
        return config.allow_everyone_if_no_acl_found
    mine = [
        e
        for e in relevant
        if (e.principal == principal or str(e.principal) == "User:*") and e.host in (host, "*")
    ]
    for e in mine:
        if e.permission is PermissionType.DENY and e.operation in (op, Operation.ALL):
            return False
    return any(e.permission is PermissionType.ALLOW and op in GRANTS[e.operation] for e in mine)


principals = st.sampled_from([ALICE, BOB, WILDCARD_PRINCIPAL])
names = st.sampled_from(["o", "or", "ord", "orders", "*", "x"])
bindings = st.builds(
    _binding,
    names,
    st.sampled_from(list(Operation)[1:]),
    st.sampled_from([PermissionType.ALLOW, PermissionType.DENY]),
    principal=principals,
    host=st.sampled_from(["*", "h1", "h2"]),
    pattern=st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    resource_type=st.sampled_from([TOPIC, TOPIC, ResourceType.GROUP]),
)


@settings(max_examples=500)
@given(
    acls=st.lists(bindings, max_size=8),
    principal=st.sampled_from([ALICE, BOB]),
    host=st.sampled_from(["h1", "h2"]),
    op=st.sampled_from(CONCRETE_OPS),
    name=st.sampled_from(["orders", "ord", "o", "x", "*"]),
    allow_everyone=st.booleans(),
    super_alice=st.booleans(),
)
def test_authorize_agrees_with_the_model(
    acls: list[AclBinding],
    principal: KafkaPrincipal,
    host: str,
    op: Operation,
    name: str,
    allow_everyone: bool,
    super_alice: bool,
) -> None:
    config = AuthorizerConfig(
        super_users=frozenset({ALICE}) if super_alice else frozenset(),
        allow_everyone_if_no_acl_found=allow_everyone,
    )
    expected = _model(acls, config, principal, host, op, name)
    got = authorize(AclSnapshot.of(acls), config, principal, host, op, TOPIC, name)
    assert got == expected


@given(st.lists(bindings, max_size=8))
def test_snapshot_round_trips_its_bindings(acls: list[AclBinding]) -> None:
    assert AclSnapshot.of(acls).bindings() == sorted(set(acls))


def _by_type(bindings: list[AclBinding], config: AuthorizerConfig | None = None) -> bool:
    return authorize_by_resource_type(
        AclSnapshot.of(bindings), config or AuthorizerConfig(), ALICE, "h1", Operation.WRITE, TOPIC
    )


def test_by_resource_type_needs_one_undominated_allow() -> None:
    assert not _by_type([])
    assert _by_type([], AuthorizerConfig(allow_everyone_if_no_acl_found=True))
    assert _by_type([], AuthorizerConfig(super_users=frozenset({ALICE})))
    assert _by_type([_binding("t", Operation.WRITE)])
    assert _by_type([_binding("t", Operation.ALL)])
    assert not _by_type([_binding("t", Operation.READ)])
    assert not _by_type([_binding("t", Operation.WRITE, principal=BOB)])
    deny_t = _binding("t", Operation.WRITE, PermissionType.DENY)
    assert not _by_type([_binding("t", Operation.WRITE), deny_t])
    assert _by_type([_binding("u", Operation.WRITE), deny_t])
    prefix_deny = _binding("a", Operation.WRITE, PermissionType.DENY, pattern=PatternType.PREFIXED)
    assert not _by_type(
        [_binding("ab", Operation.WRITE, pattern=PatternType.PREFIXED), prefix_deny]
    )
    assert _by_type([_binding("*", Operation.WRITE)])
    assert not _by_type(
        [_binding("x", Operation.WRITE), _binding("*", Operation.WRITE, PermissionType.DENY)]
    )


@settings(max_examples=300)
@given(acls=st.lists(bindings, max_size=8), allow_everyone=st.booleans())
def test_by_resource_type_allows_when_some_topic_is_allowed(
    acls: list[AclBinding], allow_everyone: bool
) -> None:
    """Whenever some literal topic named in the ACLs is writable, the type check passes."""
    config = AuthorizerConfig(allow_everyone_if_no_acl_found=allow_everyone)
    snapshot = AclSnapshot.of(acls)
    literal_names = {b.pattern.name for b in acls if b.pattern.pattern_type is PatternType.LITERAL}
    some = any(
        authorize(snapshot, config, ALICE, "h1", Operation.WRITE, TOPIC, name)
        for name in literal_names
        if name != "*"
    )
    if some:
        assert authorize_by_resource_type(snapshot, config, ALICE, "h1", Operation.WRITE, TOPIC)
