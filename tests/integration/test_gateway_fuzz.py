"""Property-based requests against every operation of the gateway's own OpenAPI (schemathesis).

The schema is loaded from a live gateway of the shared cluster. For each operation schemathesis
draws requests (the schema's examples, then valid and invalid ones; a few dozen) and gives its
deterministic boundary cases (evenly sampled), and every answer must be: no 5xx but a 503 with
``Retry-After`` (a retriable condition); an error body with an integer ``error_code`` whose
first digits are the status and a string ``message``; a body of the documented schema where
one is documented for the status. Operations are parametrized from the in-process app's
OpenAPI, checked equal to the live one (schemathesis's own lazy pytest loader does not run
under pytest 9).

The cluster is shared, so every request is confined (:func:`confine`) to names of this run's
namespace (``fuzz<hex>-``): topics, groups, instances and members are either the few this
module creates or the drawn name behind the prefix; DELETE and PATCH only ever touch names
nobody else uses; topic creation and growth are capped at a few partitions; long polls are
capped at 100 ms, group joins go to a group of their own (a join waits for every member).
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

PREFIX = f"fuzz{uuid.uuid4().hex[:6]}-"
MAX_EXAMPLES = 30
MAX_BOUNDARY_CASES = 50
MAX_POLL_MS = 100
MAX_PARTITIONS = 3
MAX_GROUP_TIMEOUT_MS = 10_000
V2 = "application/vnd.kafka.v2+json"
TIMEOUT_S = 30


def operation_labels() -> list[str]:
    """Every operation of the gateway's OpenAPI, known at collection (no cluster needed)."""
    from services.gateway.app import create_app
    from services.gateway.settings import GatewaySettings

    paths = create_app(GatewaySettings()).openapi()["paths"]
    return [f"{method.upper()} {path}" for path, ops in paths.items() for method in ops]


OPERATIONS = operation_labels()
# Schemathesis's example strategies touch the global random state, which Hypothesis flags.
pytestmark = pytest.mark.filterwarnings("ignore:Do not use the `random` module inside strategies")


@dataclass(frozen=True)
class Names:
    """What this module created; requests use these or fresh names behind the prefix."""

    cluster_id: str
    topic: str
    v2_group: str
    instance: str
    member_group: str
    member_id: str


@pytest.fixture(scope="module")
def names(cluster: Any) -> Iterator[Names]:
    base = cluster.gateways[0]
    topic, v2_group, member_group = f"{PREFIX}t", f"{PREFIX}v2", f"{PREFIX}members"
    cluster.create_topic(topic, partitions=2, replication_factor=2)
    with httpx.Client(base_url=base, timeout=TIMEOUT_S) as gw:
        cluster_id = gw.get("/v3/clusters").json()["data"][0]["cluster_id"]
        records = {"records": [{"key": i, "value": {"n": i}} for i in range(4)]}
        assert gw.post(f"/topics/{topic}", json=records).is_success
        created = gw.post(
            f"/consumers/{v2_group}",
            json={"name": "inst", "format": "json", "auto.offset.reset": "earliest"},
            headers={"Content-Type": V2},
        )
        assert created.is_success, created.text
        instance = f"/consumers/{v2_group}/instances/inst"
        assert gw.post(f"{instance}/subscription", json={"topics": [topic]}).is_success
        joined = gw.post(f"/groups/{member_group}/members", json={"topics": [topic]})
        assert joined.is_success, joined.text
        yield Names(cluster_id, topic, v2_group, "inst", member_group, joined.json()["member_id"])
        # Leave nothing of this run behind on the shared cluster.
        gw.delete(instance)
        gw.delete(f"/groups/{member_group}/members/{joined.json()['member_id']}")
        listed = gw.get(f"/v3/clusters/{cluster_id}/topics").json()["data"]
        for name in (t["topic_name"] for t in listed if t["topic_name"].startswith(PREFIX)):
            gw.delete(f"/v3/clusters/{cluster_id}/topics/{name}")


@pytest.fixture(scope="module")
def gateway_schema(cluster: Any, names: Names) -> Any:
    return schemathesis.openapi.from_url(cluster.gateways[0] + "/openapi.json", timeout=TIMEOUT_S)


def test_the_live_schema_has_the_operations_fuzzed(gateway_schema: Any) -> None:
    live = sorted(r.ok().label for r in gateway_schema.get_all_operations())
    assert live == sorted(OPERATIONS)


@pytest.mark.parametrize("label", OPERATIONS)
def test_drawn_requests_are_answered_well(
    label: str, gateway_schema: Any, names: Names, cluster: Any
) -> None:
    """The schema's examples, then valid and invalid requests hypothesis draws."""
    operation = gateway_schema.find_operation_by_label(label)
    drawn = st.one_of(
        *gateway_schema.get_strategies_from_examples(operation),
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        # Shrinking replays requests against the live cluster for up to five minutes, past
        # the test's timeout, which would then hide the failure found; report it as drawn.
        phases=[Phase.explicit, Phase.generate],
    )
    @given(drawn)
    def answered_well(case: Any) -> None:
        send_and_check(case, names, cluster)

    answered_well()


