"""Names and roots with URI-special characters on S3 and Azure (issue 12, point 1): our fsspec writes and pylance's
object_store writes land on the same keys, and the reference reads what we wrote."""

from __future__ import annotations

import lance
import lance_namespace as ln
import pyarrow as pa
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.s3.conftest import ObjectStore

NAMES = ["p%41", "pA", "a#b", "a#c", "q?c", "s p", "e&f"]


def test_special_names_and_root(object_store: ObjectStore) -> None:
    server = object_store.server
    root = f"{object_store.root}/has#x"
    ns = DirectoryNamespace(**server.properties(root))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["n"]))
    table_ids = [["n", name] for name in NAMES] + [[name] for name in ("p%41", "pA", "s p")]
    for rows, table_id in enumerate(table_ids, start=1):
        data = pa.table({"n": list(range(rows))})
        lance.write_dataset(data, namespace_client=ns, table_id=table_id, mode="create")

    reference = ReferenceNamespace(**server.properties(ns.config.root))  # a URI: escaped
    for rows, table_id in enumerate(table_ids, start=1):
        assert lance.dataset(namespace_client=ns, table_id=table_id).count_rows() == rows, table_id
        if len(table_id) > 1:  # root tables: see OBJECT_STORE_ESCAPED in tests/namespace/test_names.py
            dataset = lance.dataset(
                namespace_client=reference, table_id=table_id, storage_options=server.storage_options()
            )
            assert dataset.count_rows() == rows, table_id
    # markers, __manifest and data files share one prefix per table: no table left with only a marker
    prefix = f"{object_store.prefix}/has#x"
    keys = server.keys(prefix)
    tops = {key[len(prefix) + 1 :].split("/")[0] for key in keys}
    assert {f"{name}.lance" for name in ("p%41", "pA", "s p")} <= tops
    for top in tops - {"__manifest"}:
        assert any(k.startswith(f"{prefix}/{top}/data/") for k in keys), f"{top} has no data files"
