"""Shared by the page and plugin tests: headless Chromium (Debian's package) driven by Playwright, and a uvicorn
server of an ASGI app on 127.0.0.1 in a thread.

Tests that need the browser are skipped, with the reason, when ``chromium`` is not on PATH (``.ci/run`` installs
it; Playwright never downloads a browser here).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium package is not installed (apt-get install chromium)"
)
#: Screenshots go here (``LANCE_PAGE_SCREENSHOTS``), else to a temporary directory printed by the tests.
SCREENSHOTS = Path(os.environ.get("LANCE_PAGE_SCREENSHOTS") or tempfile.mkdtemp(prefix="lance-page-shots-"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright, the system's binary)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


class WatchedPage:
    """A browser tab that records every dialog (an ``alert`` would mean a script ran) and every console error."""

    def __init__(self, browser: Any) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.tab = self.context.new_page()
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.tab.on("dialog", self._dialog)
        self.tab.on("pageerror", lambda err: self.errors.append(str(err)))

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, url: str) -> Any:
        response = self.tab.goto(url)
        self.tab.wait_for_load_state("load")
        return response

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.tab.screenshot(path=str(path), full_page=True)
        return path

    def close(self) -> None:
        self.context.close()
