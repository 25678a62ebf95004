"""Principals and grants on the REST server: the 403 matrix (every route x every level x inside and outside
the grant; principals of hashed secrets, of Kubernetes service-account tokens, of group claims with group
grants, and of a Cognito user pool's tokens), no sibling leak, listings cut to what the caller may read,
batches refused whole, the caller's level handed to the namespace for credential vending, and the audit log
of writes."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.credentials import PERMISSION_CONTEXT_KEY
from airflow_provider_lance.page import create_page_app
from airflow_provider_lance.rest import ServerSettings, create_app
from airflow_provider_lance.rest.authorization import LEVELS, page_source
from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.rest.principals import Level, PrincipalStore, hash_secret
from airflow_provider_lance.rest.routes import ROUTES, Body
from airflow_provider_lance.staging import StagingNamespace, stage_data
from tests.rest.servers import serve_app, serve_namespace
from tests.rest.token_issuer import TokenIssuer, issuer_entry, serve_issuer, service_account
from tests.s3.conftest import start_moto, stop

#: principal name -> (its grants, its bearer token)
GRANTS: dict[str, list[dict[str, str]]] = {
    "root": [{"namespace": "", "level": "admin"}],
    "reader": [{"namespace": "a", "level": "read"}],
    "writer": [{"namespace": "a", "level": "write"}],
    "admin": [{"namespace": "a", "level": "admin"}],
    "nothing": [],
    "table-writer": [{"namespace": "a.t", "level": "write"}],
    "deep-reader": [{"namespace": "a.s", "level": "read"}],
}
TOKENS = {name: f"tok-{name}-{os.urandom(8).hex()}" for name in GRANTS}
API_KEY = f"key-{os.urandom(8).hex()}"
LEVEL = {"reader": Level.READ, "writer": Level.WRITE, "admin": Level.ADMIN, "nothing": None}

# Request bodies with the fields each model requires (an invalid body is refused with 400 before any grant
# is looked at); {T} is the table id, {N} the namespace id of the case.
_BODIES: dict[str, dict[str, Any]] = {
    "register_table": {"location": "elsewhere.lance"},
    "rename_table": {"new_table_name": "renamed"},
    "restore_table": {"version": 1},
    "create_table_version": {"version": 9, "manifest_path": "_versions/9.manifest"},
    "batch_delete_table_versions": {"ranges": [{"start_version": 1, "end_version": 1}]},
    "batch_create_table_versions": {"entries": [{"id": "{T}", "version": 9, "manifest_path": "x"}]},
    "batch_commit_tables": {"operations": [{"declare_table": {"id": "{T}"}}]},
    "update_table": {"updates": [["x", "1"]]},
    "delete_from_table": {"predicate": "x > 0"},
    "query_table": {"k": 1, "vector": {"single_vector": [0.0]}},
    "analyze_table_query_plan": {"k": 1, "vector": {"single_vector": [0.0]}},
    "explain_table_query_plan": {"query": {"k": 1, "vector": {"single_vector": [0.0]}}},
    "create_table_index": {"column": "x", "index_type": "BTREE"},
    "create_table_scalar_index": {"column": "x", "index_type": "BTREE"},
    "alter_table_add_columns": {"new_columns": [{"name": "y", "expression": "x"}]},
    "alter_table_alter_columns": {"alterations": [{"path": "x"}]},
    "alter_table_drop_columns": {"columns": ["x"]},
    "alter_table_backfill_columns": {"column": "x"},
    "update_field_metadata": {"updates": []},
    "get_table_tag_version": {"tag": "v"},
    "create_table_tag": {"tag": "v", "version": 1},
    "update_table_tag": {"tag": "v", "version": 1},
    "delete_table_tag": {"tag": "v"},
    "create_table_branch": {"name": "b"},
    "delete_table_branch": {"name": "b"},
    "alter_transaction": {"actions": [{"set_status_action": {"status": "SUCCEEDED"}}]},
    "create_materialized_view": {"kind": "query", "source_query": "x", "output_schema": "x"},
}
_NAMESPACE_ROUTES = {"list_namespaces", "describe_namespace", "drop_namespace", "namespace_exists", "list_tables"}


def _fill(value: Any, table: list[str]) -> Any:
    if value == "{T}":
        return table
    if isinstance(value, dict):
        return {k: _fill(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, table) for v in value]
    return value


def _call(
    http: httpx.Client, operation: str, namespace: str, principal: str, credentials: dict[str, str] = TOKENS
) -> httpx.Response:
    """One request of ``operation`` on an object of ``namespace`` (a namespace or the table ``t`` in it), as
    ``principal`` with its bearer token in ``credentials``."""
    route = next(r for r in ROUTES if r.operation == operation)
    table = [namespace, "t"]
    object_id = {
        "create_namespace": f"{namespace}$new",
        "describe_transaction": f"{namespace}$t$1",
        "alter_transaction": f"{namespace}$t$1",
    }.get(operation, namespace if operation in _NAMESPACE_ROUTES else f"{namespace}$t")
    path = route.path.replace("{id}", object_id).replace("{index_name}", "x_idx")
    headers = {"Authorization": f"Bearer {credentials[principal]}"}
    method = sorted(route.methods)[-1]  # POST where both are taken
    if operation == "list_all_tables":
        return http.get(path, params={"id": namespace}, headers=headers)
    if method == "GET":
        return http.get(path, headers=headers)
    if route.body is Body.ARROW:
        data = pa.table({"x": [1]})
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, data.schema) as writer:
            writer.write_table(data)
        params = {"on": "x"} if operation == "merge_insert_into_table" else {}
        return http.post(path, content=sink.getvalue().to_pybytes(), params=params, headers=headers)
    return http.post(path, json=_fill(_BODIES.get(operation, {}), table), headers=headers)


def _write_principals(path: Path) -> Path:
    principals = [
        {"name": name, "tokens": [hash_secret(TOKENS[name])], "grants": grants} for name, grants in GRANTS.items()
    ]
    principals[1]["api_keys"] = [hash_secret(API_KEY)]  # the reader also has an API key
    path.write_text(json.dumps({"principals": principals}))
    return path


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under the root with its size and modification time (what a refused request must not touch)."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def catalog(root: Path) -> DirectoryNamespace:
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    for namespace in (["a"], ["ab"], ["a", "s"], ["a", "s2"]):
        engine.create_namespace(ln.CreateNamespaceRequest(id=namespace))
    for table in (["a", "t"], ["a", "t2"], ["ab", "t"], ["a", "s", "u"], ["a", "s2", "u"]):
        engine.declare_table(ln.DeclareTableRequest(id=table))
    return engine


@pytest.fixture
def secured(catalog: DirectoryNamespace, tmp_path: Path) -> Iterator[str]:
    """Our server over ``catalog`` with the principals above and the catalog page at ``/``."""
    store = PrincipalStore(str(_write_principals(tmp_path / "principals.json")))
    page = create_page_app(page_source(catalog))
    with serve_app(create_app(catalog, ServerSettings(principals=store), page)) as url:
        yield url


def _k8s_principals(issuer: TokenIssuer, by_group: bool) -> tuple[dict[str, Any], dict[str, str]]:
    """The principals of GRANTS as token principals of a Kubernetes-like issuer (RSA and EC keys in turn),
    and a token of each: matched by service account (a pattern: any account of the namespace named after the
    principal) or, ``by_group``, by a group claim, with the grants on a group of the file."""
    principals, groups, tokens = [], [], {}
    for i, (name, grants) in enumerate(GRANTS.items()):
        kid = ("rsa-1", "ec-1")[i % 2]
        if by_group:
            groups.append({"name": f"grants-{name}", "grants": grants})
            principals.append({"name": name, "match": {"group": f"team-{name}"}, "groups": [f"grants-{name}"]})
            tokens[name] = issuer.token(service_account("etl", "runner"), kid, groups=["everyone", f"team-{name}"])
        else:
            principals.append({"name": name, "match": {"issuer": "k8s", "subject": f"system:serviceaccount:{name}:*"}})
            principals[-1]["grants"] = grants
            tokens[name] = issuer.token(service_account(name, "airflow-worker"), kid)
    return {"issuers": [issuer_entry(issuer)], "groups": groups, "principals": principals}, tokens


@contextmanager
def _cognito_principals(tmp: Path) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """The principals of GRANTS as users of a Cognito user pool (moto's server), each in the group of its
    name: matched by the ``cognito:groups`` claim of its access token (audience: the app client's id, in the
    ``client_id`` claim), JWKS found through the pool's OpenID configuration."""
    import boto3

    process, endpoint = start_moto()
    try:
        cognito = boto3.client(
            "cognito-idp",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="k",
            aws_secret_access_key="s",
        )
        pool = cognito.create_user_pool(PoolName="lance")["UserPool"]["Id"]
        client_id = cognito.create_user_pool_client(UserPoolId=pool, ClientName="airflow")["UserPoolClient"]["ClientId"]
        tokens = {}
        for name in GRANTS:
            cognito.create_group(GroupName=f"team-{name}", UserPoolId=pool)
            cognito.admin_create_user(UserPoolId=pool, Username=name, TemporaryPassword="Temp-Pass-1!")
            cognito.admin_set_user_password(UserPoolId=pool, Username=name, Password="Pass-word-1!", Permanent=True)
            cognito.admin_add_user_to_group(UserPoolId=pool, Username=name, GroupName=f"team-{name}")
            auth = cognito.admin_initiate_auth(
                UserPoolId=pool,
                ClientId=client_id,
                AuthFlow="ADMIN_USER_PASSWORD_AUTH",
                AuthParameters={"USERNAME": name, "PASSWORD": "Pass-word-1!"},
            )
            tokens[name] = auth["AuthenticationResult"]["AccessToken"]
        issuer = {
            "name": "cognito",
            "issuer": f"https://cognito-idp.us-east-1.amazonaws.com/{pool}",
            "openid_configuration": f"{endpoint}/{pool}/.well-known/openid-configuration",
            "audience": client_id,
            "audience_claim": "client_id",
            "groups_claim": "cognito:groups",
            "algorithms": ["RS256"],
        }
        groups = [{"name": f"grants-{name}", "grants": grants} for name, grants in GRANTS.items()]
        principals = [{"name": n, "match": {"group": f"team-{n}"}, "groups": [f"grants-{n}"]} for n in GRANTS]
        yield {"issuers": [issuer], "groups": groups, "principals": principals}, tokens
    finally:
        stop(process)


@pytest.fixture(params=["secrets", "k8s-tokens", "group-grants", pytest.param("cognito", marks=pytest.mark.s3)])
def identities(
    request: pytest.FixtureRequest, catalog: DirectoryNamespace, tmp_path: Path
) -> Iterator[tuple[str, dict[str, str]]]:
    """Our server over ``catalog`` with the principals of GRANTS, authenticated by hashed secrets, by a
    Kubernetes-like issuer's service-account tokens, by its group claims (grants on groups), or by a Cognito
    user pool's access tokens; yields the URL and each principal's bearer token."""
    path = tmp_path / "principals.json"
    with ExitStack() as stack:
        if request.param == "secrets":
            _write_principals(path)
            tokens = TOKENS
        else:
            if request.param == "cognito":
                document, tokens = stack.enter_context(_cognito_principals(tmp_path))
            else:
                issuer = stack.enter_context(serve_issuer())
                document, tokens = _k8s_principals(issuer, by_group=request.param == "group-grants")
            path.write_text(json.dumps(document))
        url = stack.enter_context(serve_app(create_app(catalog, ServerSettings(principals=PrincipalStore(str(path))))))
        yield url, tokens


def _as(url: str, principal: str) -> RestNamespace:
    return RestNamespace(uri=url, **{"header.Authorization": f"Bearer {TOKENS[principal]}"})


def test_every_route_at_every_level_inside_and_outside_the_grant(
    identities: tuple[str, dict[str, str]], root: Path
) -> None:
    """A level below the operation's, or an object outside the grant (``ab`` for a grant on ``a``), answers
    403 (code 15) before the namespace is asked: storage is untouched; the answer names the operation and the
    object and is the same whether the object exists (``ab``) or not (``zz``). The same for every kind of
    principal: hashed secrets, service-account tokens, group claims with group grants, Cognito tokens."""
    secured, tokens = identities
    operations = [route.operation for route in ROUTES]
    refused, admitted = [], []
    for operation in operations:
        for principal, level in LEVEL.items():
            for namespace in ("a", "ab", "zz"):
                inside = namespace == "a" and level is not None and level >= LEVELS[operation]
                (admitted if inside else refused).append((operation, principal, namespace))
    before = _tree(root)
    with httpx.Client(base_url=secured, timeout=60) as http:
        for operation, principal, namespace in refused:
            response = _call(http, operation, namespace, principal, tokens)
            assert (response.status_code, response.json()["code"]) == (403, 15), (operation, principal, namespace)
            message = response.json()["error"]
            assert f"'{principal}'" in message and f"'{namespace}" in message, message
            if namespace != "a":
                twin = _call(http, operation, "zz" if namespace == "ab" else "ab", principal, tokens).json()["error"]
                assert twin.replace("'zz", "'ab") == message.replace("'zz", "'ab"), "403 must not tell what exists"
        assert _tree(root) == before, "a refused request changed storage"
        for operation, principal, namespace in admitted:
            response = _call(http, operation, namespace, principal, tokens)
            assert response.status_code not in (401, 403), (operation, principal, response.text)
    assert len(refused) > 3 * len(operations) and len(admitted) > len(operations)


def test_no_sibling_leak(secured: str) -> None:
    """A grant on table ``a.t`` covers neither ``a.t2`` nor the namespace ``a``; a grant on ``a`` never
    covers ``ab`` (ids are compared part by part, never as strings)."""
    table_writer = _as(secured, "table-writer")
    table_writer.describe_table(ln.DescribeTableRequest(id=["a", "t"]))
    for call in (
        lambda: table_writer.describe_table(ln.DescribeTableRequest(id=["a", "t2"])),
        lambda: table_writer.declare_table(ln.DeclareTableRequest(id=["a", "t2x"])),
        lambda: table_writer.describe_namespace(ln.DescribeNamespaceRequest(id=["a"])),
        lambda: table_writer.drop_table(ln.DropTableRequest(id=["a", "t"])),  # write is not admin
    ):
        with pytest.raises(ln.PermissionDeniedError):
            call()
    reader = _as(secured, "reader")
    with pytest.raises(ln.PermissionDeniedError):
        reader.describe_table(ln.DescribeTableRequest(id=["ab", "t"]))
    with httpx.Client(base_url=secured) as http:  # the seed's POST /<OperationId> form goes through the same checks
        headers = {"Authorization": f"Bearer {TOKENS['reader']}"}
        assert http.post("/DropTable", json={"id": ["a", "t"]}, headers=headers).status_code == 403
        assert http.post("/GetTable", json={"id": ["ab", "t"]}, headers=headers).status_code == 403
        assert http.post("/GetTable", json={"id": ["a", "t"]}, headers=headers).status_code == 200
    with pytest.raises(ln.PermissionDeniedError):
        reader.list_tables(ln.ListTablesRequest(id=["ab"]))


def test_listings_show_only_what_the_caller_may_read(secured: str) -> None:
    """Above a grant only the path to it shows: a grant on ``a.s`` lists ``a`` at the root and ``s`` in
    ``a``, no table of ``a``, and nothing of ``ab`` or ``a.s2``; a table grant lists that table only."""
    deep = _as(secured, "deep-reader")
    assert deep.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert deep.list_namespaces(ln.ListNamespacesRequest(id=["a"])).namespaces == ["s"]
    assert deep.list_tables(ln.ListTablesRequest(id=["a"])).tables == []
    assert deep.list_tables(ln.ListTablesRequest(id=["a", "s"])).tables == ["u"]
    with httpx.Client(base_url=secured) as http:
        headers = {"Authorization": f"Bearer {TOKENS['deep-reader']}"}
        assert http.get("/v1/table", headers=headers).json()["tables"] == ["a$s$u"]
        page = http.get("/v1/namespace/$/list", params={"limit": 0}, headers=headers).json()
        assert page["namespaces"] == []
    assert deep.namespace_exists(ln.NamespaceExistsRequest(id=["a"])) is not None
    with pytest.raises(ln.PermissionDeniedError):
        deep.describe_namespace(ln.DescribeNamespaceRequest(id=["a"]))
    with pytest.raises(ln.PermissionDeniedError):
        deep.list_namespaces(ln.ListNamespacesRequest(id=["ab"]))
    table_writer = _as(secured, "table-writer")
    assert table_writer.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    declared_only = ln.ListTablesRequest(id=["a"], include_declared=False)  # a.t has no version yet
    assert table_writer.list_tables(declared_only).tables == []
    assert table_writer.list_namespaces(ln.ListNamespacesRequest(id=["a"])).namespaces == []
    reader = _as(secured, "reader")
    assert reader.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert reader.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t", "t2"]
    assert _as(secured, "root").list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a", "ab"]
    with pytest.raises(ln.PermissionDeniedError):
        _as(secured, "nothing").list_namespaces(ln.ListNamespacesRequest(id=[]))


def test_a_batch_is_refused_whole(secured: str, catalog: DirectoryNamespace) -> None:
    """BatchCreateTableVersions and BatchCommitTables need the grant on every table: one table outside it
    refuses the whole batch, and nothing is committed."""
    root_client = _as(secured, "root")
    staging = StagingNamespace(root_client)
    entries = [stage_data(root_client, t, pa.table({"x": [1]}), staging=staging) for t in (["a", "t"], ["ab", "t"])]
    writer = _as(secured, "writer")
    with pytest.raises(ln.PermissionDeniedError, match=r"'ab\.t'.*nothing was done"):
        writer.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
    versions = catalog.list_table_versions(ln.ListTableVersionsRequest(id=["a", "t"])).versions
    assert versions == []
    new = (["a", "n1"], ["ab", "n1"])
    declares = [ln.CommitTableOperation(declare_table=ln.DeclareTableRequest(id=t)) for t in new]
    with pytest.raises(ln.PermissionDeniedError):
        writer.batch_commit_tables(ln.BatchCommitTablesRequest(operations=declares))
    with pytest.raises(ln.TableNotFoundError):
        catalog.describe_table(ln.DescribeTableRequest(id=["a", "n1"]))
    # the same batch inside the grant commits
    writer.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries[:1]))
    assert len(catalog.list_table_versions(ln.ListTableVersionsRequest(id=["a", "t"])).versions) == 1


