"""Vended credentials that expire as on AWS: every holder renews before expiry.

moto accepts expired session tokens; :class:`tests.expiring_s3.ExpiringS3` in front of it does not (``400
ExpiredToken``, checked at arrival as S3 does) and makes every vended credential live three seconds. Every S3
request is recorded with the key that signed it; each test works for several lifetimes and then asserts that
every request was signed by a credential valid at that moment, and that credentials were renewed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta

import botocore.exceptions
import lance
import lance.fragment
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.vended import VendedCredentials
from airflow_provider_lance.rest import ServerSettings
from airflow_provider_lance.rest.client import RestNamespace
from airflow_provider_lance.rest.principals import Principals, PrincipalStore, hash_secret
from airflow_provider_lance.staging import (
    StagingNamespace,
    prepare_target,
    stage_fragments,
    staged_dataset,
)
from tests.expiring_s3 import ExpiringS3
from tests.rest.servers import serve_namespace
from tests.s3.conftest import ACCESS_KEY, BUCKET, SECRET_KEY, MotoServer
from tests.s3.test_s3_credential_vending import make_role, vending_properties
from tests.s3.test_s3_vending_enforced import _client
from tests.s3.test_s3_vending_rest import RecordingNamespace

pytestmark = pytest.mark.s3

# Three seconds, renewed with 2.4 s left (refresh_fraction 0.4 and the clock-skew allowance, see ``engine``): on
# this loaded 2-core machine a new s3fs client (the page's listing of staged versions) takes up to 1.8 s to send
# its first request; the Spark DAG test runs with 2 s (tests/example_dags/test_lance_spark_rest_vending.py).
LIFETIME = timedelta(seconds=3)
TOKEN = "expiry-token-31c7"
SCHEMA = pa.schema({"x": pa.int64()})


@pytest.fixture(scope="module")
def expiring(moto_server: MotoServer) -> Iterator[ExpiringS3]:
    with ExpiringS3(moto_server.endpoint, LIFETIME) as proxy:
        yield proxy


@pytest.fixture
def engine(moto_server: MotoServer, expiring: ExpiringS3, s3_root: str) -> RecordingNamespace:
    """The catalog server's engine: its S3 and STS are the expiring proxy, its vended credentials live
    ``LIFETIME`` and are renewed with 80 % of it left (``refresh_fraction`` 0.4 and as much clock-skew allowance)."""
    role = make_role(moto_server, f"expiry-{uuid.uuid4().hex[:8]}")
    through_proxy = MotoServer(expiring.endpoint, moto_server.pid)
    properties = vending_properties(through_proxy, s3_root, role, table_version_management="true")
    return RecordingNamespace(**properties, **{"credential_vendor.refresh_fraction": "0.4"})


@pytest.fixture
def client(engine: RecordingNamespace) -> Iterator[RestNamespace]:
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}), vend_credentials=True)) as url:
        yield RestNamespace(uri=url, **{"header.Authorization": f"Bearer {TOKEN}"})


def _valid_throughout(expiring: ExpiringS3, since: float, renewals: int) -> None:
    """Every request since ``since`` was signed by a credential valid when it arrived, and at least
    ``renewals`` + 1 vended keys signed them."""
    assert expiring.expired(since) == []
    keys = expiring.vended_keys(since)
    assert len(keys) >= renewals + 1, keys


def test_the_store_refuses_a_session_credential_past_its_expiry(expiring: ExpiringS3) -> None:
    """The proxy itself: a vended credential works until its expiry, then S3 answers ExpiredToken; the
    long-lived key never expires."""
    sts = _client("sts", expiring.endpoint, ACCESS_KEY, SECRET_KEY)
    role = "arn:aws:iam::123456789012:role/any"
    credentials = sts.assume_role(RoleArn=role, RoleSessionName="probe", DurationSeconds=900)["Credentials"]
    left = credentials["Expiration"].timestamp() - time.time()
    assert 0 < left <= LIFETIME.total_seconds()
    key, secret, token = (credentials[k] for k in ("AccessKeyId", "SecretAccessKey", "SessionToken"))
    s3 = _client("s3", expiring.endpoint, key, secret, token)
    since = time.time()
    s3.list_objects_v2(Bucket=BUCKET, MaxKeys=1)
    time.sleep(left + 0.05)
    with pytest.raises(botocore.exceptions.ClientError) as refused:
        s3.list_objects_v2(Bucket=BUCKET, MaxKeys=1)
    assert refused.value.response["Error"]["Code"] == "ExpiredToken"
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    [expired] = expiring.expired(since)
    assert expired.key == credentials["AccessKeyId"] and expired.at >= expired.expires_at  # type: ignore[operator]
    assert expiring.vended_keys(since) == [credentials["AccessKeyId"]]
    own = _client("s3", expiring.endpoint, ACCESS_KEY, SECRET_KEY)
    own.list_objects_v2(Bucket=BUCKET, MaxKeys=1)
    assert expiring.signed_by("AKIA", since)[-1].valid


def test_a_pylance_reader_and_writer_held_across_refreshes(expiring: ExpiringS3, client: RestNamespace) -> None:
    """A dataset opened through the namespace and scanned for three lifetimes, and a writer whose input takes
    two: pylance renews from the server (its refresh), never signing with an expired key."""
    lance.write_dataset(pa.table({"x": list(range(10))}), namespace_client=client, table_id=["t"], mode="create")
    since = time.time()
    dataset = lance.dataset(namespace_client=client, table_id=["t"])
    deadline = time.monotonic() + 3 * LIFETIME.total_seconds()
    while time.monotonic() < deadline:
        assert dataset.to_table().num_rows == 10
        time.sleep(0.2)
    _valid_throughout(expiring, since, renewals=2)

    def slow_batches() -> Iterator[pa.RecordBatch]:
        for start in range(10, 50, 5):
            time.sleep(LIFETIME.total_seconds() / 4)
            yield pa.record_batch({"x": list(range(start, start + 5))})

    since = time.time()
    reader = pa.RecordBatchReader.from_batches(SCHEMA, slow_batches())
    written = lance.write_dataset(reader, namespace_client=client, table_id=["t"], mode="append")
    assert written.count_rows() == 50
    _valid_throughout(expiring, since, renewals=1)


def test_staging_on_the_driver_commits_after_the_first_credential_expired(
    expiring: ExpiringS3, engine: RecordingNamespace, client: RestNamespace
) -> None:
    """The Spark driver's path without Spark: the target is prepared (DeclareTable/DescribeTable vend a
    credential), the fragments are written, and the staging commit (listing ``_versions/``, the staged manifest,
    the detached version of the audit and its read) comes after that first credential expired, for a table
    with a version (``a``, audited: an append) and a new one (``b``: an overwrite). The commit renews first; the
    batch commit and a read follow."""
    lance.write_dataset(pa.table({"x": [0]}), namespace_client=client, table_id=["a"], mode="create")
    since = time.time()
    staging = StagingNamespace(client)
    targets = {name: prepare_target(client, [name]) for name in ("a", "b")}
    first = {name: target.credentials.options()["aws_access_key_id"] for name, target in targets.items()}
    written = {
        name: lance.fragment.write_fragments(
            pa.table({"x": [1, 2, 3]}),
            target.location,
            schema=SCHEMA,
            storage_options=target.storage_options,
            namespace_client=client,
            table_id=[name],
        )
        for name, target in targets.items()
    }
    time.sleep(1.5 * LIFETIME.total_seconds())  # the executors' work outlives the driver's first credential
    entries = [
        stage_fragments(client, target, written[name], mode="append", schema=SCHEMA, staging=staging, audit=name == "a")
        for name, target in targets.items()
    ]
    assert all(targets[name].credentials.options()["aws_access_key_id"] != first[name] for name in targets)
    time.sleep(LIFETIME.total_seconds())
    assert staged_dataset(client, entries[0]).count_rows() == 4
    client.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=entries))
    assert lance.dataset(namespace_client=client, table_id=["a"]).count_rows() == 4
    assert lance.dataset(namespace_client=client, table_id=["b"]).count_rows() == 3
    _valid_throughout(expiring, since, renewals=2)
    # the data files and the staged manifests were written with vended keys, never the catalog's own
    writes = [r for r in expiring.signed if r.at >= since and r.method == "PUT" and ".lance/" in r.path]
    assert writes and all(r.expires_at is not None for r in writes if "/data/" in r.path or ".manifest-" in r.path)


def test_the_page_reads_across_refreshes(expiring: ExpiringS3, client: RestNamespace) -> None:
    """The catalog page over the REST client (as in the Airflow UI): one reader (what one page request holds)
    asked for a table's summary, history with its staged versions (an s3fs listing) and growth for two
    lifetimes, then the pages themselves; every request signed by a valid credential."""
    from starlette.testclient import TestClient

    from airflow_provider_lance.page import create_page_app
    from airflow_provider_lance.page.catalog import CatalogReader

    client.create_namespace(ln.CreateNamespaceRequest(id=["demo"]))
    lance.write_dataset(pa.table({"x": [1, 2]}), namespace_client=client, table_id=["demo", "t"], mode="create")
    since = time.time()
    reader = CatalogReader(client)
    deadline = time.monotonic() + 2 * LIFETIME.total_seconds()
    while time.monotonic() < deadline:
        assert reader.table(["demo", "t"]).rows == 2
        rows, _ = reader.history(["demo", "t"], None)
        assert [row.version for row in rows] == [1]
        assert [rows for _, rows, _ in reader.growth(["demo", "t"])] == [2]
        time.sleep(0.3)
    _valid_throughout(expiring, since, renewals=2)
    since = time.time()
    pages = TestClient(create_page_app(client))
    for path in ("/table?id=demo&id=t", "/table/versions?id=demo&id=t"):
        assert pages.get(path).status_code == 200
    assert expiring.expired(since) == []


def test_a_refused_renewal_is_permanent_and_names_the_principal_the_table_and_the_level(
    moto_server: MotoServer, expiring: ExpiringS3, s3_root: str
) -> None:
    """STS refusing the role (its trust policy does not name the catalog) when a holder renews: PermissionDenied
    at once (no retry can help), naming who asked, the principal, its level on the table and the role."""
    role = make_role(moto_server, f"refused-{uuid.uuid4().hex[:8]}")
    expiring.refused_roles.add(role)
    through_proxy = MotoServer(expiring.endpoint, moto_server.pid)
    engine = DirectoryNamespace(**vending_properties(through_proxy, s3_root, role))
    engine.declare_table(ln.DeclareTableRequest(id=["t"], vend_credentials=False))
    grants = [{"namespace": "t", "level": "write"}]
    document = {"principals": [{"name": "etl", "tokens": [hash_secret(TOKEN)], "grants": grants}]}
    principals = PrincipalStore.of(Principals.from_document(document, "test"))
    settings = ServerSettings(principals=principals, vend_credentials=True)
    expired = {"aws_access_key_id": "ASIAOLD", "expires_at_millis": "1", "refresh_offset_millis": "1"}
    with serve_namespace(engine, settings) as url:
        client = RestNamespace(uri=url, **{"header.Authorization": f"Bearer {TOKEN}"})
        holder = VendedCredentials(client, ["t"], expired, principal="connection 'lance_default'")
        started = time.monotonic()
        with pytest.raises(ln.PermissionDeniedError) as refused:
            holder.options()
    assert time.monotonic() - started < 5  # not retried
    message = str(refused.value)
    assert "table 't' for connection 'lance_default'" in message
    assert "Principal 'etl' (level 'write' on 't')" in message
    assert "at level 'write' was refused (AccessDenied)" in message and role in message
    assert SECRET_KEY not in message
