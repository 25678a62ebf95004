"""Rows objects (rows_store.py, S3 tier): after each of our commits on S3 the rows of the new ``__manifest``
version lie next to it, so that the first poke of a process on a machine that never read the catalog costs the
freshness LIST and one GET (each sensor's poke on such a machine: tests/s3/test_s3_sensor_pokes.py). Requests are
counted at a moto server of its own (benchmarks/s3_counter.py), whoever sends them (s3fs or pylance's
object_store)."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import boto3
import lance
import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.maintenance import maintain_manifest
from airflow_provider_lance.namespace.rows_store import ROWS_DIR
from benchmarks.s3_counter import BUCKET, CountingS3Server


@pytest.fixture(scope="module")
def server() -> Iterator[CountingS3Server]:
    with CountingS3Server() as running:
        yield running


@pytest.fixture
def props(server: CountingS3Server) -> dict[str, str]:
    """A new catalog, read by processes of a machine that never read it (no rows cache)."""
    return {**server.properties(f"t-{uuid.uuid4().hex[:12]}"), "manifest_cache_dir": ""}


def _client(server: CountingS3Server) -> Any:
    return boto3.client(
        "s3", endpoint_url=server.endpoint, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _keys(server: CountingS3Server, props: dict[str, str], under: str) -> list[str]:
    prefix = props["root"].removeprefix(f"s3://{BUCKET}/") + f"/{under}/"
    listed = _client(server).list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return sorted(item["Key"] for item in listed)


def _options(props: dict[str, str]) -> dict[str, str]:
    return {k.removeprefix("storage."): v for k, v in props.items() if k.startswith("storage.")}


def _namespaces(ns: Any) -> list[str]:
    return sorted(ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces)


def _opened(ns: DirectoryNamespace) -> bool:
    """Whether the instance opened ``__manifest`` with pylance (rather than answering from rows)."""
    current = ns.manifest._snapshots._current
    return current is not None and current._dataset is not None


def test_a_commit_writes_one_object_for_its_version_and_the_writers_machine_cache(
    server: CountingS3Server, props: dict[str, str], tmp_path: Any
) -> None:
    props = {**props, "manifest_cache_dir": str(tmp_path), "manifest_maintenance_every": "0"}
    ns = DirectoryNamespace(**props)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    store = ns.manifest._snapshots
    tiers = store._store.tiers  # the same commit without the S3 tier, for comparison
    store._store.tiers = [tier for tier in tiers if not tier.committer_only]
    with server.counting() as without:
        ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    store._store.tiers = tiers
    with server.counting() as requests:
        ns.create_namespace(ln.CreateNamespaceRequest(id=["c"]))
    version = ns.manifest.latest().version
    assert _keys(server, props, ROWS_DIR)[-1].rpartition("/")[2].startswith(f"{version:020d}-")
    assert requests - without == Counter({"LIST": 1, "PUT": 1})  # the commit's e-tag, then the object

    cold = DirectoryNamespace(**{**props, "manifest_rows_object_max_rows": "0"})
    with server.counting() as requests:  # the writer's machine cached the rows: a new process there lists only
        assert _namespaces(cold) == ["a", "b", "c"]
    assert dict(requests) == {"LIST": 1}


def test_a_hit_in_the_s3_tier_is_kept_in_the_machines_tier(
    server: CountingS3Server, props: dict[str, str], tmp_path: Any
) -> None:
    """The rows store asks its tiers nearest first and copies a hit into the nearer ones: the first new process
    of another machine GETs the object, the next one there lists only."""
    DirectoryNamespace(**props).create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    machine = {**props, "manifest_cache_dir": str(tmp_path)}
    with server.counting() as first:
        assert _namespaces(DirectoryNamespace(**machine)) == ["a"]
    with server.counting() as second:
        assert _namespaces(DirectoryNamespace(**machine)) == ["a"]
    assert (dict(first), dict(second)) == ({"LIST": 1, "GET": 1}, {"LIST": 1})


def test_objects_of_other_versions_or_catalogs_and_corrupt_ones_are_ignored(
    server: CountingS3Server, props: dict[str, str]
) -> None:
    ns = DirectoryNamespace(**props)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["b"]))
    client = _client(server)
    *older, newest = _keys(server, props, ROWS_DIR)

    # the newest version's name holding an older version's rows (an object misnamed, as by a digest collision)
    client.copy_object(Bucket=BUCKET, Key=newest, CopySource={"Bucket": BUCKET, "Key": older[-1]})
    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a", "b"]
    assert _opened(cold)

    client.put_object(Bucket=BUCKET, Key=newest, Body=b"not arrow")  # corrupt
    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a", "b"]
    assert _opened(cold)

    # the catalog deleted and re-created with as many versions, its old rows objects left behind
    for key in _keys(server, props, "__manifest"):
        if "/_rows/" not in key:
            client.delete_object(Bucket=BUCKET, Key=key)
    stale = set(_keys(server, props, ROWS_DIR))
    again = DirectoryNamespace(**props)
    for name in ("x", "y"):
        again.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    assert set(_keys(server, props, ROWS_DIR)) - stale  # the new incarnation's objects have names of their own
    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["x", "y"]
    assert not _opened(cold)


def test_the_reference_reads_and_writes_with_rows_objects_present(
    server: CountingS3Server, props: dict[str, str]
) -> None:
    reference_props = {k: v for k, v in props.items() if k != "manifest_cache_dir"}
    ours = DirectoryNamespace(**props)
    ours.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    ours.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    assert _keys(server, props, ROWS_DIR)

    reference = ReferenceNamespace(**reference_props)
    assert _namespaces(reference) == ["a"]
    assert reference.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    reference.create_namespace(ln.CreateNamespaceRequest(id=["b"]))  # the next version: no rows object
    reference.declare_table(ln.DeclareTableRequest(id=["b", "u"]))

    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a", "b"]
    assert cold.list_tables(ln.ListTablesRequest(id=["b"])).tables == ["u"]
    assert _opened(cold)  # no object for the reference's version: the table was opened at that version

    ours.create_namespace(ln.CreateNamespaceRequest(id=["c"]))  # ours again, on top of the reference's rewrite
    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == ["a", "b", "c"]
    assert cold.list_tables(ln.ListTablesRequest(id=["b"])).tables == ["u"]
    assert not _opened(cold)
    assert _namespaces(ReferenceNamespace(**reference_props)) == ["a", "b", "c"]


def test_catalogs_above_the_row_cap_write_none_and_still_answer(
    server: CountingS3Server, props: dict[str, str]
) -> None:
    props = {**props, "manifest_rows_object_max_rows": "2"}
    ns = DirectoryNamespace(**props)
    for name in ("a", "b", "c"):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    written = _keys(server, props, ROWS_DIR)
    assert len(written) == 2  # the versions of one and two rows

    cold = DirectoryNamespace(**props)
    with server.counting() as requests:
        assert _namespaces(cold) == ["a", "b", "c"]
    assert requests["GET"] >= 2  # the missing object's 404, then the table's own reads
    assert _opened(cold)


def test_maintenance_prunes_old_rows_objects_and_lance_clean_up_leaves_them(
    server: CountingS3Server, props: dict[str, str]
) -> None:
    props = {**props, "manifest_maintenance_every": "0", "manifest_cleanup_every": "0"}
    ns = DirectoryNamespace(**props)
    for i in range(6):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[f"n{i}"]))
    assert len(_keys(server, props, ROWS_DIR)) == 6

    dataset = lance.dataset(f"{props['root']}/__manifest", storage_options=_options(props))
    dataset.cleanup_old_versions(older_than=timedelta(0), delete_unverified=True, error_if_tagged_old_versions=False)
    assert len(_keys(server, props, ROWS_DIR)) == 6  # Lance's own clean-up ignores them...
    assert _namespaces(DirectoryNamespace(**props)) == [f"n{i}" for i in range(6)]

    result = maintain_manifest(ns, older_than=timedelta(minutes=10))
    (kept,) = _keys(server, props, ROWS_DIR)  # ...ours keeps the newest version's only
    assert kept.rpartition("/")[2].startswith(f"{result['version_after']:020d}-")
    assert result["rows_objects_removed"] >= 5
    cold = DirectoryNamespace(**props)
    assert _namespaces(cold) == [f"n{i}" for i in range(6)]
    assert not _opened(cold)


def test_automatic_maintenance_keeps_the_objects_bounded(server: CountingS3Server, props: dict[str, str]) -> None:
    ns = DirectoryNamespace(**{**props, "manifest_maintenance_every": "4"})
    for i in range(12):
        ns.create_namespace(ln.CreateNamespaceRequest(id=[f"n{i}"]))
    versions = Counter(key.rpartition("/")[2][:20] for key in _keys(server, props, ROWS_DIR))
    assert 1 <= len(versions) <= 5
