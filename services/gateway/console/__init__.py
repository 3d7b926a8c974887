"""The web console at ``/ui``: pages drawn in the browser from the gateway's REST API.

``pages.py`` serves the page and its files from ``static/`` (vanilla ES modules, no build
step), ``api.py`` the few read-only REST views the pages need that the v3 API lacks,
``summaries.py`` their pure arithmetic.
"""

from __future__ import annotations

from fastapi import FastAPI

from services.gateway.console import api, pages


def install(app: FastAPI) -> None:
    """Mount the console's page, files and REST views on ``app``."""
    pages.install(app)
    app.include_router(api.router)
