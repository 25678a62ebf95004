"""The one refresh rule of vended credentials (namespace/vended.py) and what a holder does when it cannot renew:
the namespace refusing is permanent and says who, which table and which level; a namespace that does not answer
is transient (the held credential is kept while valid, then the renewal is retried and fails as
ServiceUnavailable). Renewals against a real vendor with expiry enforced: tests/s3/test_s3_expiry_enforced.py."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace, vended
from airflow_provider_lance.namespace.vended import VendedCredentials, expiry, refresh_point_millis
from airflow_provider_lance.rest import ServerSettings
from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.rest.principals import Principals, PrincipalStore, hash_secret
from tests.rest.servers import serve_namespace

TOKEN = "holder-token-9a2f"


def _options(expires_in_seconds: float, offset_millis: int = 500) -> dict[str, str]:
    return {
        "aws_access_key_id": "ASIAOLD",
        "aws_region": "us-east-1",
        "expires_at_millis": str(int((time.time() + expires_in_seconds) * 1000)),
        "refresh_offset_millis": str(offset_millis),
    }


def test_the_refresh_point() -> None:
    # the offset, and a clock-skew allowance of at most 5 s, never more than the offset
    assert refresh_point_millis(10_000, 500) == 9_000
    assert refresh_point_millis(3_600_000, 900_000) == 3_600_000 - 900_000 - 5_000
    assert refresh_point_millis(10_000, 0) == 10_000  # never past expiry
    assert expiry({"expires_at_millis": "7", "refresh_offset_millis": "2"}) == (7, 2)
    assert expiry({"expires_at_millis": "7"}) == (7, vended.DEFAULT_REFRESH_OFFSET_MILLIS)  # Lance's default
    assert expiry({"aws_region": "x"}) is None and expiry(None) is None


def _closed_port_client() -> RestNamespace:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return RestNamespace(uri=f"http://127.0.0.1:{port}")


def test_options_that_do_not_expire_are_never_renewed() -> None:
    holder = VendedCredentials(_closed_port_client(), ["t"], {"aws_region": "x"}, base={"allow_http": "true"})
    assert not holder.expires
    assert holder.options() == {"allow_http": "true", "aws_region": "x"}
    assert holder.renewals == 0


def test_a_namespace_that_does_not_answer_is_transient(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vended, "RETRY_WAIT_SECONDS", 0.01)
    client = _closed_port_client()
    # past the refresh point but still valid: kept, asked again on the next call
    valid = VendedCredentials(client, ["ns", "t"], _options(expires_in_seconds=0.6), principal="connection 'c'")
    assert valid.options()["aws_access_key_id"] == "ASIAOLD"
    time.sleep(0.7)
    # expired: retried, then ServiceUnavailable (a transient error: the task is retried)
    with pytest.raises(ln.ServiceUnavailableError, match=r"table 'ns\.t' for connection 'c'.*have expired"):
        valid.options()
    assert valid.renewals == 0


def test_a_refusal_is_permanent_and_names_the_principal_the_table_and_the_level(root: Path) -> None:
    engine = DirectoryNamespace(root=str(root))
    for table in ("t", "u"):
        engine.declare_table(ln.DeclareTableRequest(id=[table]))
    grants = [{"namespace": "t", "level": "write"}]
    document = {"principals": [{"name": "etl", "tokens": [hash_secret(TOKEN)], "grants": grants}]}
    settings = ServerSettings(principals=PrincipalStore.of(Principals.from_document(document, "test")))
    with serve_namespace(engine, settings) as url:
        client = RestNamespace(uri=url, **{"header.Authorization": f"Bearer {TOKEN}"})
        own = VendedCredentials(client, ["t"], _options(expires_in_seconds=-1))
        assert "expires_at_millis" not in own.options()  # renewed: a local root vends nothing, which never expires
        assert own.renewals == 1
        other = VendedCredentials(client, ["u"], _options(expires_in_seconds=-1), principal="connection 'c'")
        with pytest.raises(ln.PermissionDeniedError) as refused:
            other.options()
    message = str(refused.value)
    assert "table 'u' for connection 'c'" in message and "Principal 'etl'" in message and "'read'" in message
