"""Token principals (workload identity) on the REST server, against a Kubernetes-like issuer running here:
every bad token refused with the same 401 and nothing touched, the reason in the server log and the token
nowhere, key rotation taken up after one rate-limited refetch, the issuer's JWKS down (cached keys until
their TTL, then 503), the principals file's checks, and SIGHUP's reload of issuers and groups."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import lance_namespace as ln
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings, create_app
from airflow_provider_lance.rest.issuers import IssuerUnavailable, TrustedIssuer
from airflow_provider_lance.rest.principals import Principal, PrincipalStore, _cli, hash_secret, load_principals
from tests.resource_warnings import resource_warnings
from tests.rest.servers import serve_app
from tests.rest.token_issuer import TokenIssuer, issuer_entry, serve_issuer, service_account

WORKER = service_account("etl", "airflow-worker")
STATIC = "static-secret-of-the-old-kind"
_REFETCH = 0.5  # jwks_refetch_seconds of these tests


def _document(issuer: TokenIssuer, **settings: Any) -> dict[str, Any]:
    return {
        "issuers": [issuer_entry(issuer, jwks_refetch_seconds=_REFETCH, clock_skew_seconds=5, **settings)],
        "groups": [{"name": "etl", "grants": [{"namespace": "a", "level": "write"}]}],
        "principals": [
            {"name": "etl-workers", "match": {"subject": "system:serviceaccount:etl:*"}, "groups": ["etl"]},
            {"name": "old-job", "tokens": [hash_secret(STATIC)], "grants": [{"namespace": "a", "level": "read"}]},
        ],
    }


@pytest.fixture
def issuer() -> Iterator[TokenIssuer]:
    with serve_issuer() as running:
        yield running


@pytest.fixture
def engine(root: Path) -> DirectoryNamespace:
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    engine.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    return engine


@pytest.fixture
def principals_file(issuer: TokenIssuer, tmp_path: Path) -> Path:
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(_document(issuer)))
    return path


@pytest.fixture
def store(principals_file: Path) -> PrincipalStore:
    return PrincipalStore(str(principals_file))


@pytest.fixture
def http(engine: DirectoryNamespace, store: PrincipalStore) -> Iterator[httpx.Client]:
    with serve_app(create_app(engine, ServerSettings(principals=store))) as url, httpx.Client(base_url=url) as client:
        yield client


def _declare(http: httpx.Client, token: str, name: str = "t") -> httpx.Response:
    return http.post(f"/v1/table/a${name}/declare", json={}, headers={"Authorization": f"Bearer {token}"})


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def _refusals(issuer: TokenIssuer) -> dict[str, str]:
    """A bad token of each kind, signed by the issuer's own keys unless the point is that it is not."""
    now = int(time.time())
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    issuer.add_key("stranger", stranger, "RS256", publish=False)
    forged_kid = TokenIssuer(issuer.issuer)  # its own "rsa-1": a key nobody published, under a published kid
    return {
        "expired": issuer.token(WORKER, iat=now - 7200, nbf=now - 7200, exp=now - 3600),
        "not yet valid": issuer.token(WORKER, nbf=now + 3600),
        "issued in the future": issuer.token(WORKER, iat=now + 3600),
        "wrong audience": issuer.token(WORKER, audience="someone-else"),
        "wrong issuer": issuer.token(WORKER, iss="https://evil.example"),
        "alg none": issuer.unsigned(WORKER),
        "HS256 with the public key": issuer.hmac_with_public_key(WORKER),
        "unknown kid": issuer.token(WORKER, kid="stranger"),
        "signature of another key": forged_kid.token(WORKER, kid="rsa-1"),
        "no exp": issuer.token(WORKER, exp=None),
        "unknown subject": issuer.token(service_account("other-team", "airflow-worker")),
        "100 KB": issuer.token(WORKER, padding="x" * 100_000),
        "not a JWT at all": "eyJ.eyJ.x",
        "a static secret nobody holds": "not-" + STATIC,
    }


