"""``/ui``: the console's page and its files, served from the package (no CDN, no build step).

One HTML page loads the console's ES modules, which draw each view in the browser from the
gateway's own REST API (hash routes: ``/ui#/topics``, ``/ui#/messages``, ...). The page and its
files are outside the credential guard, as ``/docs`` is: they hold nothing secret, and every
call they make carries the credentials the person typed, so REST auth and the ACLs decide
what the console may show or do, unchanged.

The policy is stricter than ``/docs``': no inline script or style at all, nothing from any other
host, no frames, no forms posted anywhere.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.types import Scope

from pafka.errors import ConfigError

UI_URL = "/ui"
ASSETS_URL = "/ui/assets"
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
PAGE = "index.html"


def static_dir() -> Path:
    folder = Path(str(files("services.gateway.console").joinpath("static")))
    if not (folder / PAGE).is_file():
        raise ConfigError(f"{folder} lacks the console's {PAGE} (package data not installed?)")
    return folder


class ConfinedFiles(StaticFiles):
    """Static files that carry the console's policy and are never cached stale."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response


def install(app: FastAPI) -> None:
    """Serve ``/ui`` and its assets on ``app``."""
    folder = static_dir()
    app.mount(ASSETS_URL, ConfinedFiles(directory=folder), name="console-assets")

    async def page(request: Request) -> Response:
        response = FileResponse(folder / PAGE, media_type="text/html")
        response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        response.headers["Cache-Control"] = "no-cache"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    async def slash(request: Request) -> Response:
        return RedirectResponse(str(request.scope.get("root_path", "")).rstrip("/") + UI_URL)

    app.add_route(UI_URL, page, include_in_schema=False)
    app.add_route(UI_URL + "/", slash, include_in_schema=False)
