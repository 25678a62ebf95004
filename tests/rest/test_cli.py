"""``lance-namespace-server``: start-up line, loopback rule, properties file, TLS, workers, graceful SIGTERM."""

from __future__ import annotations

import datetime
import json
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import lance_namespace as ln
import pytest

from tests.rest.servers import ServerProcess

SECRET = "sk-cli-NeverInTheLog-9"


def test_serves_the_catalog_and_prints_its_real_port(root: Path, tmp_path: Path) -> None:
    properties = tmp_path / "props.json"
    properties.write_text(json.dumps({"storage.aws_secret_access_key": SECRET, "table_version_management": "true"}))
    with ServerProcess(["--root", str(root), "--properties-file", str(properties), "--no-page"]) as server:
        assert server.url.startswith("http://127.0.0.1:") and not server.url.endswith(":0")
        client = ln.connect("rest", {"uri": server.url})
        client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
        declared = client.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
        assert declared.managed_versioning is True  # the property reached the engine
        with httpx.Client(base_url=server.url) as http:
            http.post("/v1/table/a$missing/describe", json={}, headers={"x-request-id": "cli-req-1"})
            metrics = http.get("/metrics").text
        assert 'lance_rest_requests_total{operation="declare_table",status="200"} 1.0' in metrics
        assert server.terminate() == 0
    log = "".join(server.stderr_lines)
    assert "cli-req-1 POST /v1/table/a$missing/describe 404" in log
    assert SECRET not in log and SECRET not in metrics


def test_refuses_to_listen_beyond_loopback_without_tokens(root: Path) -> None:
    command = [sys.executable, "-m", "airflow_provider_lance.rest", "--root", str(root), "--host", "0.0.0.0"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "without --token-file" in result.stderr


def test_tls(root: Path, tmp_path: Path) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(__import__("ipaddress").ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    args = ["--root", str(root), "--tls-certfile", str(cert_file), "--tls-keyfile", str(key_file), "--no-page"]
    with ServerProcess(args) as server:
        assert server.url.startswith("https://")
        with httpx.Client(base_url=server.url, verify=ssl.create_default_context(cafile=str(cert_file))) as http:
            assert http.get("/v1/namespace/$/list").json() == {"namespaces": []}


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_lets_in_flight_commits_finish(root: Path, workers: int) -> None:
    """Commits in flight when SIGTERM arrives are answered and durable; the server then exits 0."""
    args = ["--root", str(root), "--workers", str(workers), "--no-page"]
    with ServerProcess(args) as server:
        client = ln.connect("rest", {"uri": server.url})
        client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
        answered: list[str] = []

        def declare(i: int) -> None:
            try:
                ln.connect("rest", {"uri": server.url}).declare_table(ln.DeclareTableRequest(id=["a", f"t{i}"]))
                answered.append(f"t{i}")
            except Exception:  # a request that arrives after the listener closed is refused, not half-done
                pass

        threads = [threading.Thread(target=declare, args=(i,)) for i in range(16)]
        for thread in threads:
            thread.start()
        assert server.terminate() == 0
        for thread in threads:
            thread.join()
    from airflow_provider_lance.namespace import DirectoryNamespace

    listed = DirectoryNamespace(root=str(root)).list_tables(ln.ListTablesRequest(id=["a"])).tables
    assert set(answered) <= set(listed)


def test_serves_the_catalog_page_at_the_root(root: Path) -> None:
    """The page is served at / of the server, next to the protocol's routes, and escapes hostile names."""
    with ServerProcess(["--root", str(root)]) as server:
        client = ln.connect("rest", {"uri": server.url})
        client.create_namespace(ln.CreateNamespaceRequest(id=["<img src=x onerror=alert(1)>"]))
        with httpx.Client(base_url=server.url) as http:
            page = http.get("/")
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            assert "&lt;img src=x onerror=alert(1)&gt;" in page.text
            assert "<img src=x" not in page.text  # a name with spaces survives pylance's "+" in the path
            assert http.get("/v1/namespace/$/list").json()["namespaces"] == ["<img src=x onerror=alert(1)>"]
        server.terminate()