class _Recording(DirectoryNamespace):
    """Our engine, remembering the ``context`` of the requests that may vend credentials."""

    seen: list[tuple[str, dict[str, str] | None]]

    def describe_table(self, request: Any) -> Any:
        self.seen.append(("describe_table", request.context))
        return super().describe_table(request)

    def declare_tables(self, requests: list[Any]) -> list[Any]:
        self.seen.extend(("declare_table", request.context) for request in requests)
        return super().declare_tables(requests)

    def create_table(self, request: Any, data: bytes) -> Any:
        self.seen.append(("create_table", request.context))
        return super().create_table(request, data)


@pytest.mark.parametrize("authenticated", [True, False])
def test_the_callers_level_reaches_the_namespace_for_vending(root: Path, tmp_path: Path, authenticated: bool) -> None:
    """DescribeTable, DeclareTable and CreateTable reach the namespace with the caller's level in
    ``context['credential_vendor.permission']``, whatever the client sent; without authentication the key
    the client sent is removed (a client must not choose its own level)."""
    engine = _Recording(root=str(root), table_version_management="true")
    engine.seen = []
    engine.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    engine.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    store = PrincipalStore(str(_write_principals(tmp_path / "p.json"))) if authenticated else None
    claimed = {PERMISSION_CONTEXT_KEY: "admin", "other": "kept"}
    data = pa.table({"x": [1]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write_table(data)
    with serve_namespace(engine, ServerSettings(principals=store)) as url, httpx.Client(base_url=url) as http:
        for principal in ("reader", "writer", "admin"):
            headers = {"Authorization": f"Bearer {TOKENS[principal]}"}
            engine.seen.clear()
            http.post("/v1/table/a$t/describe", json={"context": claimed}, headers=headers).raise_for_status()
            if principal != "reader":
                declared = http.post(f"/v1/table/a$d_{principal}/declare", json={"context": claimed}, headers=headers)
                declared.raise_for_status()
                created = http.post(
                    f"/v1/table/a$c_{principal}/create",
                    params={"context": json.dumps(claimed)},
                    content=sink.getvalue().to_pybytes(),
                    headers=headers,
                )
                created.raise_for_status()
            expected = {"other": "kept"}
            if authenticated:
                expected[PERMISSION_CONTEXT_KEY] = str(LEVEL[principal])
            # every request the server passed on carries it (the engine's own inner calls carry no context)
            stamped = {operation for operation, context in engine.seen if context == expected}
            wanted = {"describe_table"} | (set() if principal == "reader" else {"declare_table", "create_table"})
            assert stamped == wanted and all(context in (expected, None) for _, context in engine.seen), engine.seen
            if not authenticated:
                break


def test_writes_are_audited_without_secrets(secured: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="airflow_provider_lance.rest.audit")
    writer = _as(secured, "writer")
    writer.declare_table(ln.DeclareTableRequest(id=["a", "audited"]))
    writer.describe_table(ln.DescribeTableRequest(id=["a", "audited"]))  # a read: not audited
    with pytest.raises(ln.PermissionDeniedError):
        writer.drop_table(ln.DropTableRequest(id=["a", "audited"]))
    lines = [record.getMessage() for record in caplog.records if record.name.endswith(".audit")]
    assert any('writer declare_table [["a", "audited"]] ok' in line for line in lines), lines
    assert any('writer drop_table [["a", "audited"]] denied' in line for line in lines), lines
    assert not any("describe_table" in line for line in lines)
    assert not any(token in "\n".join(lines) for token in TOKENS.values())


def test_api_keys_and_the_page(secured: str) -> None:
    """``x-api-key`` authenticates like a bearer token (pylance sends it as a header property); the page
    needs a read grant and shows only what the principal may read."""
    by_key = ln.connect("rest", {"uri": secured, "header.x-api-key": API_KEY})
    assert by_key.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t", "t2"]
    with pytest.raises(ln.PermissionDeniedError):
        by_key.declare_table(ln.DeclareTableRequest(id=["a", "x"]))
    with pytest.raises(ln.UnauthenticatedError):
        ln.connect("rest", {"uri": secured, "header.x-api-key": API_KEY + "x"}).list_namespaces(
            ln.ListNamespacesRequest(id=[])
        )
    with httpx.Client(base_url=secured) as http:
        denied = http.get("/", headers={"Authorization": f"Bearer {TOKENS['nothing']}"})
        assert (denied.status_code, denied.json()["code"]) == (403, 15)
        deep = {"Authorization": f"Bearer {TOKENS['deep-reader']}"}
        page = http.get("/", headers=deep)
        assert page.status_code == 200 and 'href="/namespace?id=a"' in page.text and "id=ab" not in page.text
        assert http.get("/namespace", params={"id": "ab"}, headers=deep).status_code == 403
        assert http.get("/table", params={"id": ["a", "t"]}, headers=deep).status_code == 403
        on_the_path = http.get("/namespace", params={"id": "a"}, headers=deep)  # navigable down to the grant
        assert on_the_path.status_code == 200 and "id=s" in on_the_path.text and "id=s2" not in on_the_path.text
        granted = http.get("/namespace", params={"id": ["a", "s"]}, headers=deep)
        assert granted.status_code == 200 and "u" in granted.text
