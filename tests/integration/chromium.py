"""Debian's ``chromium`` driven by Playwright, for the browser tests (``/docs``, ``/ui``).

Importing this skips the importing test module, with the reason, where Chromium or Playwright
is missing (``make test-deps`` and CI install both).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip(
        "Debian's chromium is not installed (apt-get install chromium)", allow_module_level=True
    )
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

# As root Chromium needs --no-sandbox; the rest keep it from calling Google's services on its own
# (refused by a closed network, and not the pages' doing).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def headless_chromium() -> Iterator[Any]:
    """One headless browser (Playwright's ``Browser``), closed on leaving."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


def browser_fixture() -> Any:
    """A module's ``chromium`` fixture (one browser for the module): ``chromium =
    browser_fixture()`` in the test module."""

    @pytest.fixture(scope="module", name="chromium")
    def chromium() -> Iterator[Any]:
        with headless_chromium() as browser:
            yield browser

    return chromium


def screenshots_fixture(folder: str) -> Any:
    """A module's ``shots`` fixture: a folder under the run's temporary folder, its path
    printed (``-s``) so the screenshots can be opened."""

    @pytest.fixture(scope="module", name="shots")
    def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
        made = tmp_path_factory.mktemp(folder)
        print(f"console screenshots: {made}")
        return made

    return shots
