"""AWS Glue end to end on moto: the catalog operations Glue serves, pylance writing and reading through it,
what a caller sees for the operations it cannot serve, and its default location under ``root``."""

from __future__ import annotations

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest

from airflow_provider_lance.implementations import AdaptedNamespace, OperationNotImplemented, connect
from tests.implementations.conftest import glue_properties
from tests.s3.conftest import MotoServer

VERSION_REQUESTS = [
    ("list_table_versions", ln.ListTableVersionsRequest(id=["d", "t"])),
    ("create_table_version", ln.CreateTableVersionRequest(id=["d", "t"], version=2, manifest_path="m")),
    ("describe_table_version", ln.DescribeTableVersionRequest(id=["d", "t"], version=1)),
    ("batch_delete_table_versions", ln.BatchDeleteTableVersionsRequest(id=["d", "t"], ranges=[])),
    ("batch_create_table_versions", ln.BatchCreateTableVersionsRequest(entries=[])),
    ("batch_commit_tables", ln.BatchCommitTablesRequest(operations=[])),
]


def test_catalog_operations_answer_with_lance_namespace_errors(glue_props: dict[str, str], database: str) -> None:
    glue = connect("glue", glue_props)
    assert isinstance(glue, AdaptedNamespace)
    glue.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    assert database in glue.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces
    glue.namespace_exists(ln.NamespaceExistsRequest(id=[database]))  # Glue has none: answered from describe
    with pytest.raises(ln.NamespaceAlreadyExistsError):
        glue.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    with pytest.raises(ln.NamespaceNotFoundError):
        glue.namespace_exists(ln.NamespaceExistsRequest(id=[f"{database}_missing"]))

    declared = glue.declare_table(ln.DeclareTableRequest(id=[database, "t"]))
    assert declared.location == f"{glue_props['root']}/{database}/t.lance"  # under root, not s3://lance-namespace
    assert glue.list_tables(ln.ListTablesRequest(id=[database], include_declared=True)).tables == ["t"]
    glue.table_exists(ln.TableExistsRequest(id=[database, "t"]))
    with pytest.raises(ln.TableAlreadyExistsError):
        glue.declare_table(ln.DeclareTableRequest(id=[database, "t"]))
    with pytest.raises(ln.TableNotFoundError, match="does not exist"):  # Glue raises a plain RuntimeError
        glue.describe_table(ln.DescribeTableRequest(id=[database, "missing"]))
    with pytest.raises(ln.TableNotFoundError):
        glue.table_exists(ln.TableExistsRequest(id=[database, "missing"]))
    with pytest.raises(ln.NamespaceNotEmptyError):
        glue.drop_namespace(ln.DropNamespaceRequest(id=[database]))
    with pytest.raises(ln.InvalidInputError, match="exactly 2 parts"):
        glue.describe_table(ln.DescribeTableRequest(id=["t"]))
    assert glue.deregister_table(ln.DeregisterTableRequest(id=[database, "t"])).location == declared.location
    glue.drop_namespace(ln.DropNamespaceRequest(id=[database]))


@pytest.mark.parametrize(("operation", "request_model"), VERSION_REQUESTS, ids=[op for op, _ in VERSION_REQUESTS])
def test_version_operations_name_the_catalog_and_what_would_serve(
    glue_props: dict[str, str], operation: str, request_model: object
) -> None:
    glue = connect("glue", glue_props)
    with pytest.raises(ln.UnsupportedOperationError) as raised:
        getattr(glue, operation)(request_model)
    assert isinstance(raised.value, OperationNotImplemented)
    message = str(raised.value)
    assert f"{operation} is not implemented by GlueNamespace" in message
    assert "table_version_management=true" in message


def test_a_table_goes_under_its_database_location_or_is_refused_without_root(
    moto_server: MotoServer, glue_root: str, database: str
) -> None:
    glue = connect("glue", glue_properties(moto_server, root=None))
    glue.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    with pytest.raises(ln.InvalidInputError, match="'root' property"):
        glue.declare_table(ln.DeclareTableRequest(id=[database, "t"]))
    placed = f"{database}_placed"
    glue.create_namespace(ln.CreateNamespaceRequest(id=[placed], properties={"location": f"{glue_root}/placed"}))
    assert glue.declare_table(ln.DeclareTableRequest(id=[placed, "t"])).location == f"{glue_root}/placed/t.lance"
    given = glue.declare_table(ln.DeclareTableRequest(id=[placed, "u"], location=f"{glue_root}/elsewhere.lance"))
    assert given.location == f"{glue_root}/elsewhere.lance"


def test_pylance_writes_and_reads_through_glue(glue_props: dict[str, str], database: str) -> None:
    glue = connect("glue", glue_props)
    glue.create_namespace(ln.CreateNamespaceRequest(id=[database]))
    rows = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    lance.write_dataset(rows, namespace_client=glue, table_id=[database, "events"], mode="create")
    lance.write_dataset(rows.slice(0, 1), namespace_client=glue, table_id=[database, "events"], mode="append")
    dataset = lance.dataset(namespace_client=glue, table_id=[database, "events"])
    assert dataset.count_rows() == 4
    assert dataset.uri.rstrip("/").endswith(f"{glue_props['root'].removeprefix('s3://')}/{database}/events.lance")
    assert glue.list_tables(ln.ListTablesRequest(id=[database])).tables == ["events"]
