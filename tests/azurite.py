"""A real Azure Blob Storage endpoint for the engine: Azurite (npm ``azurite``, installed by ``make node-clients``
into tests/clients/node), started on a free port in a temporary directory and stopped by its pid.

The namespace is configured only through ``storage.*`` properties named as Lance names them:
``storage.account_name``, ``storage.account_key``, ``storage.azure_storage_endpoint`` (the account URL,
path-style: ``http://127.0.0.1:<port>/devstoreaccount1``) and ``storage.allow_http``. The same properties reach
adlfs (through ``Storage``) and pylance (through ``storage_options``). The emulator flag
(``azure_storage_use_emulator=true`` + ``AZURITE_BLOB_STORAGE_URL``) is checked by its own test: it takes the
URL from the environment, one per process, where the endpoint option lets a test put a fault proxy in between.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from airflow_provider_lance.namespace.manifest import flush_deferred_repoints

ACCOUNT = "devstoreaccount1"
# Azurite's well-known key (Microsoft's documentation): it opens local emulators only.
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "lance-ns"
_NODE_DIR = Path(__file__).parent / "clients" / "node"
_QUIET = ("--silent", "--skipApiVersionCheck", "--loose")  # no access log; accept the SDK's newer API versions
_LISTENING = re.compile(rb"listens on (http://127\.0\.0\.1:\d+)")


@dataclass(frozen=True)
class AzuriteServer:
    url: str  # the blob service, http://127.0.0.1:<port>
    pid: int

    @property
    def endpoint(self) -> str:
        """The account URL (path-style, as the emulator serves it)."""
        return f"{self.url}/{ACCOUNT}"

    def storage_options(self, via: str | None = None) -> dict[str, str]:
        """Lance option names (what ``storage.*`` carries without the prefix).

        :param via: the URL of a proxy in front of this server (tests/fault_proxy.py).
        """
        return {
            "account_name": ACCOUNT,
            "account_key": ACCOUNT_KEY,
            "azure_storage_endpoint": f"{via}/{ACCOUNT}" if via else self.endpoint,
            "allow_http": "true",
        }

    def properties(self, root: str, **extra: str) -> dict[str, str]:
        """Namespace properties; credentials are vended to pylance writers through the namespace."""
        return {
            "root": root,
            "credential_vending_enabled": "true",
            **{f"storage.{k}": v for k, v in self.storage_options().items()},
            **extra,
        }

    def container(self, name: str = CONTAINER):  # azure-storage-blob's client (set-up and inspection only)
        from azure.storage.blob import BlobServiceClient

        connection = f"AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};BlobEndpoint={self.endpoint};"
        return BlobServiceClient.from_connection_string(connection).get_container_client(name)

    def keys(self, prefix: str) -> list[str]:
        """Every blob name under ``prefix`` in the test container."""
        return [blob.name for blob in self.container().list_blobs(name_starts_with=prefix)]


def azurite_binary() -> str | None:
    candidate = _NODE_DIR / "node_modules" / ".bin" / "azurite-blob"
    return str(candidate) if candidate.exists() else shutil.which("azurite-blob")


def start_azurite(location: str, timeout: float = 30.0) -> subprocess.Popen:
    """Start ``azurite-blob`` on a free port (it picks one for port 0 and prints it); returns the process
    once it listens, its URL in ``process.url``."""
    binary = azurite_binary()
    if binary is None:
        if os.environ.get("CI"):
            raise RuntimeError("azurite-blob is missing: run make node-clients")
        pytest.skip("azurite-blob is not installed (make node-clients)")
    log = Path(location) / "azurite.out"
    with log.open("wb") as out:  # a file, not a pipe: nobody has to keep reading it
        process = subprocess.Popen(
            [binary, "--blobHost", "127.0.0.1", "--blobPort", "0", "--location", location, *_QUIET],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        match = _LISTENING.search(log.read_bytes())
        if match:
            process.url = match.group(1).decode()  # type: ignore[attr-defined]
            return process
        time.sleep(0.05)
    stop(process)
    raise RuntimeError(f"azurite-blob did not start: {log.read_bytes().decode(errors='replace')[-500:]}")


def stop(process: subprocess.Popen) -> None:
    """Stop exactly the server process this session started."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=3)  # it may wait on idle keep-alive connections: then it is killed
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def azurite_server():
    """Azurite for the session (one per xdist worker), with the container ``lance-ns``."""
    with tempfile.TemporaryDirectory(prefix="azurite-") as location:
        process = start_azurite(location)
        try:
            server = AzuriteServer(process.url, process.pid)  # type: ignore[attr-defined]
            server.container().create_container()
            yield server
        finally:
            flush_deferred_repoints()  # while the store still answers
            stop(process)
