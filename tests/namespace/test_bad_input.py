"""Bad input: the right ``lance_namespace`` error class and code, and a byte-identical directory tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace import (
    InvalidInputError,
    LanceNamespaceError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    TableAlreadyExistsError,
    TableBranchNotFoundError,
    TableNotFoundError,
    TableVersionNotFoundError,
    UnsupportedOperationError,
)

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.conftest import tree_snapshot

LONG = "x" * 300
STAGED_OUTSIDE = "/etc/passwd"

CASES: list[tuple[str, str, Any, type[LanceNamespaceError]]] = [
    ("ns-empty-part", "create_namespace", {"id": [""]}, InvalidInputError),
    ("ns-dollar", "create_namespace", {"id": ["a$b"]}, InvalidInputError),
    ("ns-slash", "create_namespace", {"id": ["a/b"]}, InvalidInputError),
    ("ns-backslash", "create_namespace", {"id": ["a\\b"]}, InvalidInputError),
    ("ns-dot", "create_namespace", {"id": ["."]}, InvalidInputError),
    ("ns-dotdot", "create_namespace", {"id": [".."]}, InvalidInputError),
    ("ns-nul", "create_namespace", {"id": ["a\x00"]}, InvalidInputError),
    ("ns-newline", "create_namespace", {"id": ["a\nb"]}, InvalidInputError),
    ("ns-too-long", "create_namespace", {"id": [LONG]}, InvalidInputError),
    ("ns-id-string", "create_namespace", {"id": "prod"}, InvalidInputError),
    ("ns-id-int-part", "create_namespace", {"id": [1]}, InvalidInputError),
    ("ns-bad-mode", "create_namespace", {"id": ["new"], "mode": "bogus"}, InvalidInputError),
    ("ns-bad-properties", "create_namespace", {"id": ["new"], "properties": {"a": 1}}, InvalidInputError),
    ("ns-exists", "create_namespace", {"id": ["prod"]}, NamespaceAlreadyExistsError),
    ("ns-root", "create_namespace", {"id": []}, NamespaceAlreadyExistsError),
    ("ns-parent-missing", "create_namespace", {"id": ["nope", "child"]}, NamespaceNotFoundError),
    ("ns-over-table", "create_namespace", {"id": ["prod", "users"]}, NamespaceAlreadyExistsError),
    ("drop-root", "drop_namespace", {"id": []}, InvalidInputError),
    ("drop-missing", "drop_namespace", {"id": ["nope"]}, NamespaceNotFoundError),
    ("drop-not-empty", "drop_namespace", {"id": ["prod"]}, NamespaceNotEmptyError),
    ("drop-cascade", "drop_namespace", {"id": ["prod"], "behavior": "cascade"}, UnsupportedOperationError),
    ("drop-bad-mode", "drop_namespace", {"id": ["prod"], "mode": "maybe"}, InvalidInputError),
    ("describe-ns-missing", "describe_namespace", {"id": ["nope"]}, NamespaceNotFoundError),
    ("exists-ns-missing", "namespace_exists", {"id": ["prod", "nope"]}, NamespaceNotFoundError),
    ("list-ns-missing", "list_namespaces", {"id": ["nope"]}, NamespaceNotFoundError),
    ("list-ns-negative-limit", "list_namespaces", {"id": [], "limit": -1}, InvalidInputError),
    ("declare-empty-id", "declare_table", {"id": []}, InvalidInputError),
    ("declare-parent-missing", "declare_table", {"id": ["nope", "t"]}, NamespaceNotFoundError),
    ("declare-exists-child", "declare_table", {"id": ["prod", "users"]}, TableAlreadyExistsError),
    ("declare-exists-root", "declare_table", {"id": ["events"]}, TableAlreadyExistsError),
    ("declare-dollar", "declare_table", {"id": ["prod", "a$b"]}, InvalidInputError),
    ("declare-slash", "declare_table", {"id": ["a/../../etc"]}, InvalidInputError),
    ("declare-loc-parent", "declare_table", {"id": ["prod", "n1"], "location": "../x"}, InvalidInputError),
    ("declare-loc-abs", "declare_table", {"id": ["prod", "n2"], "location": "/tmp/x"}, InvalidInputError),
    ("declare-loc-uri", "declare_table", {"id": ["prod", "n3"], "location": "s3://b/x"}, InvalidInputError),
    ("declare-loc-manifest", "declare_table", {"id": ["prod", "n4"], "location": "__manifest"}, InvalidInputError),
    ("declare-over-namespace", "declare_table", {"id": ["prod"]}, TableAlreadyExistsError),
    ("list-tables-missing", "list_tables", {"id": ["nope"]}, NamespaceNotFoundError),
    ("list-tables-negative", "list_tables", {"id": ["prod"], "limit": -5}, InvalidInputError),
    ("describe-missing", "describe_table", {"id": ["prod", "nope"]}, TableNotFoundError),
    ("describe-parent-missing", "describe_table", {"id": ["nope", "t"]}, NamespaceNotFoundError),
    ("describe-version-missing", "describe_table", {"id": ["prod", "users"], "version": 42}, TableVersionNotFoundError),
    ("describe-negative-version", "describe_table", {"id": ["prod", "users"], "version": -1}, InvalidInputError),
    ("exists-missing", "table_exists", {"id": ["prod", "nope"]}, TableNotFoundError),
    ("exists-version-missing", "table_exists", {"id": ["prod", "users"], "version": 9}, TableVersionNotFoundError),
    ("register-parent", "register_table", {"id": ["prod", "r"], "location": "../x"}, InvalidInputError),
    ("register-uri", "register_table", {"id": ["prod", "r"], "location": "file:///etc"}, InvalidInputError),
    ("register-abs", "register_table", {"id": ["prod", "r"], "location": "/etc"}, InvalidInputError),
    ("register-empty", "register_table", {"id": ["prod", "r"], "location": ""}, InvalidInputError),
    (
        "register-in-versions",
        "register_table",
        {"id": ["prod", "r"], "location": "events.lance/_versions"},
        InvalidInputError,
    ),
    ("register-taken", "register_table", {"id": ["prod", "r"], "location": "events.lance"}, InvalidInputError),
    ("register-nul", "register_table", {"id": ["prod", "r"], "location": "a\x00b"}, InvalidInputError),
    ("declare-nul-location", "declare_table", {"id": ["prod", "n"], "location": "a\x00b"}, InvalidInputError),
    (
        "delete-1e9-versions",
        "batch_delete_table_versions",
        {"id": ["prod", "users"], "ranges": [{"start_version": 0, "end_version": 10**9}]},
        InvalidInputError,
    ),
    (
        "delete-2e62-versions",
        "batch_delete_table_versions",
        {"id": ["prod", "users"], "ranges": [{"start_version": 0, "end_version": 2**62}]},
        InvalidInputError,
    ),
    (
        "delete-missing-branch",
        "batch_delete_table_versions",
        {"id": ["prod", "users"], "branch": "dev", "ranges": [{"start_version": 1, "end_version": 2}]},
        TableBranchNotFoundError,
    ),
    (
        "list-versions-missing-branch",
        "list_table_versions",
        {"id": ["prod", "users"], "branch": "dev"},
        TableBranchNotFoundError,
    ),
    ("describe-version-2e64", "describe_table_version", {"id": ["prod", "users"], "version": 2**64}, InvalidInputError),
    ("describe-table-version-0", "describe_table", {"id": ["prod", "users"], "version": 0}, InvalidInputError),
    (
        "list-versions-unicode-token",
        "list_table_versions",
        {"id": ["prod", "users"], "page_token": "\u00b2"},
        InvalidInputError,
    ),
    ("register-exists", "register_table", {"id": ["events"], "location": "events.lance"}, TableAlreadyExistsError),
    ("register-no-location", "register_table", {"id": ["prod", "r"]}, InvalidInputError),
    ("deregister-missing", "deregister_table", {"id": ["prod", "nope"]}, TableNotFoundError),
    ("drop-table-missing", "drop_table", {"id": ["nope"]}, TableNotFoundError),
    ("drop-table-parent-missing", "drop_table", {"id": ["nope", "t"]}, NamespaceNotFoundError),
    (
        "version-missing-table",
        "create_table_version",
        {"id": ["prod", "nope"], "version": 2, "manifest_path": "x"},
        TableNotFoundError,
    ),
    (
        "version-outside-root",
        "create_table_version",
        {"id": ["prod", "users"], "version": 2, "manifest_path": STAGED_OUTSIDE},
        InvalidInputError,
    ),
    (
        "version-zero",
        "create_table_version",
        {"id": ["prod", "users"], "version": 0, "manifest_path": "x"},
        InvalidInputError,
    ),
    ("batch-empty", "batch_create_table_versions", {"entries": []}, InvalidInputError),
    ("versions-bad-token", "list_table_versions", {"id": ["prod", "users"], "page_token": "abc"}, InvalidInputError),
    (
        "describe-version-99",
        "describe_table_version",
        {"id": ["prod", "users"], "version": 99},
        TableVersionNotFoundError,
    ),
    (
        "delete-missing-versions",
        "batch_delete_table_versions",
        {"id": ["prod", "users"], "ranges": [{"start_version": 5, "end_version": 9}]},
        TableVersionNotFoundError,
    ),
    (
        "delete-negative-start",
        "batch_delete_table_versions",
        {"id": ["prod", "users"], "ranges": [{"start_version": -1, "end_version": 1}]},
        InvalidInputError,
    ),
    ("request-wrong-type", "list_tables", "prod", InvalidInputError),
    # a field the operation does not know would be dropped silently: a misspelt mode, a property given flat
    ("unknown-field", "declare_table", {"id": ["prod", "other"], "propertis": {"a": "b"}}, InvalidInputError),
    ("unknown-field-in-a-read", "list_tables", {"id": ["prod"], "page_size": 10}, InvalidInputError),
]


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> tuple[DirectoryNamespace, Path]:
    root = tmp_path_factory.mktemp("bad-input")
    ns = DirectoryNamespace(root=str(root))
    ns.create_namespace({"id": ["prod"]})
    data = pa.table({"id": [1, 2, 3]})
    lance.write_dataset(data, namespace_client=ns, table_id=["prod", "users"], mode="create")
    lance.write_dataset(data, namespace_client=ns, table_id=["events"], mode="create")
    return ns, root


def test_there_are_at_least_40_cases() -> None:
    assert len(CASES) >= 40
    assert len({name for name, *_ in CASES}) == len(CASES)


@pytest.mark.parametrize(("name", "method", "request_", "error"), CASES, ids=[case[0] for case in CASES])
def test_bad_input_is_refused_and_changes_nothing(catalog, name, method, request_, error) -> None:
    ns, root = catalog
    before = tree_snapshot(root)
    with pytest.raises(error) as raised:
        getattr(ns, method)(request_)
    assert raised.value.code == error.code
    assert str(raised.value)
    assert tree_snapshot(root) == before, f"{name} changed the directory tree"


@pytest.mark.parametrize(
    "properties",
    [
        {"manifest_enabled": "yes"},
        {"dir_listing_enabled": "1"},
        {"manifest_enabled": "false", "dir_listing_enabled": "false"},
        {"commit_retries": "many"},
        {"commit_retries": "-1"},
        {"table_version_management": "maybe"},
        {"table_version_management": "true", "manifest_enabled": "false"},
        {"root": "ftp://host/x"},
        {"root": "/tmp/a\x00b"},
        {"storage.": "x"},
    ],
)
def test_malformed_properties_name_the_property(tmp_path, properties) -> None:
    properties = {"root": str(tmp_path / "r"), **properties}
    with pytest.raises(InvalidInputError) as raised:
        DirectoryNamespace(**properties)
    assert any(key.split(".")[0] in str(raised.value) for key in properties if key != "root") or "root" in str(
        raised.value
    )
    assert not (tmp_path / "r").exists()


def test_construction_and_reads_create_nothing(tmp_path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    ns = DirectoryNamespace(root=str(root))
    assert ns.list_namespaces({"id": []}).namespaces == []
    assert ns.list_tables({"id": []}).tables == []
    with pytest.raises(TableNotFoundError):
        ns.describe_table({"id": ["t"]})
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("method", "request_"),
    [
        ("list_tables", ln.ListTablesRequest.model_construct(id=[], limit="many")),
        ("describe_table", ln.DescribeTableRequest.model_construct(id=["prod", "users"], version="latest")),
        ("create_table_version", ln.CreateTableVersionRequest.model_construct(id=["prod", "users"], version=None)),
    ],
)
def test_unvalidated_models_are_validated(catalog, method, request_) -> None:
    """A request built with ``model_construct`` skipped pydantic's validation: InvalidInput, not a TypeError."""
    ns, root = catalog
    before = tree_snapshot(root)
    with pytest.raises(InvalidInputError):
        getattr(ns, method)(request_)
    assert tree_snapshot(root) == before


