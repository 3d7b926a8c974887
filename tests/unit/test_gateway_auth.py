"""Bearer tokens: parsing the token file and variable, matching topics, and the app's decisions.

The app tests run the real ``create_app`` without a cluster: every request here is answered by
the authentication dependency (or is an open route) before any handler needs a broker.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pafka.errors import ConfigError
from services.gateway.auth import (
    RECORD_BODIES,
    TOPIC_PARAMS,
    Grant,
    Tokens,
    body_topics,
    load_tokens,
    parse_tokens,
)
from services.gateway.settings import GatewaySettings

TOPIC_NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCXYZ0123456789._-", min_size=1)

# -- parsing -----------------------------------------------------------------------------------


def test_file_lines_comments_and_globs() -> None:
    text = """
    # token      topics
    ingest       orders,payments-*
    analytics    *        # everything
    audit\taudit-?? , audit-archive
    hash#in-token  x
    """
    grants = parse_tokens(text, "tokens.txt")
    assert grants == {
        "ingest": Grant(("orders", "payments-*")),
        "analytics": Grant(("*",)),
        "audit": Grant(("audit-??", "audit-archive")),
        "hash#in-token": Grant(("x",)),
    }


def test_variable_lines_are_separated_by_semicolons() -> None:
    grants = parse_tokens(" a orders ; b * ;; ", "PAFKA_GATEWAY_TOKENS", separator=";")
    assert grants == {"a": Grant(("orders",)), "b": Grant(("*",))}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("lonely", "tokens.txt:1: a token needs topics"),
        ("a x\n# c\na y", "tokens.txt:3: the token is given twice"),
        ("a orders payments", "tokens.txt:1: separate topic globs with commas"),
        ("a ,, ", "tokens.txt:1: a token needs topics"),
    ],
)
def test_bad_lines_name_the_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_tokens(text, "tokens.txt")


# -- matching ----------------------------------------------------------------------------------


def test_globs_match_case_sensitively() -> None:
    grant = Grant(("orders", "pay-*", "audit-??"))
    assert grant.allows("orders") and grant.allows("pay-eu") and grant.allows("audit-01")
    assert not grant.allows("Orders") and not grant.allows("orders-2")
    assert not grant.allows("audit-001") and not grant.allows("pay")
    assert grant.denied(["orders", "pay-1", "secret", "other"]) == "secret"
    assert grant.denied([]) is None
    assert grant.denied(["orders"], needs_all=True) == "*"
    assert Grant(("*",)).denied(["anything"], needs_all=True) is None


@given(TOPIC_NAMES)
def test_a_star_grants_every_topic(topic: str) -> None:
    assert Grant(("*",)).allows(topic)


@given(st.lists(TOPIC_NAMES, min_size=1, max_size=5), TOPIC_NAMES)
def test_plain_names_grant_exactly_themselves(names: list[str], topic: str) -> None:
    assert Grant(tuple(names)).allows(topic) == (topic in names)


def test_tokens_are_found_by_digest_only() -> None:
    tokens = Tokens({"s3cr3t": Grant(("orders",))})
    assert tokens.grant_for("s3cr3t") == Grant(("orders",))
    assert tokens.grant_for("s3cr3") is None and tokens.grant_for(None) is None
    assert "s3cr3t" not in repr(vars(tokens))
    assert len(tokens) == 1


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"topic_name": "t", "partitions_count": 3}, (["t"], False)),
        ({"topics": ["a", "b", 7]}, (["a", "b"], False)),
        ({"topic_pattern": "o.*"}, ([], True)),
        ({"topics": [], "topic_pattern": None}, ([], False)),
        (
            {"partitions": [{"topic": "a", "partition": 0}, "junk", {"partition": 1}]},
            (["a"], False),
        ),
        ({"offsets": [{"topic": "b", "partition": 0, "offset": 1}]}, (["b"], False)),
        ({"records": [{"value": {"topic": "not-a-topic"}}]}, ([], False)),
        (["topics"], ([], False)),
        (None, ([], False)),
    ],
)
def test_body_topics(body: Any, expected: tuple[list[str], bool]) -> None:
    assert body_topics(body) == expected


# -- settings ----------------------------------------------------------------------------------


def test_nothing_configured_means_no_authentication() -> None:
    assert load_tokens(GatewaySettings()) is None


def test_file_and_variable_together(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("a orders\n")
    settings = GatewaySettings.from_env(
        {"PAFKA_GATEWAY_TOKENS_FILE": str(path), "PAFKA_GATEWAY_TOKENS": "b *"}
    )
    assert "b *" not in repr(settings)
    tokens = load_tokens(settings)
    assert tokens is not None and len(tokens) == 2
    assert tokens.grant_for("b") == Grant(("*",))

    with pytest.raises(ConfigError, match="repeats a token"):
        load_tokens(GatewaySettings(tokens_file=path, tokens="a *"))
    with pytest.raises(ConfigError, match="TOKENS_FILE"):
        load_tokens(GatewaySettings(tokens_file=tmp_path / "missing"))


def test_an_empty_file_still_requires_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("# nobody yet\n")
    tokens = load_tokens(GatewaySettings(tokens_file=path))
    assert tokens is not None and len(tokens) == 0


# -- the app's decisions (no cluster: nothing here reaches a handler) ---------------------------


def app_requests(calls: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    from services.gateway.app import create_app

    app = create_app(GatewaySettings(tokens="narrow orders,pay-*; wide *"))

    async def run() -> list[httpx.Response]:
        # Requests that pass reach a handler without a broker: a 500, which is not the point.
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as gw:
            return [await gw.request(method, url, **kw) for method, url, kw in calls]

    return asyncio.run(run())


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_requests_without_a_known_token_are_401() -> None:
    for answer in app_requests(
        [
            ("GET", "/topics", {}),
            ("GET", "/topics/orders", {"headers": {"Authorization": "Basic bmFycm93Og=="}}),
            ("GET", "/topics/orders", {"headers": bearer("guess")}),
            ("POST", "/v3/clusters/c/topics", {"json": {"topic_name": "orders"}}),
            ("DELETE", "/groups/g/members/m", {"headers": {"Authorization": "Bearer"}}),
        ]
    ):
        assert answer.status_code == 401, answer.text
        assert answer.headers["WWW-Authenticate"] == "Bearer"
        assert answer.json()["error_code"] == 40101


def test_topics_the_token_may_not_use_are_403() -> None:
    narrow = bearer("narrow")
    consumer = "/consumers/g/instances/i"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("GET", "/topics/secret", {"headers": narrow}),
        ("POST", "/topics/secret", {"headers": narrow, "json": {"records": [{"value": 1}]}}),
        ("GET", "/topics/secret/partitions/0/records", {"headers": narrow}),
        ("DELETE", "/v3/clusters/c/topics/secret", {"headers": narrow}),
        ("GET", "/v3/clusters/c/consumer-groups/g/lags/secret/partitions/0", {"headers": narrow}),
        ("POST", "/v3/clusters/c/topics", {"headers": narrow, "json": {"topic_name": "secret"}}),
        ("POST", f"{consumer}/subscription", {"headers": narrow, "json": {"topics": ["secret"]}}),
        ("POST", f"{consumer}/subscription", {"headers": narrow, "json": {"topic_pattern": "."}}),
        (
            "POST",
            f"{consumer}/assignments",
            {"headers": narrow, "json": {"partitions": [{"topic": "secret", "partition": 0}]}},
        ),
        (
            "POST",
            f"{consumer}/offsets",
            {
                "headers": narrow,
                "json": {"offsets": [{"topic": "secret", "partition": 0, "offset": 1}]},
            },
        ),
        (
            "POST",
            "/groups/g/members",
            {"headers": narrow, "json": {"topics": ["orders", "secret"]}},
        ),
    ]
    for (method, url, _), answer in zip(calls, app_requests(calls), strict=True):
        assert answer.status_code == 403, (method, url, answer.text)
        assert answer.json()["error_code"] == 40301


def test_known_tokens_for_their_topics_pass() -> None:
    narrow, wide = bearer("narrow"), bearer("wide")
    answers = app_requests(
        [
            ("GET", "/topics", {"headers": narrow}),
            ("GET", "/topics/pay-eu", {"headers": {"Authorization": "bearer   narrow "}}),
            ("GET", "/topics/secret", {"headers": wide}),
            (
                "POST",
                "/consumers/g/instances/i/subscription",
                {"headers": wide, "json": {"topic_pattern": "."}},
            ),
            # Produce bodies are records, not read for topic names.
            (
                "POST",
                "/topics/orders",
                {"headers": narrow, "json": {"topics": ["secret"], "records": []}},
            ),
        ]
    )
    for answer in answers:
        assert answer.status_code not in (401, 403), answer.text


def test_health_metrics_and_docs_stay_open() -> None:
    answers = app_requests(
        [("GET", path, {}) for path in ("/livez", "/readyz", "/metrics", "/docs", "/openapi.json")]
    )
    assert [a.status_code for a in answers] == [200, 503, 200, 200, 200]
    schema = answers[-1].json()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    assert {"401", "403"} <= set(schema["paths"]["/topics/{topic}"]["get"]["responses"])


def test_every_topic_path_parameter_is_checked() -> None:
    from services.gateway.app import create_app

    paths = create_app(GatewaySettings()).openapi()["paths"]
    params = {p for path in paths for p in re.findall(r"{(\w+)}", path)}
    assert {p for p in params if "topic" in p} == TOPIC_PARAMS
    served = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    assert served >= RECORD_BODIES


def test_with_an_authorizer_every_token_names_a_principal() -> None:
    from services.gateway.settings import GatewaySettings

    named = GatewaySettings(tokens="t1 User:bob", authorizer="acl")
    grant = load_tokens(named).grant_for("t1")  # type: ignore[union-attr]
    assert grant is not None and str(grant.principal) == "User:bob"
    globbed = GatewaySettings(tokens="t1 User:bob; t2 orders-*", authorizer="acl")
    with pytest.raises(ConfigError, match="names the principal"):
        load_tokens(globbed)
    assert load_tokens(GatewaySettings(tokens="t2 orders-*")) is not None
