"""Credential vending on moto's STS and S3: the session policy of every AssumeRole is captured and evaluated
(tests/iam_policy.py) against the real object keys of the tables; the cache, the clock, the levels, the
properties and the secrets. The end-to-end denial, which needs IAM enforced, is in test_s3_vending_enforced.py."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import boto3
import botocore.config
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.credentials import CredentialVendor, iam_escape
from airflow_provider_lance.namespace.vended import refresh_point_millis
from tests.iam_policy import allows
from tests.races import BARRIER_SECONDS
from tests.s3.conftest import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, MotoServer

pytestmark = pytest.mark.s3

TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
}
# Root tables whose names are IAM patterns, and tables of namespaces 'a' and 'ab' (object ids a$t, a$t2, ab$t:
# Lance's '$' delimiter is in their directory names)
ROOT_TABLES = [["t"], ["t2"], ["t*"], ["t?"], ["tx"], ["t*x"]]
NAMESPACE_TABLES = [["a", "t"], ["a", "t2"], ["ab", "t"]]


def make_role(server: MotoServer, name: str, policy: dict[str, Any] | None = None) -> str:
    """An IAM role anyone may assume (and its inline policy, when given); returns its ARN."""
    iam = boto3.client(
        "iam",
        endpoint_url=server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name=REGION,
    )
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    if policy is not None:
        iam.put_role_policy(RoleName=name, PolicyName="scope", PolicyDocument=json.dumps(policy))
    return arn


def vending_properties(server: MotoServer, root: str, role_arn: str, **extra: str) -> dict[str, str]:
    properties = server.properties(
        root, **{"credential_vendor.enabled": "true", "credential_vendor.aws_role_arn": role_arn}
    )
    properties.pop("credential_vending_enabled")
    return {**properties, **extra}


def capture_policies(vendor: CredentialVendor) -> list[dict[str, Any]]:
    """Every session policy the vendor sends from now on (a botocore hook on its STS client)."""
    sent: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        sent.append(json.loads(params["Policy"]))

    vendor.sts.meta.events.register("provide-client-params.sts.AssumeRole", record)
    return sent


@pytest.fixture(scope="module")
def role_arn(moto_server: MotoServer) -> str:
    return make_role(moto_server, f"vend-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def vending(moto_server: MotoServer, s3_root: str, role_arn: str) -> DirectoryNamespace:
    return DirectoryNamespace(**vending_properties(moto_server, s3_root, role_arn))


def _describe(ns: DirectoryNamespace, table: list[str], level: str | None = None, **fields: Any) -> dict[str, str]:
    context = {"credential_vendor.permission": level} if level else None
    request = ln.DescribeTableRequest(id=table, load_detailed_metadata=False, context=context, **fields)
    return ns.describe_table(request).storage_options or {}


def test_the_evaluator_itself() -> None:
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": "s3:Get*", "Resource": "arn:aws:s3:::b/p${*}/*"},
            {"Effect": "Deny", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/p${*}/secret"},
        ]
    }
    assert allows(policy, "s3:GetObject", "arn:aws:s3:::b/p*/x")
    assert not allows(policy, "s3:GetObject", "arn:aws:s3:::b/pq/x")  # the escaped * is literal
    assert not allows(policy, "s3:GetObject", "arn:aws:s3:::b/p*/secret")  # the deny wins
    assert not allows(policy, "s3:PutObject", "arn:aws:s3:::b/p*/x")
    assert allows({"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "a?c"}]}, "x", "abc")
    assert iam_escape("a$t*?x") == "a${$}t${*}${?}x"


def test_session_policy_allows_the_table_and_nothing_beside_it(
    moto_server: MotoServer, s3_root: str, role_arn: str, vending: DirectoryNamespace
) -> None:
    """Each table and level gets a policy that, evaluated against the real keys of every table in the root,
    allows reading (and writing, deleting as the level says) its own objects only: not the sibling
    ``a$t2`` of ``a$t``, not ``ab``'s tables from ``a``'s, not ``tx`` from ``t*`` or ``t?``."""
    vending.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    vending.create_namespace(ln.CreateNamespaceRequest(id=["ab"]))
    locations = {}
    for table in ROOT_TABLES + NAMESPACE_TABLES:
        lance.write_dataset(pa.table({"x": [1]}), namespace_client=vending, table_id=table, mode="create")
        locations[tuple(table)] = vending.describe_table(ln.DescribeTableRequest(id=table)).location
    prefix = s3_root.removeprefix(f"s3://{BUCKET}/")
    keys = [obj["Key"] for obj in moto_server.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix + "/")["Contents"]]
    owner = {}  # object key -> the table whose directory holds it (None: __manifest)
    for key in keys:
        owner[key] = next(
            (t for t, loc in locations.items() if f"s3://{BUCKET}/{key}".startswith(_literal(loc) + "/")), None
        )
    assert all(owner[key] is not None or key.startswith(prefix + "/__manifest") for key in keys)

    fresh = DirectoryNamespace(**vending_properties(moto_server, s3_root, role_arn))  # nothing cached yet
    policies = capture_policies(fresh.catalog.vendor)
    for table, location in locations.items():
        table_prefix = _literal(location).removeprefix(f"s3://{BUCKET}/")
        for level in ("read", "write", "admin"):
            options = _describe(fresh, list(table), level, vend_credentials=True)
            assert options["aws_access_key_id"].startswith("ASIA")
            policy = policies[-1]
            for key in keys:
                arn = f"arn:aws:s3:::{BUCKET}/{key}"
                own = owner[key] == table
                assert allows(policy, "s3:GetObject", arn) is own, (table, level, key)
                assert allows(policy, "s3:PutObject", arn) is (own and level != "read"), (table, level, key)
                assert allows(policy, "s3:DeleteObject", arn) is (own and level == "admin"), (table, level, key)
            bucket = f"arn:aws:s3:::{BUCKET}"
            assert allows(policy, "s3:ListBucket", bucket, {"s3:prefix": f"{table_prefix}/_versions/"})
            for other, other_location in locations.items():
                if other != table:
                    sibling = _literal(other_location).removeprefix(f"s3://{BUCKET}/")
                    assert not allows(policy, "s3:ListBucket", bucket, {"s3:prefix": f"{sibling}/"}), (table, other)
            assert not allows(policy, "s3:ListBucket", bucket, {"s3:prefix": f"{prefix}/"})
            assert not allows(policy, "s3:ListBucket", bucket)  # a listing without a prefix


def _literal(uri: str) -> str:
    from airflow_provider_lance.namespace.identifiers import literal_path

    return literal_path(uri)


def test_cache_renews_at_the_refresh_fraction_and_never_hands_out_an_expired_credential(
    vending: DirectoryNamespace,
) -> None:
    vendor = vending.catalog.vendor
    now = [1_000_000.0]  # seconds; moved by hand, and STS's answers expire an hour after it
    vendor.clock = lambda: now[0]
    lifetime = [3600.0]

    def expire_by_our_clock(parsed: dict[str, Any], **_: Any) -> None:
        parsed["Credentials"]["Expiration"] = datetime.fromtimestamp(now[0] + lifetime[0], UTC)

    vendor.sts.meta.events.register("after-call.sts.AssumeRole", expire_by_our_clock)
    vending.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=False))
    vending.declare_table(ln.DeclareTableRequest(id=["u"], vend_credentials=False))
    calls = vendor.assume_role_calls
    first = _describe(vending, ["t"], vend_credentials=True)
    expires, offset = int(first["expires_at_millis"]), int(first["refresh_offset_millis"])
    assert (expires, offset) == (int((now[0] + 3600) * 1000), 900_000)  # a quarter of the lifetime
    assert _describe(vending, ["t"], vend_credentials=True) == first  # from the cache
    assert vendor.assume_role_calls == calls + 1
    _describe(vending, ["t"], "write", vend_credentials=True)  # another level: its own credential
    _describe(vending, ["u"], vend_credentials=True)  # another table too
    assert vendor.assume_role_calls == calls + 3
    # the renewal point every holder uses (vended.py): the offset and a clock-skew allowance (5 s here) before expiry
    renewal = refresh_point_millis(expires, offset)
    assert renewal == expires - offset - 5_000
    now[0] = renewal / 1000 - 0.001  # just before the renewal point: still cached
    assert _describe(vending, ["t"], vend_credentials=True) == first
    now[0] = renewal / 1000  # a client refreshing at the renewal point gets a new one
    renewed = _describe(vending, ["t"], vend_credentials=True)
    assert renewed["aws_access_key_id"] != first["aws_access_key_id"]
    assert vendor.assume_role_calls == calls + 4
    now[0] = expires / 1000 + 3600  # past every expiry: nothing stale comes back
    vendor._prune_at = 1  # and expired credentials are forgotten when the next one is stored
    for table in (["t"], ["u"]):
        options = _describe(vending, table, vend_credentials=True)
        assert options["aws_access_key_id"] not in (first["aws_access_key_id"], renewed["aws_access_key_id"])
    assert vendor.assume_role_calls == calls + 6
    assert sorted(key[2] for key in vendor._cache) == ["read", "read"]  # the expired write-level one is gone

    lifetime[0] = -1  # STS answering credentials already expired (a clock ahead of STS's): refused
    now[0] += 7200
    with pytest.raises(ln.ServiceUnavailableError, match="already expired"):
        _describe(vending, ["t"], vend_credentials=True)


def test_concurrent_callers_share_one_assume_role(vending: DirectoryNamespace) -> None:
    vending.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=False))
    calls = vending.catalog.vendor.assume_role_calls
    barrier = threading.Barrier(16, timeout=BARRIER_SECONDS)

    def describe(_: int) -> str:
        barrier.wait()
        return _describe(vending, ["t"], "write", vend_credentials=True)["aws_access_key_id"]

    with ThreadPoolExecutor(16) as pool:
        keys = set(pool.map(describe, range(16)))
    assert len(keys) == 1
    assert vending.catalog.vendor.assume_role_calls == calls + 1


def test_which_requests_get_credentials(moto_server: MotoServer, s3_root: str, role_arn: str) -> None:
    """DescribeTable, DeclareTable and CreateTable vend unless the request declines; ``vend_by_default=false``
    vends only when asked; the namespace's own keys never, even with the old ``credential_vending_enabled``."""
    ns = DirectoryNamespace(**vending_properties(moto_server, s3_root, role_arn, credential_vending_enabled="true"))
    declared = ns.declare_table(ln.DeclareTableRequest(id=["d"]))
    created = ns.create_table(ln.CreateTableRequest(id=["c"]), _ipc(pa.table({"x": [1]})))
    described = ns.describe_table(ln.DescribeTableRequest(id=["c"]))
    for response in (declared, created, described):
        assert response.storage_options["aws_session_token"]
        assert response.storage_options["aws_access_key_id"] != ACCESS_KEY
        assert SECRET_KEY not in json.dumps(response.storage_options)
        assert response.storage_options["aws_endpoint"] == moto_server.endpoint  # shared, not secret
    declined = _describe(ns, ["c"], vend_credentials=False)
    assert "aws_session_token" not in declined and "aws_secret_access_key" not in declined
    on_request = DirectoryNamespace(
        **vending_properties(moto_server, s3_root, role_arn, **{"credential_vendor.vend_by_default": "false"})
    )
    assert "aws_session_token" not in _describe(on_request, ["c"])
    assert "aws_session_token" in _describe(on_request, ["c"], vend_credentials=True)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def test_properties_are_the_references_and_are_checked(moto_server: MotoServer, s3_root: str, role_arn: str) -> None:
    ns = DirectoryNamespace(
        **vending_properties(
            moto_server,
            s3_root,
            role_arn,
            **{
                "credential_vendor.permission": "write",
                "credential_vendor.aws_external_id": "ext-1",
                "credential_vendor.aws_role_session_name": "etl",
                "credential_vendor.aws_duration_millis": "1000",  # clamped up to AWS's 900 s
                "credential_vendor.aws_region": REGION,
            },
        )
    )
    sent: list[dict[str, Any]] = []
    ns.catalog.vendor.sts.meta.events.register(
        "provide-client-params.sts.AssumeRole", lambda params, **_: sent.append(dict(params))
    )
    ns.declare_table(ln.DeclareTableRequest(id=["t"]))
    _describe(ns, ["t"], vend_credentials=True)
    assert {k: sent[-1][k] for k in ("RoleArn", "RoleSessionName", "DurationSeconds", "ExternalId")} == {
        "RoleArn": role_arn,
        "RoleSessionName": "etl",
        "DurationSeconds": 900,
        "ExternalId": "ext-1",
    }
    assert "s3:PutObject" in json.dumps(json.loads(sent[-1]["Policy"]))  # the configured level
    assert "s3:DeleteObject" in json.dumps(_policy_of(ns, ["t"], "admin"))  # the request's level wins
    long = DirectoryNamespace(
        **vending_properties(moto_server, s3_root, role_arn, **{"credential_vendor.aws_duration_millis": "99999999999"})
    )
    assert long.catalog.vendor.config.duration_millis == 43_200_000
    bad: list[dict[str, str]] = [
        {"credential_vendor.aws_role_arn": ""},
        {"credential_vendor.permission": "owner"},
        {"credential_vendor.refresh_fraction": "1.5"},
        {"credential_vendor.azure_tenant_id": "x"},
        {"credential_vendor.enabled": "yes"},
    ]
    for extra in bad:
        with pytest.raises(ln.InvalidInputError):
            DirectoryNamespace(**vending_properties(moto_server, s3_root, role_arn, **extra))
    with pytest.raises(ln.InvalidInputError, match=r"credential_vendor\.permission"):
        _describe(ns, ["t"], "superuser", vend_credentials=True)


