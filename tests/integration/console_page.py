"""The console's page in a test's Chromium: only the gateway reachable, every failed call and
logged error kept, and the ways tests find things on it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

WAIT_MS = 30_000
# What the console shows for a figure it cannot compute yet (an en dash).
NOT_YET = "\u2013"


class ConsolePage:
    """A Chromium page that may reach only the gateway: other hosts are aborted and kept, as
    are the gateway's answers of 400 and more and the page's console errors."""

    def __init__(self, browser: Any, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.elsewhere: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("response", self._answered)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)

    def _route(self, route: Any) -> None:
        parts = urlsplit(route.request.url)
        if parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == self.origin:
            route.continue_()
        else:
            self.elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    def _answered(self, response: Any) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.status} {response.request.method} {response.url}")

    def open(self, hash_route: str) -> Any:
        self.page.goto(f"{self.origin}/ui#{hash_route}")
        return self.page


@contextlib.contextmanager
def console(chromium: Any, base_url: str, failing: tuple[int, ...] = ()) -> Iterator[ConsolePage]:
    """The page; on leaving, no other host was asked, the gateway answered no call with an
    error but the ``failing`` statuses expected, and the page logged no error but those
    calls' (the browser logs one per failed call)."""
    page = ConsolePage(chromium, base_url)
    try:
        yield page
    except Exception:
        # What the page showed, and what it logged, beside the failure.
        print(page.page.locator("body").inner_html(), page.errors, page.failed, sep="\n")
        raise
    finally:
        page.context.close()
    assert page.elsewhere == [], page.elsewhere
    assert sorted(int(f.split()[0]) for f in page.failed) == sorted(failing), page.failed
    assert [e for e in page.errors if "status of 40" not in e] == [], page.errors


def row(page: Any, text: str) -> Any:
    return page.locator("tbody tr", has_text=text)


def config_row(page: Any, name: str) -> Any:
    return page.locator("tbody tr").filter(has=page.get_by_role("cell", name=name, exact=True))


def sign_in(page: Any, token: str) -> None:
    dialog = page.get_by_role("dialog", name="Credentials needed")
    dialog.wait_for(timeout=WAIT_MS)
    dialog.get_by_label("Bearer token").check()
    dialog.get_by_label("Token", exact=True).fill(token)
    dialog.get_by_role("button", name="Sign in").click()
