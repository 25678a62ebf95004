"""Storage secrets never leak: not into logs (DEBUG, every logger), exception text (bad endpoint, missing
bucket, refused credentials), ``repr(ns)``, ``repr(ns.storage)``, ``repr(ns.config)`` or
``ns.namespace_id()``. S3 cases use a moto server started here (one with authentication enforced, so a
wrong key is refused with 403)."""

from __future__ import annotations

import json
import logging
import traceback
import uuid
from collections.abc import Iterator

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.s3.conftest import REGION, MotoServer, start_moto, stop

SECRET = "sEcReT-" + uuid.uuid4().hex  # unique: any hit is a leak of this value
ACCESS_KEY = "AKIA" + uuid.uuid4().hex[:16].upper()
TOKEN = "ToKeN-" + uuid.uuid4().hex


def _properties(endpoint: str, root: str, **extra: str) -> dict[str, str]:
    return {
        "root": root,
        "storage.aws_access_key_id": ACCESS_KEY,
        "storage.aws_secret_access_key": SECRET,
        "storage.aws_session_token": TOKEN,
        "storage.aws_endpoint": endpoint,
        "storage.aws_region": REGION,
        "storage.allow_http": "true",
        **extra,
    }


def _assert_clean(text: str, where: str, access_key_too: bool = True) -> None:
    assert SECRET not in text, f"secret key leaked in {where}"
    assert TOKEN not in text, f"session token leaked in {where}"
    if access_key_too:
        assert ACCESS_KEY not in text, f"access key id leaked in {where}"


