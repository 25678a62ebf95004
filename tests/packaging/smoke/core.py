"""Run inside a venv holding only the wheel and its core dependencies (not under pytest, not this checkout).

argv: a JSON list of the modules that must import; a scratch directory; a JSON object of S3 namespace
properties (moto's server; ``credential_vendor.*`` included) or ``{}``. Prints a JSON summary.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import uuid

import lance
import lance_namespace as ln
import pyarrow as pa

modules, scratch, s3_properties = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
for module in modules:
    importlib.import_module(module)
import airflow_provider_lance  # noqa: E402
from airflow_provider_lance.namespace import DirectoryNamespace  # noqa: E402

# the extras' and the test suite's packages are not here: what imported above needed none of them
absent = ["airflow", "pyspark", "starlette", "uvicorn", "boto3", "moto", "pytest", "lance_namespace_impls"]
present = [name for name in absent if importlib.util.find_spec(name) is not None]
assert not present, f"a core install holds {present}"


def round_trip(namespace: DirectoryNamespace, storage_options: dict[str, str] | None = None) -> dict[str, int]:
    """Create a namespace and a table, write it with pylance through the namespace, append, read it back."""
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["prod"]))
    table_id = ["prod", "users"]
    rows = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    lance.write_dataset(rows, namespace_client=namespace, table_id=table_id, mode="create")
    lance.write_dataset(rows, namespace_client=namespace, table_id=table_id, mode="append")
    dataset = lance.dataset(namespace_client=namespace, table_id=table_id)
    versions = namespace.list_table_versions(ln.ListTableVersionsRequest(id=table_id)).versions
    assert namespace.list_tables(ln.ListTablesRequest(id=["prod"])).tables == ["users"]
    return {"rows": dataset.count_rows(), "version": dataset.version, "versions": len(versions)}


summary = {"provider": airflow_provider_lance.__file__, "python": sys.version.split()[0]}
summary["local"] = round_trip(DirectoryNamespace(root=f"{scratch}/catalog", table_version_management="true"))
if s3_properties:
    root = f"{s3_properties.pop('root')}/{uuid.uuid4().hex[:8]}"
    s3 = DirectoryNamespace(root=root, table_version_management="true", **s3_properties)
    summary["s3"] = round_trip(s3)
    vended = s3.describe_table(ln.DescribeTableRequest(id=["prod", "users"], vend_credentials=True)).storage_options
    assert vended and vended.get("aws_session_token"), "no temporary credentials were vended"
    assert vended["aws_access_key_id"] != s3_properties["storage.aws_access_key_id"]
    summary["vended"] = sorted(vended)
print(json.dumps(summary))
