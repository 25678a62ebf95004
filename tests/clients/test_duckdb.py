"""DuckDB's Lance extension (``duckdb`` + ``duckdb-extension-lance`` 1.5.5) through our server: ATTACH with a
bearer token, SHOW TABLES, SELECT with a filter, an aggregate and a join, INSERT/UPDATE/DELETE/CTAS on root
tables read back with pylance; and the extension's limits, each answered as the reference server answers them.

One server for the module (our engine with table version management, on local disk), seeded through pylance.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import duckdb_extension_lance
import httpx
import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.rest import ServerSettings
from tests.rest.servers import reference_server, serve_namespace

TOKEN = "duckdb-token"
EXTENSION = (
    Path(duckdb_extension_lance.__file__).parent / "extensions" / f"v{duckdb.__version__}" / "lance.duckdb_extension"
)
ITEMS = pa.table({"id": [1, 2, 3, 4], "cat": ["a", "b", "a", "c"], "v": [1.0, 2.0, 3.0, 4.0]})
CATS = pa.table({"cat": ["a", "b"], "label": ["alpha", "beta"]})


def client(url: str, token: str | None = TOKEN) -> Any:
    """pylance's REST client of ``url``."""
    properties = {"uri": url}
    if token:
        properties["header.Authorization"] = f"Bearer {token}"
    return ln.connect("rest", properties)


def seed(url: str, token: str | None = TOKEN) -> None:
    """Root tables ``items`` and ``cats``, and ``team.child`` in a child namespace, written with pylance."""
    namespace = client(url, token)
    lance.write_dataset(ITEMS, namespace_client=namespace, table_id=["items"], mode="create")
    lance.write_dataset(CATS, namespace_client=namespace, table_id=["cats"], mode="create")
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["team"]))
    lance.write_dataset(pa.table({"id": [7, 8]}), namespace_client=namespace, table_id=["team", "child"], mode="create")