def _policy_of(ns: DirectoryNamespace, table: list[str], level: str) -> dict[str, Any]:
    policies = capture_policies(ns.catalog.vendor)
    _describe(ns, table, level, vend_credentials=True)
    return policies[-1]


def test_a_root_that_is_not_s3_answers_no_credentials(tmp_path, role_arn: str) -> None:
    ns = DirectoryNamespace(
        root=str(tmp_path), **{"credential_vendor.enabled": "true", "credential_vendor.aws_role_arn": role_arn}
    )
    assert ns.catalog.vendor is None
    ns.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=True))
    assert ns.describe_table(ln.DescribeTableRequest(id=["t"], vend_credentials=True)).storage_options is None


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[Callable[[], str]]:
    caplog.set_level(logging.DEBUG)  # every logger: botocore logs STS answers at DEBUG
    yield lambda: "\n".join(record.getMessage() for record in caplog.records)


def test_no_vended_secret_in_logs_reprs_or_errors(
    moto_server: MotoServer, vending: DirectoryNamespace, debug_logs: Callable[[], str]
) -> None:
    vending.declare_table(ln.DeclareTableRequest(id=["t"]))
    options = _describe(vending, ["t"], "write", vend_credentials=True)
    secrets = (options["aws_secret_access_key"], options["aws_session_token"], SECRET_KEY)
    text = debug_logs() + repr(vending) + repr(vending.catalog.vendor.__dict__) + repr(vending.catalog.vendor._cache)
    for secret in secrets:
        assert secret not in text
    # STS refusing the role: PermissionDenied or ServiceUnavailable naming the role, no key, no token
    refused = DirectoryNamespace(
        **{
            **vending_properties(moto_server, f"s3://{BUCKET}/x", "arn:aws:iam::123456789012:role/x"),
            "credential_vendor.aws_sts_endpoint": "http://127.0.0.1:9",
        }
    )
    assert refused.catalog.vendor.sts.meta.endpoint_url == "http://127.0.0.1:9"
    refused.catalog.vendor.sts = boto3.client(  # the same endpoint without retries (they take ~20 s)
        "sts",
        endpoint_url="http://127.0.0.1:9",
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        config=botocore.config.Config(retries={"total_max_attempts": 1}),
    )
    with pytest.raises(ln.LanceNamespaceError) as caught:
        refused.catalog.vendor.vend(BUCKET, "x/t", "read")
    assert "role/x" in str(caught.value)
    for secret in (SECRET_KEY, ACCESS_KEY):
        assert secret not in str(caught.value) and secret not in repr(caught.value.__cause__)
