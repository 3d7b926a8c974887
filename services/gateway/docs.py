"""``/docs`` (Swagger UI) and ``/redoc`` served with their own assets, so they work offline.

FastAPI's own pages load Swagger UI's and ReDoc's JavaScript, CSS and favicon from a CDN and
ReDoc's fonts from Google: blank wherever the internet is unreachable (air-gapped clusters).
Here the pages point at files the gateway serves itself, under :data:`ASSETS_URL`.

The files come from the PyPI distribution ``fastapi-offline`` (pinned in pyproject; MIT), used
only as a carrier of them: its ``static/`` folder holds Swagger UI's ``swagger-ui-bundle.js``
and ``swagger-ui.css`` (Swagger UI 5.32.6, Apache-2.0) and ReDoc's ``redoc.standalone.js``
(2.5.3, MIT). A wheel keeps them out of the repository, pinned and hash-checked by pip like any
other dependency, so installing from fetched wheels works with no network; :func:`assets_dir`
says clearly which file is missing if the distribution does not carry them.

The pages, the OAuth2 redirect page and the assets are plain routes, outside the gateway's
credential guard (as FastAPI's own pages are): the HTML holds nothing secret, and the "Authorize"
button then offers the bearer and Basic schemes that the guard declares in the OpenAPI.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import HTMLResponse

from pafka.errors import ConfigError

DOCS_URL = "/docs"
REDOC_URL = "/redoc"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"
ASSETS_URL = "/docs-assets"
ASSET_NAMES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")
ASSETS_PACKAGE = "fastapi_offline"
# No badge asking validator.swagger.io about the spec; the authorization typed into "Authorize"
# survives a reload of the page.
SWAGGER_UI_PARAMETERS: dict[str, Any] = {"validatorUrl": None, "persistAuthorization": True}
# The pages may load nothing from another host, whatever the bundles try: ReDoc's menu shows
# Redocly's logo from their CDN unconditionally (it hides the image when it fails to load).
# Inline: FastAPI's pages start the UIs from an inline script; blob: ReDoc's search worker.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'"
)


def assets_dir() -> Path:
    """The folder of Swagger UI's and ReDoc's files, each of :data:`ASSET_NAMES` checked."""
    try:
        folder = Path(str(files(ASSETS_PACKAGE).joinpath("static")))
    except ModuleNotFoundError:
        raise ConfigError(
            f"the gateway's /docs needs the {ASSETS_PACKAGE} distribution (pip install .)"
        ) from None
    missing = [name for name in ASSET_NAMES if not (folder / name).is_file()]
    if missing:
        raise ConfigError(f"{folder} lacks the docs assets {', '.join(missing)}")
    return folder


def confined(page: HTMLResponse) -> HTMLResponse:
    page.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return page


def install(app: FastAPI) -> None:
    """Serve the pages and their assets on ``app`` (made with ``docs_url=redoc_url=None``)."""
    app.mount(ASSETS_URL, StaticFiles(directory=assets_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"

    def prefix(request: Request) -> str:
        # Behind a proxy that strips a prefix (root_path), every URL the page loads carries it.
        return str(request.scope.get("root_path", "")).rstrip("/")

    async def swagger_ui(request: Request) -> HTMLResponse:
        at = prefix(request)
        assets = at + ASSETS_URL
        page = get_swagger_ui_html(
            openapi_url=at + openapi_url,
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{assets}/swagger-ui-bundle.js",
            swagger_css_url=f"{assets}/swagger-ui.css",
            swagger_favicon_url=f"{assets}/favicon.png",
            oauth2_redirect_url=at + OAUTH2_REDIRECT_URL,
            swagger_ui_parameters=SWAGGER_UI_PARAMETERS,
        )
        return confined(page)

    async def oauth2_redirect(request: Request) -> HTMLResponse:
        return confined(get_swagger_ui_oauth2_redirect_html())

    async def redoc(request: Request) -> HTMLResponse:
        at = prefix(request)
        assets = at + ASSETS_URL
        page = get_redoc_html(
            openapi_url=at + openapi_url,
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{assets}/redoc.standalone.js",
            redoc_favicon_url=f"{assets}/favicon.png",
            with_google_fonts=False,
        )
        return confined(page)

    app.add_route(DOCS_URL, swagger_ui, include_in_schema=False)
    app.add_route(OAUTH2_REDIRECT_URL, oauth2_redirect, include_in_schema=False)
    app.add_route(REDOC_URL, redoc, include_in_schema=False)