@pytest.mark.parametrize("label", OPERATIONS)
def test_boundary_requests_are_answered_well(
    label: str, gateway_schema: Any, names: Names, cluster: Any
) -> None:
    """Schemathesis's deterministic coverage cases (each parameter at and past its bounds,
    missing, of the wrong type; other methods and media types), evenly sampled."""
    operation = gateway_schema.find_operation_by_label(label)
    cases = list(
        gateway_schema.iter_coverage_cases(
            operation,
            generation_modes=list(GenerationMode),
            generation_config=gateway_schema.config.generation_for(
                operation=operation, phase="coverage"
            ),
        )
    )
    step = max(1, len(cases) // MAX_BOUNDARY_CASES)
    for case in cases[::step][:MAX_BOUNDARY_CASES]:
        send_and_check(case, names, cluster)


def send_and_check(case: Any, names: Names, cluster: Any) -> None:
    confine(case, names)
    response = case.call(timeout=TIMEOUT_S)
    status = response.status_code
    request = f"{case.method} {response.request.url}\nbody: {case.body!r}"
    if status >= 500:
        retry_after = "retry-after" in {name.lower() for name in response.headers}
        assert status == 503 and retry_after, (
            f"{request}\n-> {status} {response.text[:2000]}\n{gateway_errors(cluster)}"
        )
    if status >= 400:
        body = error_body(response)
        assert isinstance(body, dict), f"{request}\n-> {status} {response.text[:500]}"
        code, message = body.get("error_code"), body.get("message")
        assert type(code) is int and isinstance(message, str), f"{request}\n-> {body}"
        # The first three digits are the status; retriable errors are 503 with a 500xx code.
        family = str(code)[:3]
        assert family == str(status) or (status, family) == (503, "500"), f"{request}\n-> {body}"
    case.validate_response(response, checks=[response_schema_conformance])


def error_body(response: Any) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        return None


def gateway_errors(cluster: Any) -> str:
    """The last traceback in the gateway's log: the reason for a 500."""
    path = cluster.local.gateways()[0].log_path
    with open(path, encoding="utf-8", errors="replace") as log:
        text = log.read()
    start = text.rfind("Traceback")
    return text[max(0, text.rfind("\n", 0, start)) :][-6000:] if start >= 0 else "(no traceback)"


# -- keeping requests to this run's names ------------------------------------------------------


def confine(case: Any, names: Names) -> None:
    """Rewrite a drawn request so that it touches only this module's namespace (see above).

    Works on copies: a strategy's explicit example is shared by every case drawn from it.
    """
    method, path = case.method.upper(), case.operation.path
    destructive = method in ("DELETE", "PATCH")
    case.path_parameters = {
        key: _path_value(key, drawn, method, path, destructive, names)
        for key, drawn in (case.path_parameters or {}).items()
    }
    query = dict(case.query or {})
    for key in ("timeout_ms", "timeout"):
        if key in query:
            query[key] = _at_most(query[key], MAX_POLL_MS)
    if query.get("follow") in (True, "true"):  # a follow read idles up to max_poll_ms untold
        query["timeout_ms"] = _at_most(query.get("timeout_ms", MAX_POLL_MS), MAX_POLL_MS)
    case.query = query
    if isinstance(case.body, dict):
        case.body = copy.deepcopy(case.body)
        _confine_body(case.body, names)


def _path_value(
    key: str, drawn: Any, method: str, path: str, destructive: bool, names: Names
) -> Any:
    known = not destructive and _heads(drawn)
    if key == "cluster_id":
        return names.cluster_id if _heads(drawn) else _fresh(drawn)
    if key in ("topic", "topic_name"):
        return names.topic if known else _fresh(drawn)
    if key == "group":
        if path.startswith("/groups/") and path.endswith("/members") and method == "POST":
            return _fresh(f"join{uuid.uuid4().hex[:8]}-{drawn}")
        if path == "/consumers/{group}":
            return _fresh(drawn)
        if not known:
            return _fresh(drawn)
        return names.v2_group if path.startswith("/consumers/") else names.member_group
    if key == "group_id":
        return names.v2_group if _heads(drawn) else _fresh(drawn)
    if key == "instance":
        return names.instance if known else _fresh(drawn)
    if key in ("member", "consumer_id"):
        return names.member_id if known else _fresh(drawn)
    return drawn


def _confine_body(body: dict[str, Any], names: Names) -> None:
    if isinstance(body.get("topic_name"), str):
        body["topic_name"] = _fresh(body["topic_name"])
    if "partitions_count" in body:
        body["partitions_count"] = _at_most(body["partitions_count"], MAX_PARTITIONS)
    for key in ("session_timeout_ms", "rebalance_timeout_ms"):
        if key in body:
            body[key] = _at_most(body[key], MAX_GROUP_TIMEOUT_MS)
    if isinstance(topics := body.get("topics"), list):
        body["topics"] = [_topic(t, names) for t in topics]
    for key in ("partitions", "offsets"):
        if isinstance(items := body.get(key), list):
            for item in items:
                if isinstance(item, dict) and "topic" in item:
                    item["topic"] = _topic(item["topic"], names)


def _topic(drawn: Any, names: Names) -> Any:
    if not isinstance(drawn, str):
        return drawn
    return names.topic if _heads(drawn) else _fresh(drawn)


def _heads(drawn: Any) -> bool:
    """A deterministic coin from the drawn value: use a known name, or a fresh one."""
    return len(str(drawn)) % 2 == 0


def _fresh(drawn: Any) -> str:
    """The drawn (percent-encoded) text behind this run's prefix, without a ``/``: a slash,
    decoded by the server, would take the request to another route."""
    return PREFIX + re.sub("/|%2[fF]", "", str(drawn))


def _at_most(value: Any, limit: int) -> Any:
    """Numbers (and numeric strings, which the gateway may coerce) capped at ``limit``."""
    if isinstance(value, list):
        return [_at_most(v, limit) for v in value]
    number = _number(value)
    return limit if number is not None and number > limit else value


def _number(value: Any) -> float | None:
    """What the gateway's int fields could read from ``value``, if anything."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None
