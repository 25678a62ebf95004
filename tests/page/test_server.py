"""The page's own server (``python -m airflow_provider_lance.page``) and its independence from Airflow."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.browser import free_port

REPO = Path(__file__).resolve().parents[2]


def test_page_package_does_not_import_airflow() -> None:
    code = "import sys, airflow_provider_lance.page; assert not any(m.split('.')[0] == 'airflow' for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)


def test_command_line_server(root: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "airflow_provider_lance.page", "--root", str(root), "--port", str(port)]
    server = subprocess.Popen([*command, "--property", "table_version_management=true"], cwd=REPO)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
                break
            except httpx.HTTPError:
                assert server.poll() is None and time.monotonic() < deadline, "the page server did not start"
                time.sleep(0.2)
        assert response.status_code == 200 and "Namespace &lt;root&gt;" in response.text
        assert response.headers["content-security-policy"].startswith("default-src 'none'")
        assert httpx.post(f"http://127.0.0.1:{port}/").status_code == 405
    finally:
        server.terminate()
        server.wait(10)