@pytest.mark.parametrize(
    "endpoint", ["http://AKIAKEY:s3cr3t-value@127.0.0.1:9000", "https://only-user@host", "http://:s3cr3t-value@h"]
)
def test_credentials_in_an_endpoint_url_are_refused_without_echoing_them(tmp_path, endpoint) -> None:
    with pytest.raises(InvalidInputError) as raised:
        DirectoryNamespace(root="s3://bucket/p", **{"storage.aws_endpoint": endpoint})
    assert "s3cr3t" not in str(raised.value) and "AKIAKEY" not in str(raised.value)
    assert "storage.aws_access_key_id" in str(raised.value)


@pytest.mark.parametrize("value", [5, 1.5, None, ["a"], {"a": "b"}])
def test_storage_options_must_be_strings(tmp_path, value) -> None:
    with pytest.raises(InvalidInputError, match=r"storage\.aws_region"):
        DirectoryNamespace(root=str(tmp_path), **{"storage.aws_region": value})


def test_dict_requests_get_dict_answers_where_the_reference_gives_them(tmp_path) -> None:
    """Measured on pylance 14: the reference's create_table_version, describe_table_version and
    batch_delete_table_versions take a dict and answer a dict; a model request still gets a model."""
    ns = DirectoryNamespace(root=str(tmp_path), table_version_management="true")
    lance.write_dataset(pa.table({"a": [1]}), namespace_client=ns, table_id=["t"], mode="create")
    described = ns.describe_table_version({"id": ["t"]})
    assert described["version"]["version"] == 1 and described["version"]["manifest_path"].endswith(".manifest")
    assert isinstance(
        ns.describe_table_version(ln.DescribeTableVersionRequest(id=["t"])), ln.DescribeTableVersionResponse
    )
    deleted = ns.batch_delete_table_versions({"id": ["t"], "ranges": [{"start_version": 7, "end_version": 7}]})
    assert isinstance(deleted, dict)


