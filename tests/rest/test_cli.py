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

pytestmark = pytest.mark.slow  # starts processes of its own

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
    assert "without --principals-file" in result.stderr


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


def _principals_file(path: Path, tokens: dict[str, str]) -> None:
    """A principals file: each principal (name -> token) reads the root."""
    from airflow_provider_lance.rest.principals import hash_secret

    principals = [
        {"name": name, "tokens": [hash_secret(token)], "grants": [{"namespace": "", "level": "read"}]}
        for name, token in tokens.items()
    ]
    path.write_text(json.dumps({"principals": principals}))


def _logged(server: ServerProcess, text: str, times: int) -> None:
    """Wait until the server's log holds ``text`` ``times`` times (one line per worker): the event a test orders
    by, not a guessed sleep."""
    import time

    deadline = time.monotonic() + 60
    while sum(text in line for line in server.stderr_lines) < times:
        assert time.monotonic() < deadline, f"the server never logged {text!r} {times} time(s)"
        time.sleep(0.05)


def _children(pid: int) -> set[str]:
    return set(subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split())


@pytest.mark.parametrize("workers", [1, 2])
def test_sighup_rereads_the_principals_in_every_worker(root: Path, tmp_path: Path, workers: int) -> None:
    """SIGHUP: every worker re-reads the principals file in place (same processes), a request in flight or
    arriving meanwhile is answered, a removed token is refused and an added one accepted at once; a file that
    no longer parses leaves the previous principals in force."""
    import os
    import signal

    path = tmp_path / "principals.json"
    steady, old, new = "steady-" + "1" * 20, "old-" + "2" * 20, "new-" + "3" * 20
    _principals_file(path, {"steady": steady, "old": old})
    args = ["--root", str(root), "--workers", str(workers), "--principals-file", str(path), "--no-page"]
    with ServerProcess(args) as server:
        stop, answers = threading.Event(), []

        def steady_client() -> None:
            while not stop.is_set():
                with httpx.Client(base_url=server.url, timeout=60) as http:  # new connections: every worker has some
                    answers.append(
                        http.get("/v1/namespace/$/list", headers={"Authorization": f"Bearer {steady}"}).status_code
                    )

        thread = threading.Thread(target=steady_client)
        thread.start()

        def status(token: str) -> set[int]:
            codes = set()
            for _ in range(12):
                with httpx.Client(base_url=server.url, timeout=60) as http:
                    codes.add(
                        http.get("/v1/namespace/$/list", headers={"Authorization": f"Bearer {token}"}).status_code
                    )
            return codes

        try:
            assert status(old) == {200} and status(new) == {401}
            children = _children(server.process.pid)
            _principals_file(path, {"steady": steady, "new": new})
            os.kill(server.process.pid, signal.SIGHUP)
            _logged(server, "Principals reloaded", workers)
            assert status(new) == {200} and status(old) == {401}
            path.write_text("{not json")
            os.kill(server.process.pid, signal.SIGHUP)
            _logged(server, "Principals not reloaded", workers)
            assert status(new) == {200}  # the broken file changed nothing
        finally:
            stop.set()
            thread.join()
        assert _children(server.process.pid) == children, "SIGHUP must not replace the workers"
        assert server.terminate() == 0
    assert answers and set(answers) == {200}, "a request was refused or dropped during the reload"
    log = "".join(server.stderr_lines)
    assert "Principals reloaded" in log and "Principals not reloaded" in log
    assert not any(secret in log for secret in (steady, old, new))


def test_token_file_means_admin_on_the_root_with_a_warning(root: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("# the old flat list\nold-admin-token-123\n")
    with ServerProcess(["--root", str(root), "--token-file", str(tokens), "--no-page"]) as server:
        client = ln.connect("rest", {"uri": server.url, "header.Authorization": "Bearer old-admin-token-123"})
        client.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
        client.drop_namespace(ln.DropNamespaceRequest(id=["a"]))
        server.terminate()
    log = "".join(server.stderr_lines)
    assert "--token-file: every token in it is admin on the root" in log
    assert "old-admin-token-123" not in log


def test_principals_cli(tmp_path: Path) -> None:
    """``generate`` prints a secret and its hash, ``hash`` reads a secret from stdin (never argv), ``check``
    lists principals and grants; the server refuses a file holding a secret in clear without echoing it."""
    from airflow_provider_lance.rest.principals import Principals, SecretKind

    command = [sys.executable, "-m", "airflow_provider_lance.rest.principals"]
    secret, hashed = subprocess.run([*command, "generate"], capture_output=True, text=True, check=True).stdout.split()
    again = subprocess.run([*command, "hash"], input=secret + "\n", capture_output=True, text=True, check=True)
    assert again.stdout.strip() != hashed  # a new salt each time
    for stored in (hashed, again.stdout.strip()):
        document = {
            "principals": [{"name": "p", "api_keys": [stored], "grants": [{"namespace": "a.b", "level": "write"}]}]
        }
        principals = Principals.from_document(document, "test")
        assert principals.authenticate(SecretKind.API_KEY, secret.encode()).name == "p"
        assert principals.authenticate(SecretKind.TOKEN, secret.encode()) is None  # a key is not a token
    path = tmp_path / "p.yaml"
    grant = "{namespace: prod.sales, level: write}"
    path.write_text(f"principals:\n  - name: etl\n    tokens: ['{hashed}']\n    grants:\n      - {grant}\n")
    checked = subprocess.run([*command, "check", str(path)], capture_output=True, text=True, check=True)
    assert checked.stdout.strip() == "etl: write on prod.sales"
    path.write_text(json.dumps({"principals": [{"name": "p", "tokens": ["clear-secret-oops"], "grants": []}]}))
    refused = subprocess.run(
        [sys.executable, "-m", "airflow_provider_lance.rest", "--root", str(tmp_path), "--principals-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "not a secret hash" in refused.stderr
    assert "clear-secret-oops" not in refused.stderr


def test_sighup_without_principals_changes_nothing(root: Path) -> None:
    """Without principals SIGHUP neither ends nor replaces a worker (its default action would end it)."""
    import os
    import signal

    with ServerProcess(["--root", str(root), "--workers", "2", "--no-page"]) as server:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            assert http.get("/v1/namespace/$/list").status_code == 200
        workers = _children(server.process.pid)
        os.kill(server.process.pid, signal.SIGHUP)
        _logged(server, "SIGHUP: no principals file to re-read", 2)  # both workers got it and live on
        for _ in range(8):
            with httpx.Client(base_url=server.url, timeout=60) as http:
                assert http.get("/v1/namespace/$/list").status_code == 200
        assert _children(server.process.pid) == workers
        assert server.terminate() == 0
