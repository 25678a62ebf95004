"""The same scenarios on the reference and on our engine; results and error codes must agree."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance_namespace import LanceNamespace

from tests.namespace.conftest import call, do, normalize_location

KINDS = ("ours", "reference")


def run_both(make_namespace: Callable[..., LanceNamespace], tmp_path: Path, scenario: Callable, **props: str):
    results = {}
    for kind in KINDS:
        root = tmp_path / kind
        results[kind] = scenario(make_namespace(kind, root, **props), root)
    return results["ours"], results["reference"]


def _locations(result: tuple[str, Any], root: Path) -> tuple[str, Any]:
    status, data = result
    if status == "ok" and isinstance(data, dict) and "location" in data:
        data = {**data, "location": normalize_location(data["location"], root)}
        data.pop("table_uri", None)
    return status, data


def test_nested_namespaces_and_properties(make_namespace, tmp_path):
    def scenario(ns: LanceNamespace, root: Path) -> list:
        out = [
            call(ns, "create_namespace", id=["a"], properties={"owner": "data", "tier": "gold"}),
            call(ns, "create_namespace", id=["a", "b"]),
            call(ns, "create_namespace", id=["a", "b", "c"], properties={"x": "1"}),
            call(ns, "create_namespace", id=["z"]),
            call(ns, "create_namespace", id=["a"]),  # duplicate → 2
            call(ns, "create_namespace", id=["missing", "child"]),  # parent missing → 1
            call(ns, "list_namespaces", id=[]),
            call(ns, "list_namespaces", id=["a"]),
            call(ns, "list_namespaces", id=["a", "b"]),
            call(ns, "list_namespaces", id=["a", "b", "c"]),
            call(ns, "list_namespaces", id=["nope"]),
            call(ns, "describe_namespace", id=["a"]),
            call(ns, "describe_namespace", id=["a", "b", "c"]),
            call(ns, "describe_namespace", id=["nope"]),
            call(ns, "namespace_exists", id=["a", "b"]),
            call(ns, "namespace_exists", id=["a", "x"]),
            call(ns, "drop_namespace", id=["a"]),  # not empty → 3
            call(ns, "drop_namespace", id=["a", "b", "c"]),
            call(ns, "drop_namespace", id=["a", "b", "c"]),  # gone → 1
            call(ns, "list_namespaces", id=["a", "b"]),
        ]
        return out

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    # The one deliberate difference: the spec says listing a missing parent is NamespaceNotFound (1); the
    # reference answers an empty list.
    assert ours[10] == ("error", 1) and reference[10] == ("ok", {"namespaces": []})
    assert ours[:10] + ours[11:] == reference[:10] + reference[11:]
    assert ours[4] == ("error", 2) and ours[5] == ("error", 1) and ours[16] == ("error", 3)


def test_create_namespace_overwrite_replaces_the_properties(make_namespace, tmp_path):
    """CreateNamespace with mode=overwrite on an existing namespace replaces its properties (one merge-insert
    of its row; the spec's "overwrite"), its children stay. The reference refuses it (NamespaceAlreadyExists),
    the one difference; a namespace that does not exist is created by both."""

    def scenario(ns: LanceNamespace, root: Path) -> list:
        return [
            call(ns, "create_namespace", id=["a"], properties={"owner": "data", "tier": "gold"}),
            call(ns, "create_namespace", id=["a", "b"]),
            call(ns, "create_namespace", id=["a"], mode="overwrite", properties={"owner": "ops"}),
            call(ns, "describe_namespace", id=["a"]),
            call(ns, "list_namespaces", id=["a"]),
            call(ns, "create_namespace", id=["c"], mode="overwrite", properties={"new": "1"}),
            call(ns, "describe_namespace", id=["c"]),
        ]

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    assert ours[2] == ours[3] == ("ok", {"properties": {"owner": "ops"}})
    assert reference[2] == ("error", 2)
    assert [ours[i] for i in (0, 1, 4, 5, 6)] == [reference[i] for i in (0, 1, 4, 5, 6)]
    assert ours[4] == ("ok", {"namespaces": ["b"]}) and ours[6] == ("ok", {"properties": {"new": "1"}})


def test_root_and_child_tables_with_data(make_namespace, tmp_path):
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["a", "b", "c"]})

    def scenario(ns: LanceNamespace, root: Path) -> list:
        out = [call(ns, "create_namespace", id=["prod"])]
        out.append(_locations(call(ns, "declare_table", id=["events"]), root))
        out.append(_locations(call(ns, "declare_table", id=["prod", "users"]), root))
        out.append(call(ns, "declare_table", id=["prod", "users"]))  # duplicate → 5
        out.append(call(ns, "list_tables", id=[]))
        out.append(call(ns, "list_tables", id=["prod"]))
        out.append(call(ns, "table_exists", id=["prod", "users"]))
        out.append(call(ns, "table_exists", id=["prod", "nope"]))
        dataset = lance.write_dataset(data, namespace_client=ns, table_id=["prod", "orders"], mode="create")
        appended = lance.write_dataset(data, namespace_client=ns, table_id=["prod", "orders"], mode="append")
        out.append((dataset.version, appended.version, appended.count_rows()))
        reread = lance.dataset(namespace_client=ns, table_id=["prod", "orders"])
        out.append((reread.version, reread.to_table().sort_by("id").to_pylist()))
        described = do(ns, "describe_table", id=["prod", "orders"])
        out.append(normalize_location(described.location, root))
        out.append(call(ns, "list_tables", id=["prod"]))
        return out

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    assert ours == reference
    assert ours[1][1]["location"] == "events.lance"
    assert ours[2][1]["location"] == "<hash>_prod$users"
    assert ours[8] == (1, 2, 6)


def test_describe_table_reports_version_and_schema(make_namespace):
    ns = make_namespace("ours")
    data = pa.table({"id": pa.array([1, 2], pa.int32()), "v": pa.array([0.5, 1.5], pa.float64())})
    do(ns, "declare_table", id=["t"])
    declared = do(ns, "describe_table", id=["t"], check_declared=True)
    assert declared.is_only_declared is True and declared.version is None
    lance.write_dataset(data, namespace_client=ns, table_id=["t"], mode="overwrite")
    lance.write_dataset(data, namespace_client=ns, table_id=["t"], mode="append")
    described = do(ns, "describe_table", id=["t"])
    assert described.version == 2
    # table_uri only when asked for (the field's description; the reference always sends it)
    assert described.table_uri is None
    assert do(ns, "describe_table", id=["t"], with_table_uri=True).table_uri == described.location
    assert [(f.name, f.type.type, f.nullable) for f in described.var_schema.fields] == [
        ("id", "int32", True),
        ("v", "float64", True),
    ]
    assert do(ns, "describe_table", id=["t"], version=1).version == 1
    assert call(ns, "describe_table", id=["t"], version=9) == ("error", 11)


def test_describe_table_honours_load_detailed_metadata(make_namespace, tmp_path):
    """``load_detailed_metadata=false`` opens nothing (no version or schema, as the reference answers); a
    missing version is still refused (the reference ignores ``version`` then); ``true`` adds the stats the
    field's description asks for (the reference leaves them out)."""
    data = pa.table({"id": pa.array([1, 2, 3], pa.int32())})

    def scenario(ns: LanceNamespace, root: Path) -> list:
        do(ns, "create_namespace", id=["db"])
        do(ns, "declare_table", id=["db", "t"])
        do(ns, "declare_table", id=["db", "declared"])
        lance.write_dataset(data, namespace_client=ns, table_id=["db", "t"], mode="overwrite")
        lance.dataset(namespace_client=ns, table_id=["db", "t"]).delete("id = 1")
        return [
            _locations(call(ns, "describe_table", id=["db", "t"], load_detailed_metadata=False), root),
            _locations(call(ns, "describe_table", id=["db", "declared"], load_detailed_metadata=False), root),
        ]

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    assert ours == reference
    assert "version" not in ours[0][1] and "var_schema" not in ours[0][1]
    ns = make_namespace("ours", tmp_path / "ours")
    assert do(ns, "describe_table", id=["db", "declared"], check_declared=True, load_detailed_metadata=False)
    detailed = do(ns, "describe_table", id=["db", "t"], load_detailed_metadata=True)
    assert detailed.version == 2 and detailed.var_schema is not None
    assert (detailed.stats.num_fragments, detailed.stats.num_deleted_rows) == (1, 1)
    assert do(ns, "describe_table", id=["db", "t"], version=1, load_detailed_metadata=False).version == 1
    assert call(ns, "describe_table", id=["db", "t"], version=9, load_detailed_metadata=False) == ("error", 11)


def test_register_deregister_drop(make_namespace, tmp_path):
    data = pa.table({"id": [1, 2]})

    def scenario(ns: LanceNamespace, root: Path) -> list:
        lance.write_dataset(data, namespace_client=ns, table_id=["keep"], mode="create")
        do(ns, "create_namespace", id=["ns"])
        lance.write_dataset(data, namespace_client=ns, table_id=["ns", "t"], mode="create")
        child_location = normalize_location(do(ns, "describe_table", id=["ns", "t"]).location, root)
        out = [
            _locations(call(ns, "deregister_table", id=["ns", "t"]), root),
            call(ns, "table_exists", id=["ns", "t"]),
            call(ns, "list_tables", id=["ns"]),
            call(ns, "deregister_table", id=["ns", "t"]),  # already → 4
            (root / child_location.replace("<hash>", "*")).parent.exists(),
        ]
        real_location = next(p.name for p in root.iterdir() if p.name.endswith("_ns$t"))
        out.append(_locations(call(ns, "register_table", id=["ns", "again"], location=real_location), root))
        out.append(lance.dataset(namespace_client=ns, table_id=["ns", "again"]).count_rows())
        out.append(call(ns, "register_table", id=["ns", "bad"], location="../escape"))  # → 13
        out.append(call(ns, "register_table", id=["ns", "bad"], location="/abs/path"))  # → 13
        out.append(_locations(call(ns, "drop_table", id=["keep"]), root))
        out.append((root / "keep.lance").exists())
        out.append(call(ns, "drop_table", id=["keep"]))  # → 4
        out.append(call(ns, "list_tables", id=[]))
        return out

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    assert ours == reference
    assert ours[3] == ("error", 4) and ours[7] == ("error", 13) and ours[10] is False


@pytest.mark.parametrize(
    "props",
    [
        {"manifest_enabled": "false", "dir_listing_enabled": "true"},
        {"manifest_enabled": "true", "dir_listing_enabled": "false"},
    ],
    ids=["v1-only", "manifest-only"],
)
def test_single_mode_catalogs(make_namespace, tmp_path, props):
    data = pa.table({"id": [1, 2, 3]})

    def scenario(ns: LanceNamespace, root: Path) -> list:
        out = [_locations(call(ns, "declare_table", id=["a"]), root)]
        lance.write_dataset(data, namespace_client=ns, table_id=["b"], mode="create")
        out.append(call(ns, "list_tables", id=[]))
        out.append(call(ns, "table_exists", id=["b"]))
        out.append(lance.dataset(namespace_client=ns, table_id=["b"]).count_rows())
        out.append(call(ns, "create_namespace", id=["n"])[0])
        out.append(call(ns, "list_namespaces", id=[])[0])
        out.append(_locations(call(ns, "deregister_table", id=["b"]), root)[0])
        out.append(call(ns, "list_tables", id=[]))
        out.append(call(ns, "drop_table", id=["a"])[0])
        out.append(call(ns, "list_tables", id=[]))
        out.append((root / "__manifest").exists())
        return out

    ours, reference = run_both(make_namespace, tmp_path, scenario, **props)
    assert ours == reference
    assert ours[-1] is (props["manifest_enabled"] == "true")


def test_pagination_matches(make_namespace, tmp_path):
    names = ["b", "a", "c10", "c9", "Z", "_x", "é", "d"]

    def scenario(ns: LanceNamespace, root: Path) -> list:
        do(ns, "create_namespace", id=["p"])
        for name in names:
            do(ns, "declare_table", id=["p", name])
            do(ns, "create_namespace", id=["p", "ns_" + name])
        out = []
        for method in ("list_tables", "list_namespaces"):
            for limit in (0, 1, 3, 8, 100, None):
                token, pages = None, []
                for _ in range(20):
                    request: dict[str, Any] = {"id": ["p"], "page_token": token}
                    if limit is not None:
                        request["limit"] = limit
                    response = do(ns, method, **request)
                    items = response.tables if method == "list_tables" else response.namespaces
                    pages.append(list(items))
                    token = response.page_token
                    if not token:
                        break
                out.append((method, limit, pages))
        return out

    ours, reference = run_both(make_namespace, tmp_path, scenario)
    assert ours == reference


@pytest.mark.parametrize("writer,reader", [("ours", "reference"), ("reference", "ours")])
def test_catalog_written_by_one_is_read_and_written_by_the_other(make_namespace, tmp_path, writer, reader):
    root = tmp_path / "shared"
    data = pa.table({"id": [1, 2, 3]})
    first = make_namespace(writer, root)
    do(first, "create_namespace", id=["team"], properties={"k": "v"})
    lance.write_dataset(data, namespace_client=first, table_id=["team", "t"], mode="create")
    lance.write_dataset(data, namespace_client=first, table_id=["root_t"], mode="create")
    do(first, "declare_table", id=["team", "declared"])

    second = make_namespace(reader, root)
    assert do(second, "describe_namespace", id=["team"]).properties == {"k": "v"}
    assert sorted(do(second, "list_tables", id=["team"]).tables) == ["declared", "t"]
    assert do(second, "list_tables", id=[]).tables == ["root_t"]
    assert lance.dataset(namespace_client=second, table_id=["team", "t"]).count_rows() == 3
    # …and writes: append through the other implementation, new objects, drops.
    lance.write_dataset(data, namespace_client=second, table_id=["team", "t"], mode="append")
    do(second, "create_namespace", id=["team", "sub"])
    do(second, "declare_table", id=["team", "sub", "x"])
    do(second, "drop_table", id=["team", "declared"])

    again = make_namespace(writer, root)
    assert lance.dataset(namespace_client=again, table_id=["team", "t"]).count_rows() == 6
    assert do(again, "list_namespaces", id=["team"]).namespaces == ["sub"]
    assert do(again, "list_tables", id=["team", "sub"]).tables == ["x"]
    assert do(again, "list_tables", id=["team"]).tables == ["t"]


def test_deregistered_root_table_stays_deregistered_in_compatibility_mode(make_namespace, tmp_path):
    """Deviation from the reference (which lets the directory listing bring the table back): a root table
    deregistered through its manifest row also gets ``.lance-deregistered``; registering it again removes it."""
    ns = make_namespace("ours")
    lance.write_dataset(pa.table({"id": [1]}), namespace_client=ns, table_id=["t"], mode="create")
    do(ns, "deregister_table", id=["t"])
    assert call(ns, "table_exists", id=["t"]) == ("error", 4)
    assert call(ns, "deregister_table", id=["t"]) == ("error", 4)
    assert do(ns, "list_tables", id=[]).tables == []
    reference = make_namespace("reference", tmp_path / "ours")
    assert do(reference, "list_tables", id=[]).tables == []  # the reference honours the marker too
    do(ns, "register_table", id=["t"], location="t.lance")
    assert not (tmp_path / "ours" / "t.lance" / ".lance-deregistered").exists()
    assert lance.dataset(namespace_client=ns, table_id=["t"]).count_rows() == 1


def test_manifest_table_is_the_reference_format(make_namespace, tmp_path):
    """Same Arrow schema (field metadata included), data storage version and manifest naming scheme."""
    tables = {}
    for kind in KINDS:
        ns = make_namespace(kind, tmp_path / kind)
        do(ns, "create_namespace", id=["a"], properties={"k": "v"})
        do(ns, "declare_table", id=["a", "t"])
        tables[kind] = lance.dataset(str(tmp_path / kind / "__manifest"))
    ours, reference = tables["ours"], tables["reference"]
    assert ours.schema == reference.schema
    assert ours.schema.field("object_id").metadata == {b"lance-schema:unenforced-primary-key:position": b"0"}
    assert ours.data_storage_version == reference.data_storage_version == "2.2"
    for kind in KINDS:
        names = [p.name for p in (tmp_path / kind / "__manifest" / "_versions").iterdir() if p.suffix == ".manifest"]
        assert names and all(len(name) == len("18446744073709551614.manifest") for name in names)
    rows = {kind: sorted(tables[kind].to_table().to_pylist(), key=lambda r: r["object_id"]) for kind in KINDS}
    for ours_row, reference_row in zip(rows["ours"], rows["reference"], strict=True):
        assert ours_row["object_id"] == reference_row["object_id"]
        assert ours_row["object_type"] == reference_row["object_type"]
        assert ours_row["metadata"] == reference_row["metadata"]
        assert normalize_location(ours_row["location"] or "", tmp_path) == normalize_location(
            reference_row["location"] or "", tmp_path
        )


def test_create_empty_table_declares(make_namespace) -> None:
    """CreateEmptyTable (deprecated in the interface for DeclareTable) declares the table; exist_ok answers the
    existing one; overwrite and per-table storage options are refused, nothing written."""
    ns = make_namespace("ours")
    created = do(ns, "create_empty_table", id=["e"], properties={"k": "v"})
    assert created.location.endswith("/e.lance") and created.properties == {"k": "v"}
    assert do(ns, "describe_table", id=["e"], check_declared=True).is_only_declared is True
    assert do(ns, "create_empty_table", id=["e"], mode="exist_ok").location == created.location
    for fields, error in (
        ({"id": ["e"]}, ln.TableAlreadyExistsError),
        ({"id": ["f"], "mode": "overwrite"}, ln.InvalidInputError),
        ({"id": ["f"], "storage_options": {"aws_region": "x"}}, ln.UnsupportedOperationError),
    ):
        with pytest.raises(error):
            do(ns, "create_empty_table", **fields)
    assert do(ns, "list_tables", id=[]).tables == ["e"]
