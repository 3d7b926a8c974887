"""The gateway's ``/docs`` and ``/redoc`` in a real headless Chromium with no network beyond it.

Debian's ``chromium``, driven by Playwright (no browser of Playwright's own), loads the pages
from a live gateway; every request the pages make to any other host is aborted and counted,
and none may be made (the pages' Content-Security-Policy keeps ReDoc from even asking for its
one image from elsewhere, and that is checked too). Swagger UI must render every operation of
the gateway's OpenAPI, and "Try it out" on ``GET /topics`` must show a 200 listing a topic this
test created; ReDoc must render every operation too. A second gateway process, guarded by a
bearer token and Basic logins, shows the "Authorize" button at work: the same call is a 401
before credentials are given (or with a wrong password), and a 200 with either scheme.

Skips, with the reason, where Chromium or Playwright is missing (``make test-deps`` and CI
install both).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from pafka.admin.scram_users import alter_user, upsert
from pafka.security.scram_credentials import ScramCredential
from tests.integration.chromium import headless_chromium
from tests.integration.gateway_process import gateway_process

TOKEN = "docs-browser-token"
USER, PASSWORD, MECHANISM = f"docs-{uuid.uuid4().hex[:8]}", "docs-password", "SCRAM-SHA-256"
# What the pages' Content-Security-Policy keeps the browser from even asking for: ReDoc's menu
# shows Redocly's logo from their CDN whatever its options (and hides it when it fails to load).
REFUSED_BY_POLICY = {"https://cdn.redoc.ly/redoc/logo-mini.svg"}
RENDER_TIMEOUT_MS = 30_000


class OfflineBrowser:
    """A Chromium page that may reach only ``origin``: every other request is aborted and kept."""

    def __init__(self, browser: Any, origin: str) -> None:
        self.origin = origin
        self.elsewhere: list[str] = []
        self.served: set[str] = set()
        # The scheme of the Authorization header of each GET /topics the page sent.
        self.topics_auth: list[str] = []
        self.failed: list[str] = []
        self.context = browser.new_context()
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.refused: list[str] = []
        self.page.on("requestfailed", self._failed)

    def _route(self, route: Any) -> None:
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == self.origin:
            self.served.add(parts.path)
            if parts.path == "/topics":
                header = route.request.headers.get("authorization", "")
                self.topics_auth.append(header.partition(" ")[0])
            route.continue_()
        else:
            self.elsewhere.append(url)
            route.abort("internetdisconnected")

    def _failed(self, request: Any) -> None:
        if request.failure == "csp":
            self.refused.append(request.url)
        elif request.url not in self.elsewhere:
            self.failed.append(f"{request.url} {request.failure}")

    def close(self) -> None:
        self.context.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with headless_chromium() as browser:
        yield browser


@contextlib.contextmanager
def offline(chromium: Any, base_url: str) -> Iterator[OfflineBrowser]:
    parts = urlsplit(base_url)
    page = OfflineBrowser(chromium, f"{parts.scheme}://{parts.netloc}")
    try:
        yield page
    finally:
        page.close()
    assert page.elsewhere == [], f"requests to other hosts: {page.elsewhere}"
    assert page.failed == [], f"failed requests: {page.failed}"
    assert set(page.refused) <= REFUSED_BY_POLICY, page.refused


def operations(base_url: str) -> list[dict[str, Any]]:
    spec = httpx.get(f"{base_url}/openapi.json", timeout=30).json()
    return [op for ops in spec["paths"].values() for op in ops.values()]


def operation_count(base_url: str) -> int:
    return len(operations(base_url))


def operation_ids(base_url: str) -> set[str]:
    return {op["operationId"] for op in operations(base_url)}


def try_list_topics(page: Any) -> tuple[str, str]:
    """Expand ``GET /topics``, "Try it out", "Execute": the live response's status and body."""
    block = page.locator(
        ".opblock.opblock-get", has=page.locator('.opblock-summary-path[data-path="/topics"]')
    )
    if block.locator("button.try-out__btn").count() == 0:
        block.locator(".opblock-summary").first.click()
    try_out = block.locator("button.try-out__btn")
    if try_out.inner_text().strip() == "Try it out":
        try_out.click()
    block.locator("button.execute").click()
    live = block.locator(".live-responses-table .response")
    live.first.wait_for(timeout=RENDER_TIMEOUT_MS)
    status = live.locator(".response-col_status").first.inner_text().strip()
    body = live.locator(".response-col_description").first.inner_text()
    block.locator("button.btn-clear").click()
    return status, body