def test_every_bad_token_gets_the_same_401_and_touches_nothing(
    http: httpx.Client, issuer: TokenIssuer, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Expired, not yet valid, wrong audience or issuer, ``alg: none``, HS256 made with the public key, an
    unknown ``kid`` (after one refetch), a forged signature, a valid token of an unknown subject, a 100 KB
    token: each 401 with ``WWW-Authenticate: Bearer error="invalid_token"`` and the same body; storage is
    untouched; the reason is in the server log, the token nowhere. A good token and the old static secret
    keep working beside them."""
    caplog.set_level(logging.INFO)
    assert _declare(http, issuer.token(WORKER, kid="ec-1"), "first").status_code == 200  # fetches the JWKS once
    time.sleep(_REFETCH + 0.1)  # past the cool-down: an unknown kid may refetch once
    refusals = _refusals(issuer)
    before, fetches = _tree(root), issuer.jwks_fetches
    answers = {}
    for reason, token in refusals.items():
        response = _declare(http, token)
        answers[reason] = (response.status_code, response.headers.get("www-authenticate"), response.text)
    assert _tree(root) == before, "a refused token changed storage"
    assert issuer.jwks_fetches == fetches + 1, "one refetch for the unknown kid, none for the others"
    expected = (401, 'Bearer error="invalid_token"', answers["expired"][2])
    assert {reason: answer for reason, answer in answers.items() if answer != expected} == {}
    assert json.loads(expected[2])["code"] == 16
    logged = "\n".join(record.getMessage() for record in caplog.records)
    for reason in ("Signature has expired", "not yet valid", "InvalidAudienceError", "not a trusted issuer", "'none'"):
        assert reason in logged, (reason, logged)
    assert "matches no principal" in logged and "larger than" in logged and "Unable to find a signing key" in logged
    assert not any(token in logged for token in refusals.values())
    assert not any(token in answer[2] for token, answer in zip(refusals.values(), answers.values(), strict=True))
    assert _declare(http, issuer.token(WORKER)).status_code == 200
    assert _declare(http, STATIC, "by-secret").status_code == 403  # read grant: authenticated, not allowed
    assert http.get("/v1/namespace/a/list", headers={"Authorization": f"Bearer {STATIC}"}).status_code == 200


def test_an_unknown_kid_refetches_at_most_once_per_cool_down(http: httpx.Client, issuer: TokenIssuer) -> None:
    """A flood of made-up ``kid`` values costs the issuer one fetch per cool-down; a key rotated in at the
    issuer is accepted once the cool-down allows the refetch, and the rotated-out key's tokens are refused
    once the new set is fetched."""
    old = issuer.token(WORKER)
    assert _declare(http, old, "before").status_code == 200
    issuer.add_key("made-up", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256", publish=False)
    fetches = issuer.jwks_fetches
    for _ in range(5):
        assert _declare(http, issuer.token(WORKER, kid="made-up")).status_code == 401
    assert issuer.jwks_fetches <= fetches + 1
    new_kid = issuer.rotate()
    time.sleep(_REFETCH + 0.1)
    fetches = issuer.jwks_fetches
    assert _declare(http, issuer.token(WORKER, kid=new_kid), "after").status_code == 200
    assert issuer.jwks_fetches == fetches + 1, "the rotated key is taken up by one refetch"
    assert _declare(http, issuer.token(WORKER, kid="rsa-1"), "rotated-out").status_code == 401
    # a token verified before the rotation is not taken on trust from the cache: its key set is gone
    assert _declare(http, old, "old-again").status_code == 401


def test_jwks_down_cached_keys_until_their_ttl_then_503(
    engine: DirectoryNamespace, issuer: TokenIssuer, tmp_path: Path
) -> None:
    """With the issuer's JWKS endpoint down, tokens verify on the cached keys until the cache's TTL; then 503
    (ServiceUnavailable, ``Retry-After``), never 500, at once for the back-off after a failed fetch; when the
    issuer is back, tokens are accepted again."""
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(_document(issuer, jwks_cache_seconds=1)))
    settings = ServerSettings(principals=PrincipalStore(str(path)))
    with serve_app(create_app(engine, settings)) as url, httpx.Client(base_url=url) as http:
        assert _declare(http, issuer.token(WORKER), "one").status_code == 200
        issuer.down = True
        assert _declare(http, issuer.token(WORKER, kid="ec-1"), "two").status_code == 200  # cached keys
        time.sleep(1.1)
        down = _declare(http, issuer.token(WORKER), "down1")
        assert (down.status_code, down.json()["code"], down.headers["retry-after"]) == (503, 17, "30")
        fetches = issuer.jwks_fetches
        assert _declare(http, issuer.token(WORKER, kid="ec-1"), "down2").status_code == 503
        assert issuer.jwks_fetches == fetches, "within the back-off no request waits on the issuer again"
        issuer.down = False
        time.sleep(_REFETCH + 0.1)
        assert _declare(http, issuer.token(WORKER), "three").status_code == 200
    for name in ("down1", "down2"):  # what got 503 was never run
        with pytest.raises(ln.TableNotFoundError):
            engine.describe_table(ln.DescribeTableRequest(id=["a", name]))


def test_openid_discovery_and_the_audit_log_names_the_workload(
    engine: DirectoryNamespace, issuer: TokenIssuer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An issuer found through its OpenID configuration (``issuer`` must match); the audit line of a write
    names the principal and the token's subject, never the token."""
    issuer.issuer = issuer.url  # an OIDC provider's tokens carry its own URL
    entry = {"name": "oidc", "issuer": issuer.url, "audience": ["other", "lance-rest"]}
    entry["openid_configuration"] = f"{issuer.url}/.well-known/openid-configuration"
    path = tmp_path / "principals.json"
    document = {"issuers": [entry], "principals": [{"name": "etl", "match": {"subject": WORKER}}]}
    document["principals"][0]["grants"] = [{"namespace": "a", "level": "write"}]
    path.write_text(json.dumps(document))
    caplog.set_level(logging.INFO, logger="airflow_provider_lance.rest.audit")
    token = issuer.token(WORKER)
    settings = ServerSettings(principals=PrincipalStore(str(path)))
    with serve_app(create_app(engine, settings)) as url, httpx.Client(base_url=url) as http:
        assert _declare(http, token, "audited").status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name.endswith(".audit")]
    assert any(f'etl[{WORKER}] declare_table [["a", "audited"]] ok' in line for line in lines), lines
    assert token not in "\n".join(lines)


