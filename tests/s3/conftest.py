"""A real S3 endpoint for the engine: moto's standalone server, started once per session; and ``object_store``,
the same tests on each store the engine commits on (moto's S3, Azurite's Azure Blob Storage: tests/azurite.py).

The namespace is configured only through ``storage.*`` properties (no in-process patching of AWS clients):
``storage.aws_access_key_id``, ``storage.aws_secret_access_key``, ``storage.aws_endpoint``,
``storage.aws_region`` and ``storage.allow_http``. The same properties reach s3fs (through
``Storage``) and pylance (through ``storage_options``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest

from airflow_provider_lance.namespace.manifest import flush_deferred_repoints
from tests.azurite import CONTAINER, AzuriteServer, azurite_server  # noqa: F401

ACCESS_KEY = "AKIAMOTOTESTKEY4711"
SECRET_KEY = "moto-secret-Zq81sPv0wXyT3kLm"
REGION = "us-east-1"
BUCKET = "lance-ns"


@dataclass(frozen=True)
class MotoServer:
    endpoint: str
    pid: int

    @property
    def url(self) -> str:
        return self.endpoint

    def storage_options(
        self, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY, via: str | None = None
    ) -> dict[str, str]:
        """Lance option names (what ``storage.*`` carries without the prefix).

        :param via: the URL of a proxy in front of this server (tests/fault_proxy.py).
        """
        return {
            "aws_access_key_id": access_key,
            "aws_secret_access_key": secret_key,
            "aws_endpoint": via or self.endpoint,
            "aws_region": REGION,
            "allow_http": "true",
        }

    def properties(self, root: str, **extra: str) -> dict[str, str]:
        """Namespace properties; the credentials are vended to pylance writers through the namespace (a test
        server's keys; the default is not to, see tests/namespace/test_secrets.py)."""
        props = {
            "root": root,
            "credential_vending_enabled": "true",
            **{f"storage.{k}": v for k, v in self.storage_options().items()},
        }
        props.update(extra)
        return props

    def keys(self, prefix: str) -> list[str]:
        """Every key under ``prefix`` in the test bucket."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

    def client(self):  # a plain boto3 client pointed at the server (bucket set-up and inspection only)
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name=REGION,
        )


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def moto_binary() -> str:
    candidate = Path(sys.executable).with_name("moto_server")
    return str(candidate) if candidate.exists() else (shutil.which("moto_server") or "moto_server")


def start_moto(env: dict[str, str] | None = None, timeout: float = 20.0) -> tuple[subprocess.Popen, str]:
    """Start ``moto_server`` on a free port and wait until it answers; returns (process, endpoint)."""
    port = _free_port()
    process = subprocess.Popen(
        [moto_binary(), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=0.5):
                return process, endpoint
        except OSError:
            if time.monotonic() > deadline:
                stop(process)
                raise RuntimeError("moto_server did not become ready") from None
            time.sleep(0.05)


def stop(process: subprocess.Popen) -> None:
    """Stop exactly the server process this session started."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoServer]:
    process, endpoint = start_moto()
    try:
        server = MotoServer(endpoint, process.pid)
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        flush_deferred_repoints()  # while the store still answers
        stop(process)


@pytest.fixture
def s3_root(moto_server: MotoServer) -> str:
    """A fresh, unique prefix in the session's bucket."""
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def s3_props(moto_server: MotoServer, s3_root: str) -> dict[str, str]:
    """Namespace properties for ``s3_root``, configured only through ``storage.*``."""
    return moto_server.properties(s3_root)


@dataclass(frozen=True)
class ObjectStore:
    """One store the engine commits on, with a fresh prefix: ``server`` is a MotoServer or an AzuriteServer
    (``storage_options``, ``properties``, ``keys``, ``endpoint``)."""

    name: str  # "s3" or "azure"
    server: MotoServer | AzuriteServer
    root: str  # s3://lance-ns/t-<uuid> or az://lance-ns/t-<uuid>

    @property
    def prefix(self) -> str:
        """The root's key prefix in the bucket (container)."""
        return self.root.split("/", 3)[3]

    def properties(self, root: str | None = None, via: str | None = None, **extra: str) -> dict[str, str]:
        """Namespace properties for ``root`` (default: the fresh prefix), through the proxy at ``via`` if given."""
        properties = self.server.properties(root or self.root, **extra)
        if via is not None:
            properties.update({f"storage.{k}": v for k, v in self.server.storage_options(via=via).items()})
        return properties


assert CONTAINER == BUCKET  # one name for both stores' test bucket
STORES = [pytest.param("s3", marks=pytest.mark.s3), pytest.param("azure", marks=pytest.mark.azure)]


@pytest.fixture(params=STORES)
def object_store(request: pytest.FixtureRequest) -> ObjectStore:
    """Each store in turn (moto S3, Azurite), with a fresh prefix of the session's bucket."""
    name = request.param
    server = request.getfixturevalue("moto_server" if name == "s3" else "azurite_server")
    scheme = "s3" if name == "s3" else "az"
    return ObjectStore(name, server, f"{scheme}://{BUCKET}/t-{uuid.uuid4().hex[:12]}")


@pytest.fixture
def object_store_azure(azurite_server: AzuriteServer) -> ObjectStore:  # noqa: F811
    """Azurite only, with a fresh prefix (tests of what only Azure needs shown)."""
    return ObjectStore("azure", azurite_server, f"az://{CONTAINER}/t-{uuid.uuid4().hex[:12]}")
