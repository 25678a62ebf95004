"""Clients carrying fresh tokens to a server whose principals are token principals: a token file re-read when
it changes (the Kubernetes projected token, replaced the way the kubelet does), OAuth2 client credentials
fetched again before they expire; through pylance's ``RestNamespace`` (``lance_namespace.connect``), this
provider's client (its added operations too) and lancedb."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings, create_app
from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.rest.principals import PrincipalStore
from airflow_provider_lance.rest.token_sources import BearerTokenProvider, provider_properties
from tests.resource_warnings import resource_warnings
from tests.rest.servers import serve_app
from tests.rest.token_issuer import TokenIssuer, issuer_entry, serve_issuer, service_account

SECRET = "client-secret-of-the-spark-job"


def _principal(name: str, match: dict[str, str], namespace: str) -> dict[str, object]:
    return {"name": name, "match": match, "grants": [{"namespace": namespace, "level": "write"}]}


@pytest.fixture
def issuer() -> Iterator[TokenIssuer]:
    with serve_issuer() as running:
        running.clients["spark-job"] = SECRET
        yield running


@pytest.fixture
def url(root: Path, issuer: TokenIssuer, tmp_path: Path) -> Iterator[str]:
    """Our server: service account ``etl:one`` writes ``a``, ``etl:two`` writes ``b``, the OAuth2 client
    ``spark-job`` writes ``c``."""
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    for namespace in ("a", "b", "c"):
        engine.create_namespace(ln.CreateNamespaceRequest(id=[namespace]))
    document = {
        "issuers": [issuer_entry(issuer)],
        "principals": [
            _principal("one", {"subject": service_account("etl", "one")}, "a"),
            _principal("two", {"subject": service_account("etl", "two")}, "b"),
            _principal("spark", {"client_id": "spark-job"}, "c"),
        ],
    }
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(document))
    with serve_app(create_app(engine, ServerSettings(principals=PrincipalStore(str(path))))) as running:
        yield running


def _project(path: Path, token: str) -> None:
    """Write a token the way the kubelet does: a new file moved into place."""
    staged = path.with_name(f".{path.name}.new")
    staged.write_text(token)
    os.replace(staged, path)


def _declare(client: ln.LanceNamespace, *table: str) -> None:
    client.declare_table(ln.DeclareTableRequest(id=list(table)))


def test_a_token_file_is_read_again_when_it_changes(url: str, issuer: TokenIssuer, tmp_path: Path) -> None:
    """pylance's client, ours (its added operations too) and lancedb send the file's current token on every
    call: after the file is replaced they act as the new token's principal."""
    token_file = tmp_path / "token"
    _project(token_file, issuer.token(service_account("etl", "one"), kid="ec-1"))
    properties = {"uri": url, **provider_properties(token_file=str(token_file))}
    pylance_client = ln.connect("rest", properties)
    ours = RestNamespace(**properties)
    import lancedb

    lancedb_connection = lancedb.connect_namespace("airflow_provider_lance.rest.client.RestNamespace", properties)
    _declare(pylance_client, "a", "p1")
    _declare(ours, "a", "o1")
    commit = ln.BatchCommitTablesRequest(
        operations=[ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=["a", "o2"]))]
    )
    ours.batch_commit_tables(commit)  # an operation pylance leaves to the base class: ours sends the token too
    lancedb_connection.create_table("l1", pa.table({"x": [1]}), namespace_path=["a"])
    with pytest.raises(ln.PermissionDeniedError, match="'one'"):
        _declare(ours, "b", "o3")

    _project(token_file, issuer.token(service_account("etl", "two")))  # rotated: another principal's token
    _declare(pylance_client, "b", "p2")
    _declare(ours, "b", "o3")
    lancedb_connection.create_table("l2", pa.table({"x": [1]}), namespace_path=["b"])
    with pytest.raises(ln.PermissionDeniedError, match="'two'"):
        _declare(pylance_client, "a", "p3")
    current = token_file.read_text()
    assert current not in repr(ours) and current not in repr(BearerTokenProvider(token_file=str(token_file)))


def test_client_credentials_are_fetched_again_before_they_expire(url: str, issuer: TokenIssuer) -> None:
    """One token fetch serves calls until a fifth of its lifetime is left; then the next call fetches a new
    one. A wrong client secret is refused with UnauthenticatedError naming the client, never the secret."""
    issuer.client_token_seconds = 2
    settings = {"token_url": f"{issuer.url}/oauth2/token", "client_id": "spark-job", "client_secret": SECRET}
    client = RestNamespace(uri=url, **provider_properties(**settings))
    for i in range(3):
        _declare(client, "c", f"t{i}")
    assert issuer.issued == 1
    time.sleep(1.7)  # past 2 s - 0.4 s: refreshed before the server would refuse it
    _declare(client, "c", "t3")
    assert issuer.issued == 2
    provider = BearerTokenProvider(**{**settings, "client_secret": "wrong"})

    def refused() -> str:
        with pytest.raises(ln.UnauthenticatedError, match="refused client 'spark-job'") as raised:
            provider.token()
        return str(raised.value)  # left behind: a cycle of this frame and the exception's traceback

    with resource_warnings() as leaked:
        message = refused()
    assert "wrong" not in message and "wrong" not in repr(provider)
    assert leaked == []  # the refusal's connection was closed, not left to the garbage collector
    by_post = BearerTokenProvider(**settings, client_auth="post")
    with pytest.raises(ln.UnauthenticatedError):  # this endpoint takes HTTP Basic only
        by_post.token()


def test_a_provider_takes_one_token_source() -> None:
    with pytest.raises(ValueError, match="takes token_file, or token_url"):
        BearerTokenProvider()
    with pytest.raises(ValueError, match="token_url needs client_secret"):
        BearerTokenProvider(token_url="http://x/token", client_id="c")
    with pytest.raises(ValueError, match="takes token_file, or token_url"):
        BearerTokenProvider(token_file="/t", token_url="http://x/token")


def test_a_missing_or_empty_token_file_is_unauthenticated(tmp_path: Path) -> None:
    provider = BearerTokenProvider(token_file=str(tmp_path / "absent"))
    with pytest.raises(ln.UnauthenticatedError, match="cannot be read"):
        provider.provide_context({})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ln.UnauthenticatedError, match="is empty"):
        BearerTokenProvider(token_file=str(tmp_path / "empty")).token()