def test_an_unknown_field_without_a_value_is_accepted(catalog) -> None:
    """A newer pylance calling back may send fields this version of the models lacks, left unset."""
    ns, _ = catalog
    assert isinstance(ns.table_exists({"id": ["prod", "users"], "some_future_option": None}), ln.TableExistsResponse)


@pytest.mark.parametrize("limit", [2**63 - 1, 10**40])
def test_a_limit_beyond_any_listing_lists_everything(catalog, limit: int) -> None:
    """The REST server refuses integers beyond int64, a Python caller is not bounded: once ``islice``'s
    ValueError (Internal)."""
    ns, _ = catalog
    assert ns.list_tables({"id": ["prod"], "limit": limit}).tables == ["users"]
    assert ns.list_namespaces({"id": [], "limit": limit}).namespaces == ["prod"]


@pytest.mark.parametrize("below", ["", "/below"])
def test_a_root_that_is_a_file_is_named_with_what_is_wrong(tmp_path, below) -> None:
    (tmp_path / "afile").write_text("x")
    ns = DirectoryNamespace(root=str(tmp_path / "afile") + below)
    for call in (
        lambda: ns.list_namespaces(ln.ListNamespacesRequest(id=[])),
        lambda: ns.declare_table(ln.DeclareTableRequest(id=["t"])),
    ):
        with pytest.raises(InvalidInputError) as raised:
            call()
        assert "afile" in str(raised.value) and "is a file" in str(raised.value)
        assert "LanceError" not in str(raised.value)
    assert (tmp_path / "afile").read_text() == "x"


def test_a_table_declared_at_the_wrong_location_is_told_where_it_must_be(tmp_path) -> None:
    """Directory-listing mode finds a root table only at ``<name>.lance`` (the reference's words)."""
    ns = DirectoryNamespace(root=str(tmp_path), manifest_enabled="false")
    with pytest.raises(InvalidInputError) as raised:
        ns.declare_table(ln.DeclareTableRequest(id=["t"], location="elsewhere"))
    expected = f"Cannot declare table t at location elsewhere, must be at location {(tmp_path / 't.lance').as_uri()}"
    assert str(raised.value) == expected
    with pytest.raises(InvalidInputError, match=r"must be at location .*t2\.lance"):
        ns.register_table(ln.RegisterTableRequest(id=["t2"], location="elsewhere"))
    assert list(tmp_path.iterdir()) == []
    assert ns.declare_table(ln.DeclareTableRequest(id=["t"], location="t.lance")).location.endswith("/t.lance")
