"""On S3 a long-lived instance sees every change made outside at its next call: one LIST of
``__manifest/_versions/`` (``MaxKeys=1``) names the newest manifest and its e-tag (issue 12, point 4)."""

from __future__ import annotations

from datetime import timedelta

import lance
import lance_namespace as ln

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.s3.conftest import BUCKET, MotoServer

NO_AUTO_MAINTENANCE = {"manifest_maintenance_every": "0", "manifest_cleanup_every": "0"}


def _namespaces(ns: DirectoryNamespace) -> list[str]:
    return ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces


def test_outside_changes_are_seen_at_the_next_call(moto_server: MotoServer, s3_root: str) -> None:
    props = moto_server.properties(s3_root, **NO_AUTO_MAINTENANCE)
    writer = DirectoryNamespace(**props)
    writer.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    ns = DirectoryNamespace(**props)
    assert _namespaces(ns) == ["a"]

    writer.create_namespace(ln.CreateNamespaceRequest(id=["b"]))  # another writer
    assert _namespaces(ns) == ["a", "b"]

    writer.create_namespace(ln.CreateNamespaceRequest(id=["c"]))  # then an outside clean-up
    manifest = lance.dataset(f"{s3_root}/__manifest", storage_options=moto_server.storage_options())
    manifest.cleanup_old_versions(older_than=timedelta(0), error_if_tagged_old_versions=False)
    assert _namespaces(ns) == ["a", "b", "c"]

    client = moto_server.client()  # the catalog deleted and re-created with as many versions
    prefix = s3_root.removeprefix(f"s3://{BUCKET}/") + "/__manifest/"
    for item in client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []):
        client.delete_object(Bucket=BUCKET, Key=item["Key"])
    again = DirectoryNamespace(**props)
    for name in ("x", "y", "z"):
        again.create_namespace(ln.CreateNamespaceRequest(id=[name]))
    assert _namespaces(ns) == ["x", "y", "z"]
