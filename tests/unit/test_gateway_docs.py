"""The gateway's /docs and /redoc pages: their assets are the package's own, open to anyone
even when credentials guard the API, and the OpenAPI declares the schemes "Authorize" offers.
(The pages rendered in a real browser: tests/integration/test_gateway_docs_browser.py.)"""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from pafka.errors import ConfigError
from services.gateway import docs
from services.gateway.settings import GatewaySettings

PAGES = (docs.DOCS_URL, docs.REDOC_URL, docs.OAUTH2_REDIRECT_URL)


def get_all(settings: GatewaySettings, paths: list[str]) -> list[httpx.Response]:
    from services.gateway.app import create_app

    app = create_app(settings)

    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://gw") as gw:
            return [await gw.get(path) for path in paths]

    return asyncio.run(run())


def test_every_asset_is_in_the_installed_package() -> None:
    folder = docs.assets_dir()
    for name in docs.ASSET_NAMES:
        assert (folder / name).stat().st_size > 1000, name


def test_a_missing_assets_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs, "ASSETS_PACKAGE", "no_such_docs_assets")
    with pytest.raises(ConfigError, match="no_such_docs_assets"):
        docs.assets_dir()


@pytest.mark.parametrize(
    "settings",
    [GatewaySettings(), GatewaySettings(tokens="secret *")],
    ids=["open", "guarded"],
)
def test_pages_and_the_assets_they_name_are_served_from_the_gateway(
    settings: GatewaySettings,
) -> None:
    pages = get_all(settings, list(PAGES))
    assert [p.status_code for p in pages] == [200, 200, 200]
    html = "".join(p.text for p in pages)
    # Nothing but relative URLs: no CDN, no fonts, no favicon from elsewhere.
    assert re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]?(?:https?:)?//""", html) == []
    for page in pages:
        assert page.headers["content-security-policy"] == docs.CONTENT_SECURITY_POLICY
    named = sorted(set(re.findall(rf"{docs.ASSETS_URL}/[\w.-]+", html)))
    assert named == sorted(f"{docs.ASSETS_URL}/{name}" for name in docs.ASSET_NAMES)
    for asset in get_all(settings, named):
        assert asset.status_code == 200, asset.url
        assert len(asset.content) > 1000, asset.url


def test_the_guarded_schema_declares_bearer_and_basic() -> None:
    schema = get_all(GatewaySettings(tokens="secret *", basic_auth=True), ["/openapi.json"])[0]
    schemes = schema.json()["components"]["securitySchemes"]
    assert schemes["HTTPBearer"] == {
        "type": "http",
        "description": "A token of PAFKA_GATEWAY_TOKENS",
        "scheme": "bearer",
    }
    assert schemes["HTTPBasic"]["scheme"] == "basic"
    security = schema.json()["paths"]["/topics"]["get"]["security"]
    assert {"HTTPBearer": []} in security
    assert {"HTTPBasic": []} in security


def test_an_open_gateway_declares_no_scheme() -> None:
    schema = get_all(GatewaySettings(), ["/openapi.json"])[0].json()
    assert "securitySchemes" not in schema.get("components", {})
