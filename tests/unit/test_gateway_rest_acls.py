"""The REST routes' ACL table (pure): every route is in it, and its needs follow KafkaApis."""

from __future__ import annotations

from pafka.security.acls import Operation, ResourceType
from services.gateway.console import ROUTERS as CONSOLE_ROUTERS
from services.gateway.rest_acls import FILTERED, RULES, Need, Source
from services.gateway.routers import ROUTERS


def _routes() -> set[tuple[str, str]]:
    routers = [*ROUTERS, *CONSOLE_ROUTERS]
    return {(m, r.path) for router in routers for r in router.routes for m in r.methods}


def test_every_route_has_a_rule_or_a_filter_and_nothing_else_is_listed() -> None:
    routes = _routes()
    assert routes == set(RULES) | set(FILTERED)
    assert not set(RULES) & set(FILTERED)


def test_writes_need_write_and_reads_read_on_the_named_topic() -> None:
    assert RULES[("POST", "/topics/{topic}")] == (
        Need(Operation.WRITE, ResourceType.TOPIC, Source.TOPIC_PATH),
    )
    assert RULES[("GET", "/topics/{topic}/partitions/{partition}/records")] == (
        Need(Operation.READ, ResourceType.TOPIC, Source.TOPIC_PATH),
    )


def test_group_work_needs_the_group_and_commits_each_topic() -> None:
    commit = RULES[("POST", "/groups/{group}/offsets")]
    assert Need(Operation.READ, ResourceType.GROUP, Source.GROUP_PATH) in commit
    assert Need(Operation.READ, ResourceType.TOPIC, Source.BODY_TOPICS) in commit
    for (method, path), needs in RULES.items():
        if path.startswith("/consumers/") or path.startswith("/groups/"):
            assert any(n.resource_type is ResourceType.GROUP for n in needs), (method, path)


def test_topic_creation_may_be_allowed_by_the_cluster() -> None:
    (need,) = RULES[("POST", "/v3/clusters/{cluster_id}/topics")]
    assert (need.operation, need.or_cluster) == (Operation.CREATE, True)