def duck(url: str, namespace: str = "$", token: str | None = TOKEN, alias: str = "x") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the Lance extension and ``namespace`` of ``url`` attached as ``alias``."""
    connection = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    connection.execute(f"LOAD '{EXTENSION}'")
    auth = f", BEARER_TOKEN '{token}'" if token else ""
    connection.execute(f"ATTACH '{namespace}' AS {alias} (TYPE LANCE, ENDPOINT '{url}'{auth})")
    return connection


def read_back(url: str, table: str) -> list[dict[str, Any]]:
    """The rows of a root table as pylance reads them through the server, ordered by ``id``."""
    dataset = lance.dataset(namespace_client=client(url), table_id=[table])
    return dataset.to_table().sort_by("id").to_pylist()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("duckdb-root")
    engine = DirectoryNamespace(root=str(root), table_version_management="true")
    with serve_namespace(engine, ServerSettings(tokens=frozenset({TOKEN}))) as url:
        seed(url)
        yield url


def test_attach_with_a_bearer_token_and_show_tables(server: str) -> None:
    connection = duck(server)
    assert {"items", "cats"} <= {name for (name,) in connection.execute("SHOW TABLES FROM x.main").fetchall()}
    with pytest.raises(duckdb.IOException, match="A valid bearer token is required"):
        duck(server, token="wrong")
    with pytest.raises(duckdb.InvalidInputException, match="requires a non-empty namespace id"):
        duck(server, namespace="")


def test_select_with_a_filter_an_aggregate_and_a_join(server: str) -> None:
    connection = duck(server)
    assert connection.execute("SELECT id FROM x.main.items WHERE v > 2 ORDER BY id").fetchall() == [(3,), (4,)]
    totals = connection.execute("SELECT cat, count(*), sum(v) FROM x.main.items GROUP BY cat ORDER BY cat").fetchall()
    assert totals == [("a", 2, 4.0), ("b", 1, 2.0), ("c", 1, 4.0)]
    joined = connection.execute(
        "SELECT i.id, c.label FROM x.main.items i JOIN x.main.cats c USING (cat) ORDER BY i.id"
    ).fetchall()
    assert joined == [(1, "alpha"), (2, "beta"), (3, "alpha")]


def test_insert_update_delete_are_read_back_by_pylance(server: str) -> None:
    lance.write_dataset(ITEMS, namespace_client=client(server), table_id=["edits"], mode="create")
    connection = duck(server)
    connection.execute("INSERT INTO x.main.edits VALUES (5, 'b', 5.0)")
    connection.execute("UPDATE x.main.edits SET v = 20.0 WHERE id = 2")
    connection.execute("DELETE FROM x.main.edits WHERE id = 1 OR id = 3")  # the first column: see the limits
    expected = [{"id": 2, "cat": "b", "v": 20.0}, {"id": 4, "cat": "c", "v": 4.0}, {"id": 5, "cat": "b", "v": 5.0}]
    assert read_back(server, "edits") == expected
    versions = client(server).list_table_versions(ln.ListTableVersionsRequest(id=["edits"])).versions
    assert [version.version for version in versions][-1] == 4  # one committed version per statement


def test_create_table_as_select_is_read_back_by_pylance(server: str) -> None:
    connection = duck(server)
    connection.execute("SHOW TABLES FROM x.main").fetchall()  # see the CTAS limit below
    connection.execute("CREATE TABLE x.main.big AS SELECT id, cat FROM x.main.items WHERE v >= 2")
    assert read_back(server, "big") == [{"id": 2, "cat": "b"}, {"id": 3, "cat": "a"}, {"id": 4, "cat": "c"}]
    assert duck(server).execute("SELECT count(*) FROM x.main.big").fetchone() == (3,)


def _ctas_right_after_attach(url: str) -> tuple[list[str], int]:
    connection = duck(url, token=None)
    connection.execute("CREATE TABLE x.main.summary AS SELECT * FROM x.main.items")
    dataset = lance.dataset(namespace_client=client(url, None), table_id=["summary"])
    return dataset.schema.names, dataset.count_rows()


def _delete_with_a_string_predicate(url: str) -> int:
    lance.write_dataset(ITEMS, namespace_client=client(url, None), table_id=["doomed"], mode="create")
    duck(url, token=None).execute("DELETE FROM x.main.doomed WHERE cat = 'a'")
    return lance.dataset(namespace_client=client(url, None), table_id=["doomed"]).count_rows()


def test_the_extensions_limits_are_the_reference_servers(tmp_path: Path) -> None:
    """duckdb-extension-lance 1.5.5 on a REST catalog: a CTAS issued before the attached catalog was listed
    declares the table and writes its schema without its rows; ``DELETE ... WHERE cat = 'a'`` (a predicate
    on another column than the first) deletes every row; a table in a child namespace is listed but cannot
    be read (the extension describes it without its namespace); no time travel. Our server answers every
    one of these requests as the reference ``RestAdapter`` does."""
    (tmp_path / "ours").mkdir()
    (tmp_path / "reference").mkdir()
    outcomes = []
    with (
        serve_namespace(DirectoryNamespace(root=str(tmp_path / "ours"))) as ours,
        reference_server(str(tmp_path / "reference")) as reference,
    ):
        for url in (ours, reference):
            seed(url, token=None)
            ctas = _ctas_right_after_attach(url)
            left = _delete_with_a_string_predicate(url)
            connection = duck(url, namespace="team", token=None, alias="t")
            listed = connection.execute("SHOW TABLES FROM t.main").fetchall()
            with pytest.raises(duckdb.IOException) as child:
                connection.execute("SELECT * FROM t.main.child").fetchall()
            with pytest.raises(duckdb.BinderException) as travel:
                duck(url, token=None).execute("SELECT * FROM x.main.items AT (VERSION => 1)").fetchall()
            outcomes.append((ctas, left, listed, _child_error(str(child.value)), str(travel.value)))
    assert outcomes[0] == outcomes[1]
    ctas, left, listed, child_error, travel_error = outcomes[0]
    assert ctas == (["id", "cat", "v"], 0)
    assert left == 0  # not the 2 rows of cat b and c
    assert listed == [("child",)]
    assert child_error.endswith("Namespace error: Table not found")
    assert "Catalog type does not support time travel" in travel_error


def _child_error(message: str) -> str:
    """The extension's error for the child table, up to the server's own words (which differ) and without the
    Rust source locations it quotes; it names the table without its namespace."""
    assert "'child'" in message
    return re.sub(r"Table not found: .*", "Table not found", re.sub(r", /\S+\.rs:\d+:\d+", "", message))


def test_a_fixed_extension_would_read_a_child_namespace_table(server: str) -> None:
    """The request a fixed extension would make: DescribeTable with the namespace in the id, then a scan of the
    location it answers (with the storage options it answers)."""
    with httpx.Client(base_url=server, timeout=30, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        described = http.post("/v1/table/team$child/describe", json={"id": ["team", "child"]})
        # what the extension 1.5.5 sends instead: the table without its namespace
        assert http.post("/v1/table/child/describe", json={"id": ["child"]}).json()["code"] == 4
    assert described.status_code == 200
    answer = described.json()
    assert answer["location"].startswith("file://")
    dataset = lance.dataset(answer["location"], storage_options=answer.get("storage_options") or None)
    assert dataset.to_table().to_pylist() == [{"id": 7}, {"id": 8}]
    assert dataset.version == answer["version"]
