"""Bearer tokens on a live cluster: an in-process gateway with a token file over the shared cluster.

Without a token, or with an unknown one, every request but health and docs is 401; a token
limited to one topic gets 403 for another (in the path or in a body) and nothing is written,
while its own topic is produced to and read; a token for every topic may do all of it. The
cluster's own gateways, configured without tokens, stay open.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx

V2 = "application/vnd.kafka.v2+json"
JSON = "application/vnd.kafka.json.v2+json"


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_tokens_guard_topics(cluster: Any, tmp_path: Path) -> None:
    from services.gateway.app import create_app
    from services.gateway.context import open_context
    from services.gateway.settings import GatewaySettings

    mine, secret, group = name("auth-mine"), name("auth-secret"), name("auth-group")
    for topic in (mine, secret):
        cluster.create_topic(topic, partitions=1, replication_factor=1)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# test tokens\nnarrow {mine}  # one topic\nwide *\n")
    settings = GatewaySettings(zookeeper=cluster.zk_connect, tokens_file=tokens)
    narrow, wide = bearer("narrow"), bearer("wide")
    records = {"records": [{"value": {"n": 1}}]}

    async def scenario() -> None:
        ctx = await open_context(settings)
        transport = httpx.ASGITransport(app=create_app(settings, ctx))
        try:
            async with httpx.AsyncClient(
                transport=transport, base_url="http://gw", timeout=60
            ) as gw:
                # No token, or an unknown one: 401 with the scheme to use.
                for headers in ({}, bearer("guess"), {"Authorization": "Basic bmFycm93Og=="}):
                    got = await gw.get(f"/topics/{mine}", headers=headers)
                    assert got.status_code == 401, got.text
                    assert got.headers["WWW-Authenticate"] == "Bearer"
                    assert got.json()["error_code"] == 40101
                for path in ("/livez", "/readyz", "/openapi.json", "/docs"):
                    assert (await gw.get(path)).status_code == 200, path

                # The narrow token: its topic works end to end ...
                got = await gw.post(f"/topics/{mine}", json=records, headers=narrow)
                assert got.status_code == 200, got.text
                got = await gw.get(
                    f"/topics/{mine}/partitions/0/records",
                    params={"offset": 0, "timeout_ms": 0},
                    headers={**narrow, "Accept": JSON},
                )
                assert got.status_code == 200, got.text
                assert [r["value"] for r in got.json()["records"]] == [{"n": 1}]
                assert (await gw.get("/topics", headers=narrow)).status_code == 200

                # ... another topic is refused, in the path or in a body, and not touched.
                refused = [
                    await gw.get(f"/topics/{secret}", headers=narrow),
                    await gw.post(f"/topics/{secret}", json=records, headers=narrow),
                    await gw.post(
                        "/v3/clusters/any/topics",
                        json={"topic_name": f"{secret}-new", "partitions_count": 1},
                        headers=narrow,
                    ),
                    await gw.post(
                        f"/groups/{group}/members", json={"topics": [mine, secret]}, headers=narrow
                    ),
                    await gw.get(
                        "/v3/clusters/any/topic-sizes",
                        params={"topic_name": [mine, secret]},
                        headers=narrow,
                    ),
                ]
                created = await gw.post(
                    f"/consumers/{group}",
                    json={"name": "reader"},
                    headers={**narrow, "Content-Type": V2},
                )
                assert created.status_code == 200, created.text
                instance = f"/consumers/{group}/instances/reader"
                refused.append(
                    await gw.post(
                        f"{instance}/subscription", json={"topics": [secret]}, headers=narrow
                    )
                )
                for got in refused:
                    assert got.status_code == 403, got.text
                    assert got.json()["error_code"] == 40301
                got = await gw.post(
                    f"{instance}/subscription", json={"topics": [mine]}, headers=narrow
                )
                assert got.status_code == 204, got.text
                assert (await gw.delete(instance, headers=narrow)).status_code == 204

                # The wide token sees that nothing reached the secret topic or was created.
                got = await gw.get(f"/topics/{secret}/partitions/0/offsets", headers=wide)
                assert got.status_code == 200 and got.json()["end_offset"] == 0, got.text
                got = await gw.get(f"/topics/{secret}-new", headers=wide)
                assert got.status_code == 404, got.text
                got = await gw.post(f"/topics/{secret}", json=records, headers=wide)
                assert got.status_code == 200, got.text
        finally:
            await ctx.close()

    asyncio.run(scenario())

    # The cluster's gateways have no tokens configured: no authentication there.
    for url in cluster.gateways:
        assert httpx.get(f"{url}/topics/{mine}", timeout=30).status_code == 200