def open_docs(page: Any, base_url: str, operations: int) -> None:
    page.goto(f"{base_url}/docs")
    page.locator(".opblock").first.wait_for(timeout=RENDER_TIMEOUT_MS)
    assert page.locator(".opblock").count() == operations


def test_docs_and_redoc_render_and_try_offline(cluster: Any, chromium: Any) -> None:
    base_url = cluster.gateways[0]
    topic = f"docs-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    operations = operation_count(base_url)
    assert operations > 20

    with offline(chromium, base_url) as browser:
        page = browser.page
        open_docs(page, base_url, operations)
        assert "pafka gateway" in page.locator(".info .title").inner_text()
        assert {
            "/docs-assets/swagger-ui-bundle.js",
            "/docs-assets/swagger-ui.css",
        } <= browser.served
        status, body = try_list_topics(page)
        assert status == "200", body
        assert f'"{topic}"' in body

        page.goto(f"{base_url}/redoc")
        ops = page.locator('[data-section-id*="operation/"]')
        ops.first.wait_for(timeout=RENDER_TIMEOUT_MS)
        # A section per operation (under its tag's id, and again as an anchor of its own).
        rendered = ops.evaluate_all(
            "els => els.map(e => e.dataset.sectionId.split('operation/').pop())"
        )
        assert set(rendered) == operation_ids(base_url)
        assert "/docs-assets/redoc.standalone.js" in browser.served


@pytest.fixture
def guarded_gateway(cluster: Any, tmp_path: Path) -> Iterator[str]:
    """A gateway process of its own over the shared cluster that needs ``Bearer TOKEN`` or a
    Basic login of :data:`USER` (a SCRAM user in the shared cluster's ZooKeeper)."""
    alter_user(
        cluster.zk, USER, upsert(MECHANISM, ScramCredential.from_password(MECHANISM, PASSWORD))
    )
    env = {"PAFKA_GATEWAY_TOKENS": f"{TOKEN} *", "PAFKA_GATEWAY_BASIC_AUTH": "true"}
    with gateway_process(cluster.zk_connect, tmp_path, env) as url:
        yield url


def authorize(page: Any, fields: dict[str, str]) -> None:
    """Fill one scheme of the "Authorize" dialog (its inputs by label) and close the dialog."""
    page.locator(".auth-wrapper button.authorize").click()
    dialog = page.locator(".modal-ux")
    dialog.wait_for(timeout=RENDER_TIMEOUT_MS)
    first = f'input[aria-label="{next(iter(fields))}"]'
    scheme = dialog.locator(".auth-container", has=page.locator(first))
    for label, value in fields.items():
        scheme.locator(f'input[aria-label="{label}"]').fill(value)
    scheme.locator("button.authorize").click()
    dialog.locator("button.btn-done").first.click()


def logout(page: Any) -> None:
    page.locator(".auth-wrapper button.authorize").click()
    dialog = page.locator(".modal-ux")
    dialog.wait_for(timeout=RENDER_TIMEOUT_MS)
    dialog.locator('button[aria-label="Remove authorization"]').first.click()
    dialog.locator("button.btn-done").first.click()


def test_authorize_button_sends_basic_and_bearer_credentials(
    cluster: Any, chromium: Any, guarded_gateway: str
) -> None:
    topic = f"docs-auth-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, partitions=1, replication_factor=1)
    operations = operation_count(guarded_gateway)

    with offline(chromium, guarded_gateway) as browser:
        page = browser.page
        open_docs(page, guarded_gateway, operations)
        status, body = try_list_topics(page)
        assert status == "401", body

        # Both schemes the guard accepts are offered, and each is sent as typed.
        authorize(page, {"auth-basic-username": USER, "auth-basic-password": "wrong"})
        status, body = try_list_topics(page)
        assert status == "401", body
        logout(page)
        authorize(page, {"auth-basic-username": USER, "auth-basic-password": PASSWORD})
        status, body = try_list_topics(page)
        assert status == "200", body
        assert f'"{topic}"' in body
        logout(page)
        authorize(page, {"auth-bearer-value": TOKEN})
        status, body = try_list_topics(page)
        assert status == "200", body
        assert f'"{topic}"' in body
    assert browser.topics_auth == ["", "Basic", "Basic", "Bearer"]
