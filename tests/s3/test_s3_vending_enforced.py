"""The vended scope, enforced: moto does not enforce the session policy passed to AssumeRole, but it does
enforce the policies attached to the role. Here each level has its own role whose attached policy is exactly
the session policy the engine sent, on a moto server with IAM authentication on (the namespace's own keys are
an IAM user's); the vended credentials then really read their table and are refused on the sibling table,
refused ``PutObject`` at ``read`` and ``DeleteObject`` at ``write``.

(moto matches resources with a plain ``*`` -> ``.*`` rule and no IAM escapes, so the tables here have plain
names; the escapes are checked by the policy evaluator in test_s3_credential_vending.py.)"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.exceptions
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.identifiers import literal_path
from tests.s3.conftest import ACCESS_KEY, REGION, SECRET_KEY, MotoServer, start_moto, stop
from tests.s3.test_s3_credential_vending import TRUST, capture_policies

pytestmark = pytest.mark.s3

BUCKET = "enforced"
EVERYTHING = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def _client(service: str, endpoint: str, key: str, secret: str, token: str | None = None) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        aws_session_token=token,
    )


@pytest.fixture(scope="module")
def enforced() -> Iterator[MotoServer]:
    """A moto server with IAM authentication on; its ``storage_options()`` are the keys of an IAM user
    ``catalog`` allowed everything (the catalog's own long-lived keys)."""
    process, endpoint = start_moto()
    try:
        _client("s3", endpoint, ACCESS_KEY, SECRET_KEY).create_bucket(Bucket=BUCKET)
        iam = _client("iam", endpoint, ACCESS_KEY, SECRET_KEY)
        iam.create_user(UserName="catalog")
        iam.put_user_policy(UserName="catalog", PolicyName="all", PolicyDocument=json.dumps(EVERYTHING))
        key = iam.create_access_key(UserName="catalog")["AccessKey"]
        request = urllib.request.Request(
            f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
        )
        with urllib.request.urlopen(request, timeout=10):
            pass
        server = MotoServer(endpoint, process.pid)
        # the module's keys are refused from now on: only IAM identities are
        with pytest.raises(botocore.exceptions.ClientError):
            _client("s3", endpoint, ACCESS_KEY, SECRET_KEY).list_objects_v2(Bucket=BUCKET)
        yield _Keyed(server, key["AccessKeyId"], key["SecretAccessKey"])
    finally:
        stop(process)


class _Keyed:
    def __init__(self, server: MotoServer, key: str, secret: str) -> None:
        self.server, self.key, self.secret = server, key, secret

    def properties(self, root: str, **extra: str) -> dict[str, str]:
        options = self.server.storage_options(self.key, self.secret)
        return {"root": root, **{f"storage.{k}": v for k, v in options.items()}, **extra}

    def client(self, service: str, key: str | None = None, secret: str | None = None, token: str | None = None) -> Any:
        return _client(service, self.server.endpoint, key or self.key, secret or self.secret, token)


def _allowed(call: Any) -> bool:
    try:
        call()
    except botocore.exceptions.ClientError as error:
        assert error.response["Error"]["Code"] in ("AccessDenied", "403"), error.response
        return False
    return True


@pytest.mark.parametrize("level", ["read", "write", "admin"])
def test_vended_credentials_reach_their_table_only(enforced: _Keyed, level: str) -> None:
    root = f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}"
    writer = DirectoryNamespace(**enforced.properties(root, credential_vending_enabled="true"))
    for table in (["t"], ["t2"]):
        lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=writer, table_id=table, mode="create")
    role = f"{level}-{uuid.uuid4().hex[:6]}"
    iam = enforced.client("iam")
    arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(TRUST))["Role"]["Arn"]
    ns = DirectoryNamespace(
        **enforced.properties(
            root,
            **{
                "credential_vendor.enabled": "true",
                "credential_vendor.aws_role_arn": arn,
                "credential_vendor.permission": level,
            },
        )
    )
    policies = capture_policies(ns.catalog.vendor)
    described = ns.describe_table(ln.DescribeTableRequest(id=["t"], vend_credentials=True))
    iam.put_role_policy(RoleName=role, PolicyName="scope", PolicyDocument=json.dumps(policies[-1]))
    options = described.storage_options
    s3 = enforced.client(
        "s3", options["aws_access_key_id"], options["aws_secret_access_key"], options["aws_session_token"]
    )

    def keys(table: str) -> list[str]:
        location = literal_path(writer.describe_table(ln.DescribeTableRequest(id=[table])).location)
        prefix = location.removeprefix(f"s3://{BUCKET}/") + "/"
        return [o["Key"] for o in enforced.client("s3").list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]]

    own, sibling = keys("t"), keys("t2")
    assert _allowed(lambda: s3.get_object(Bucket=BUCKET, Key=own[0]))
    assert not _allowed(lambda: s3.get_object(Bucket=BUCKET, Key=sibling[0]))
    assert not _allowed(lambda: s3.get_object(Bucket=BUCKET, Key=f"{root.split('/')[-1]}/__manifest/x"))
    new_key = own[0].rsplit("/", 1)[0] + "/new-object"
    assert _allowed(lambda: s3.put_object(Bucket=BUCKET, Key=new_key, Body=b"x")) is (level != "read")
    assert not _allowed(lambda: s3.put_object(Bucket=BUCKET, Key=sibling[0] + "-x", Body=b"x"))
    assert _allowed(lambda: s3.delete_object(Bucket=BUCKET, Key=own[-1])) is (level == "admin")
    assert not _allowed(lambda: s3.delete_object(Bucket=BUCKET, Key=sibling[-1]))
    assert options["aws_access_key_id"] != enforced.key and enforced.secret not in json.dumps(options)