def test_an_openid_configuration_that_answers_an_error_leaves_no_connection_open(issuer: TokenIssuer) -> None:
    """An OpenID configuration URL that answers 404: the issuer is unavailable, and the refusal's connection is
    closed, not left to the garbage collector (an unclosed-socket ResourceWarning of a later test)."""
    trusted = TrustedIssuer(
        name="oidc", issuer=issuer.url, audiences=("lance-rest",), openid_configuration=f"{issuer.url}/nothing-here"
    )

    def refused() -> str:
        with pytest.raises(IssuerUnavailable, match="OpenID configuration does not answer") as raised:
            trusted.keys.fetch("rsa-1")
        return str(raised.value)  # left behind: a cycle of this frame and the exception's traceback

    with resource_warnings() as leaked:
        message = refused()
    assert "HTTP Error 404" in message
    assert leaked == []


def test_sighup_reload_reads_issuers_and_groups_again(
    http: httpx.Client, issuer: TokenIssuer, store: PrincipalStore, principals_file: Path
) -> None:
    """Moving a workload's grants (its group's) and its issuer's audience in the file takes effect on reload;
    a file that no longer parses leaves the previous one in force."""
    token = issuer.token(WORKER)
    assert _declare(http, token, "x1").status_code == 200
    document = _document(issuer)
    document["groups"][0]["grants"] = [{"namespace": "a", "level": "read"}]
    principals_file.write_text(json.dumps(document))
    assert store.reload()
    assert _declare(http, token, "x2").status_code == 403
    document["issuers"][0]["audience"] = "another-audience"
    principals_file.write_text(json.dumps(document))
    assert store.reload()
    assert _declare(http, token, "x3").status_code == 401
    document["issuers"][0]["algorithms"] = ["HS256"]
    principals_file.write_text(json.dumps(document))
    assert not store.reload()
    assert _declare(http, issuer.token(WORKER, audience="another-audience"), "x4").status_code == 403


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"algorithms": ["HS256"]}, "HS256 not allowed"),
        ({"algorithms": ["none", "RS256"]}, "none not allowed"),
        ({"audience": []}, "'audience'"),
        ({"jwks_uri": "file:///etc/passwd"}, "http(s) URL"),
        ({"openid_configuration": "https://x/.well-known/openid-configuration"}, "one of 'jwks_uri'"),
        ({"clock_skew_seconds": -1}, "'clock_skew_seconds'"),
        ({"surprise": 1}, "unknown key(s) surprise"),
    ],
)
def test_the_principals_file_refuses_unsafe_issuers(
    issuer: TokenIssuer, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    document = _document(issuer)
    document["issuers"][0].update(change)
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_principals(str(path))


@pytest.mark.parametrize(
    ("principal", "message"),
    [
        ({"name": "p", "match": {"subject": "x", "group": "y"}}, "exactly one of"),
        ({"name": "p", "match": {"issuer": "nobody", "subject": "x"}}, "must name a trusted issuer"),
        ({"name": "p", "match": {"subject": "x"}, "groups": ["missing"]}, "unknown group"),
        ({"name": "p"}, "no secret and no token match"),
    ],
)
def test_the_principals_file_refuses_unclear_matches(
    issuer: TokenIssuer, tmp_path: Path, principal: dict[str, Any], message: str
) -> None:
    document = _document(issuer)
    document["principals"].append(principal)
    path = tmp_path / "principals.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=message):
        load_principals(str(path))


def test_check_lists_token_principals_and_labels_escape_subjects(
    principals_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``principals check`` shows which tokens a principal takes and its grants, its groups' included; the
    audit label of a token principal cannot be split into two log lines by its subject."""
    _cli(["check", str(principals_file)])
    out = capsys.readouterr().out
    assert "etl-workers (tokens of k8s with subject system:serviceaccount:etl:*): write on a" in out
    assert "old-job: read on a" in out
    assert Principal("p", (), subject="sa\nforged ok").label == "p[sa\\nforged ok]"


@pytest.mark.slow  # lance-namespace-server with two worker processes
def test_sighup_reaches_token_principals_in_every_worker(root: Path, issuer: TokenIssuer, tmp_path: Path) -> None:
    """``lance-namespace-server`` with two workers: each fetches the issuer's keys itself, SIGHUP moves a service
    account's access in every worker, and no token reaches the server's output."""
    import os
    import signal

    from tests.rest.servers import ServerProcess

    path = tmp_path / "principals.json"

    def trust(subject: str) -> None:
        principal = {"name": "etl", "match": {"subject": subject}, "grants": [{"namespace": "", "level": "read"}]}
        path.write_text(json.dumps({"issuers": [issuer_entry(issuer)], "principals": [principal]}))

    first, second = (
        issuer.token(service_account("etl", "first")),
        issuer.token(service_account("etl", "second"), "ec-1"),
    )

    def status(token: str) -> set[int]:
        codes = set()
        for _ in range(12):  # new connections: every worker answers some
            with httpx.Client(base_url=server.url, timeout=60) as client:
                codes.add(client.get("/v1/namespace/$/list", headers={"Authorization": f"Bearer {token}"}).status_code)
        return codes

    trust(service_account("etl", "first"))
    args = ["--root", str(root), "--workers", "2", "--principals-file", str(path), "--no-page"]
    with ServerProcess(args) as server:
        assert status(first) == {200} and status(second) == {401}
        trust(service_account("etl", "second"))
        os.kill(server.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 20
        while status(second) != {200} and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status(second) == {200} and status(first) == {401}
        assert server.terminate() == 0
    output = "".join(server.stderr_lines)
    assert "Principals reloaded: 1 principal(s), 1 token issuer(s)" in output and "matches no principal" in output
    assert first not in output and second not in output
