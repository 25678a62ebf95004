"""A client of ``lance-namespace-server`` in the server's venv: one round trip with a principal's token, and a
request without it refused. argv: the server's URL, the token. Prints a JSON summary."""

from __future__ import annotations

import json
import sys

import lance
import lance_namespace as ln
import pyarrow as pa

url, token = sys.argv[1], sys.argv[2]
client = ln.connect("rest", {"uri": url, "header.Authorization": f"Bearer {token}"})
client.create_namespace(ln.CreateNamespaceRequest(id=["sales"]))
table_id = ["sales", "orders"]
lance.write_dataset(pa.table({"id": [1, 2], "amount": [9.5, 3.0]}), namespace_client=client, table_id=table_id)
dataset = lance.dataset(namespace_client=client, table_id=table_id)
stranger = ln.connect("rest", {"uri": url, "header.Authorization": "Bearer not-the-token"})
try:
    stranger.list_namespaces(ln.ListNamespacesRequest(id=[]))
except ln.UnauthenticatedError:
    refused = True
else:
    refused = False
assert refused, "a wrong token was accepted"
listed = client.list_tables(ln.ListTablesRequest(id=["sales"])).tables
print(json.dumps({"rows": dataset.count_rows(), "tables": listed, "stranger_refused": refused}))
