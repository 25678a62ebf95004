"""The hook on a ``lance`` connection with ``impl=glue`` (moto's Glue), in a venv with the ``airflow`` and
``glue`` extras: namespace, declare, describe, list, a pylance write and read at the declared location, and the
version operations refused as Unsupported. The connection comes from ``AIRFLOW_CONN_LANCE_GLUE``; argv: a
database name. Prints a JSON summary."""

from __future__ import annotations

import json
import sys

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.hooks.lance import LanceHook

database = sys.argv[1]
hook = LanceHook(lance_conn_id="lance_glue")
hook.create_namespace(database)
hook.declare_table(f"{database}.events")
table_id = [database, "events"]
lance.write_dataset(pa.table({"id": [1, 2, 3]}), namespace_client=hook.namespace, table_id=table_id, mode="overwrite")
rows = lance.dataset(namespace_client=hook.namespace, table_id=table_id).count_rows()
location = hook.describe_table(f"{database}.events").location
try:
    hook.list_table_versions(f"{database}.events")
except ln.UnsupportedOperationError as error:
    unsupported = "GlueNamespace" in str(error)
else:
    unsupported = False
assert unsupported, "Glue answered a table version operation"
print(json.dumps({"tables": hook.list_tables(database), "rows": rows, "location": location}))