def _full_text(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)) + repr(error) + str(error)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[MotoServer, MotoServer]]:
    open_process, open_endpoint = start_moto()
    auth_process, auth_endpoint = start_moto(env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        server = MotoServer(open_endpoint, open_process.pid)
        server.client().create_bucket(Bucket="secrets")
        yield server, MotoServer(auth_endpoint, auth_process.pid)
    finally:
        stop(open_process)
        stop(auth_process)


def test_reprs_and_namespace_id() -> None:
    ns = DirectoryNamespace(**_properties("http://127.0.0.1:9", "s3://b/p"))
    for name, text in {
        "repr(ns)": repr(ns),
        "str(ns)": str(ns),
        "repr(ns.storage)": repr(ns.storage),
        "repr(ns.config)": repr(ns.config),
        "namespace_id()": ns.namespace_id(),
        "repr(ns.manifest)": repr(ns.manifest),
        "repr(ns.storage.fs)": repr(ns.storage.fs),
    }.items():
        _assert_clean(text, name)


@pytest.mark.s3
def test_debug_logs_of_a_working_session(servers, caplog: pytest.LogCaptureFixture) -> None:
    server, _ = servers
    caplog.set_level(logging.DEBUG)  # root: every library logger (botocore, s3fs, fsspec, ours)
    ns = DirectoryNamespace(**_properties(server.endpoint, f"s3://secrets/{uuid.uuid4().hex}"))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    ns.declare_table(ln.DeclareTableRequest(id=["db", "t"]))
    ns.list_tables(ln.ListTablesRequest(id=["db"]))
    ns.describe_table(ln.DescribeTableRequest(id=["db", "t"]))
    ns.drop_table(ln.DropTableRequest(id=["db", "t"]))
    messages = "\n".join(record.getMessage() for record in caplog.records)
    assert len(caplog.records) > 20 and "botocore" in {r.name.split(".")[0] for r in caplog.records}
    _assert_clean(messages, "DEBUG logs")  # botocore's signed request lines are redacted by the engine


@pytest.mark.s3
def test_error_texts(servers, caplog: pytest.LogCaptureFixture) -> None:
    server, auth_server = servers
    caplog.set_level(logging.DEBUG)
    cases = {
        "refused key (403)": DirectoryNamespace(**_properties(auth_server.endpoint, "s3://secrets/x")),
        "missing bucket": DirectoryNamespace(**_properties(server.endpoint, "s3://no-such-bucket/x")),
        "wrong endpoint path": DirectoryNamespace(**_properties(server.endpoint + "/wrong", "s3://secrets/x")),
    }
    seen = 0
    for name, ns in cases.items():
        for call in (
            lambda ns=ns: ns.list_namespaces(ln.ListNamespacesRequest(id=[])),
            lambda ns=ns: ns.declare_table(ln.DeclareTableRequest(id=["t"])),
            lambda ns=ns: ns.storage.put_if_not_exists("k", b"v"),
        ):
            try:
                call()
            except Exception as error:
                seen += 1
                _assert_clean(_full_text(error), f"{name}: {type(error).__name__}")
    assert seen >= 6, "the broken configurations should fail"
    # a 403 is an error, never an empty catalog (its text says "... does not exist in our records")
    with pytest.raises(ln.LanceNamespaceError):
        cases["refused key (403)"].list_namespaces(ln.ListNamespacesRequest(id=[]))
    _assert_clean("\n".join(r.getMessage() for r in caplog.records), "DEBUG logs of failures")


def test_bad_properties_do_not_echo_secrets() -> None:
    for properties in (
        {**_properties("http://127.0.0.1:9", "gs://b/p")},
        {**_properties("http://127.0.0.1:9", "s3://b/p"), "storage.conditional_put": "dynamo:" + SECRET},
        {**_properties("http://127.0.0.1:9", "s3://b/p"), "manifest_enabled": "maybe"},
    ):
        with pytest.raises(ln.InvalidInputError) as caught:
            DirectoryNamespace(**properties)
        _assert_clean(_full_text(caught.value), "InvalidInput")


@pytest.mark.parametrize(
    "endpoint",
    [
        f"http://{ACCESS_KEY}:{SECRET}@127.0.0.1:9",
        # a secret holding '/' moves the '@' out of what a URL parser takes for the authority (issue 30)
        f"http://{ACCESS_KEY}:{SECRET}/with/slash@127.0.0.1:9",
        f"http://{ACCESS_KEY}:12/{SECRET}@127.0.0.1:9",  # ... even when the authority then looks valid
        f"http://{ACCESS_KEY}:{SECRET}?x@127.0.0.1:9",
        f"{ACCESS_KEY}:{SECRET}@127.0.0.1:9",
        f"http://127.0.0.1:{SECRET}",  # an authority that does not parse
    ],
    # fixed ids: the values are random per process, and pytest-xdist's workers must collect the same tests
    ids=["userinfo", "slash-in-secret", "valid-looking-authority", "query-in-secret", "no-scheme", "bad-port"],
)
@pytest.mark.parametrize(
    "option",
    ["storage.aws_endpoint", "storage.endpoint", "storage.aws_endpoint_url", "credential_vendor.aws_sts_endpoint"],
)
def test_endpoints_with_credentials_are_refused_without_echo(
    endpoint: str, option: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    vendor = {"credential_vendor.enabled": "true", "credential_vendor.aws_role_arn": "arn:aws:iam::1:role/r"}
    properties = {**_properties("http://127.0.0.1:9", "s3://b/p"), **vendor, option: endpoint}
    with pytest.raises(ln.InvalidInputError) as caught:
        DirectoryNamespace(**properties)
    assert option in str(caught.value)
    _assert_clean(_full_text(caught.value), f"InvalidInput for {option}")
    _assert_clean("\n".join(r.getMessage() for r in caplog.records), "logs")


@pytest.mark.s3
def test_responses_carry_no_credentials_unless_vending_is_enabled(servers) -> None:
    """DescribeTable, DeclareTable and CreateTable answer with the endpoint and region, never the credentials
    (responses end up in XCom, logs and lineage), unless the namespace property ``credential_vending_enabled``
    asks for them and the request does not decline (``vend_credentials=False``)."""
    server, _ = servers
    root = f"s3://secrets/{uuid.uuid4().hex}"
    ns = DirectoryNamespace(**_properties(server.endpoint, root))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    responses = [
        ns.declare_table(ln.DeclareTableRequest(id=["db", "t"])),
        ns.describe_table(ln.DescribeTableRequest(id=["db", "t"])),
        ns.describe_table(ln.DescribeTableRequest(id=["db", "t"], vend_credentials=True)),
    ]
    for response in responses:
        _assert_clean(response.model_dump_json(), type(response).__name__)
        assert response.storage_options["aws_endpoint"] == server.endpoint
    vending = DirectoryNamespace(**_properties(server.endpoint, root, credential_vending_enabled="true"))
    vended = vending.describe_table(ln.DescribeTableRequest(id=["db", "t"]))
    assert vended.storage_options["aws_secret_access_key"] == SECRET
    declined = vending.describe_table(ln.DescribeTableRequest(id=["db", "t"], vend_credentials=False))
    _assert_clean(declined.model_dump_json(), "a request declining credentials")


@pytest.mark.s3
def test_vended_credentials_never_carry_the_namespaces_own(servers, caplog: pytest.LogCaptureFixture) -> None:
    """With ``credential_vendor.enabled`` (even beside ``credential_vending_enabled``) responses carry STS's
    temporary credentials, never the namespace's key, secret or session token; and neither those nor the vended
    secret and token reach any log at DEBUG (botocore logs STS's answers there)."""
    import boto3

    server, _ = servers
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
    role = boto3.client(
        "iam", endpoint_url=server.endpoint, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    ).create_role(RoleName=f"secrets-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=json.dumps(trust))
    caplog.set_level(logging.DEBUG)
    properties = _properties(
        server.endpoint,
        f"s3://secrets/{uuid.uuid4().hex}",
        credential_vending_enabled="true",
        **{"credential_vendor.enabled": "true", "credential_vendor.aws_role_arn": role["Role"]["Arn"]},
    )
    ns = DirectoryNamespace(**properties)
    responses = [
        ns.declare_table(ln.DeclareTableRequest(id=["t"])),
        ns.describe_table(ln.DescribeTableRequest(id=["t"], vend_credentials=True)),
        ns.create_table(ln.CreateTableRequest(id=["c"]), _ipc_of_one_row()),
    ]
    vended = set()
    for response in responses:
        _assert_clean(response.model_dump_json(), type(response).__name__)
        options = response.storage_options
        assert options["aws_session_token"] and options["expires_at_millis"]
        vended |= {options["aws_secret_access_key"], options["aws_session_token"]}
    logs = "\n".join(record.getMessage() for record in caplog.records)
    _assert_clean(logs, "DEBUG logs of a vending namespace")
    assert not any(secret in logs for secret in vended), "a vended secret or session token reached a log"


def _ipc_of_one_row() -> bytes:
    import pyarrow as pa

    sink = pa.BufferOutputStream()
    table = pa.table({"x": [1]})
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()
