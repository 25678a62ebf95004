"""Fault injection on local disk: every storage / ``__manifest`` request of an operation is made to fail, one
at a time, before it takes effect (a refused request) and, for writes, after it took effect (a lost
response). After each fault:

* the error the caller sees is a ``lance_namespace.LanceNamespaceError`` (never a raw OSError);
* what the namespace shows is consistent: a version or table is either fully visible (pylance reads it
  through the namespace) or not at all; a batch shows all tables at the new version or none;
* a retry of the same operation succeeds, or reports the already-done state (TableAlreadyExists after a
  declare that passed its commit point, ConcurrentModification after a committed version, ...);
* after the retry the final state is exactly the one of a fault-free run.

The catalog of each scenario is built once, saved, and restored at the same path before every case (table
version rows hold object paths, so the path must not change).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from lance_namespace_urllib3_client.models.version_range import VersionRange
from s3fs.errors import translate_boto_error

from airflow_provider_lance.namespace import DirectoryNamespace, fragments
from airflow_provider_lance.namespace.manifest_rows import sql_string
from tests.fault_storage import FaultInjector, count_rows, rows, stage, visible_version

MANAGED = {"table_version_management": "true"}
STATS: dict[str, dict[str, int]] = {}


@dataclass
class Scenario:
    name: str
    properties: dict[str, str]
    build: Callable[[DirectoryNamespace], dict[str, Any]]
    operation: Callable[[DirectoryNamespace, dict[str, Any]], Any]
    done_errors: tuple[type[Exception], ...]  # what a retry may answer once the first attempt went through
    check_between: Callable[[DirectoryNamespace, dict[str, Any]], None]
    check_final: Callable[[DirectoryNamespace, dict[str, Any]], None]
    failures: list[str] = field(default_factory=list)


# -- declare ------------------------------------------------------------------------------------------------
def _build_declare(ns: DirectoryNamespace) -> dict[str, Any]:
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    ns.declare_table(ln.DeclareTableRequest(id=["db", "existing"]))
    return {}


def _declare(table_id: list[str]) -> Callable[[DirectoryNamespace, dict[str, Any]], Any]:
    return lambda ns, ctx: ns.declare_table(ln.DeclareTableRequest(id=table_id, properties={"p": "1"}))


def _declare_between(table_id: list[str]) -> Callable[[DirectoryNamespace, dict[str, Any]], None]:
    def check(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
        listed = table_id[-1] in ns.list_tables(ln.ListTablesRequest(id=table_id[:-1])).tables
        try:
            ns.table_exists(ln.TableExistsRequest(id=table_id))
            exists = True
        except ln.TableNotFoundError:
            exists = False
        assert listed == exists, f"listed={listed} but exists={exists}"
        if exists:
            ns.describe_table(ln.DescribeTableRequest(id=table_id))
        assert len(_rows(ns, "$".join(table_id))) <= 1

    return check


def _declare_final(table_id: list[str]) -> Callable[[DirectoryNamespace, dict[str, Any]], None]:
    def check(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
        ns.table_exists(ln.TableExistsRequest(id=table_id))
        assert ns.list_tables(ln.ListTablesRequest(id=table_id[:-1])).tables.count(table_id[-1]) == 1
        # a root table in compatibility mode may be declared by its directory alone (as the reference does):
        # a fault after the marker was written and before the row leaves exactly that
        found = len(_rows(ns, "$".join(table_id)))
        assert found == 1 if len(table_id) > 1 else found <= 1, found
        assert ns.describe_table(ln.DescribeTableRequest(id=table_id, check_declared=True)).is_only_declared
        assert "existing" in ns.list_tables(ln.ListTablesRequest(id=["db"])).tables

    return check


# -- create_table_version (managed) -------------------------------------------------------------------------
def _build_version(ns: DirectoryNamespace) -> dict[str, Any]:
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    lance.write_dataset(rows(3), namespace_client=ns, table_id=["db", "t"], mode="create")
    return {"entry": stage(ns, ["db", "t"], rows(2, 3))}


def _create_version(ns: DirectoryNamespace, ctx: dict[str, Any]) -> Any:
    return ns.create_table_version(ln.CreateTableVersionRequest(**ctx["entry"].model_dump(exclude_none=True)))


def _version_between(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    version = visible_version(ns, ["db", "t"])
    assert version in (1, 2), version
    assert count_rows(ns, ["db", "t"]) == {1: 3, 2: 5}[version]


def _version_final(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    assert visible_version(ns, ["db", "t"]) == 2
    assert count_rows(ns, ["db", "t"]) == 5
    versions = ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "t"])).versions
    assert [v.version for v in versions] == [1, 2]
    assert not any("manifest-" in v.manifest_path for v in versions), "a row still points at a staged manifest"


# -- batch_create_table_versions (managed, 3 tables) --------------------------------------------------------
BATCH = [["db", "a"], ["db", "b"], ["db", "c"]]


def _build_batch(ns: DirectoryNamespace) -> dict[str, Any]:
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    for table in BATCH:
        lance.write_dataset(rows(2), namespace_client=ns, table_id=table, mode="create")
    return {"entries": [stage(ns, table, rows(3, 10)) for table in BATCH]}


def _batch_create(ns: DirectoryNamespace, ctx: dict[str, Any]) -> Any:
    return ns.batch_create_table_versions(ln.BatchCreateTableVersionsRequest(entries=ctx["entries"]))


def _batch_between(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    versions = [visible_version(ns, table) for table in BATCH]
    assert versions in ([1, 1, 1], [2, 2, 2]), f"half-visible batch: {versions}"
    expected = 2 if versions[0] == 1 else 5
    assert [count_rows(ns, table) for table in BATCH] == [expected] * 3


def _batch_final(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    assert [visible_version(ns, table) for table in BATCH] == [2, 2, 2]
    assert [count_rows(ns, table) for table in BATCH] == [5, 5, 5]


# -- batch_delete_table_versions (managed) ------------------------------------------------------------------
def _build_history(ns: DirectoryNamespace) -> dict[str, Any]:
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    lance.write_dataset(rows(1), namespace_client=ns, table_id=["db", "h"], mode="create")
    for start in (1, 2, 3):
        lance.write_dataset(rows(1, start), namespace_client=ns, table_id=["db", "h"], mode="append")
    return {}


def _batch_delete(ns: DirectoryNamespace, ctx: dict[str, Any]) -> Any:
    ranges = [VersionRange(start_version=1, end_version=3)]
    return ns.batch_delete_table_versions(ln.BatchDeleteTableVersionsRequest(id=["db", "h"], ranges=ranges))


def _delete_between(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    assert visible_version(ns, ["db", "h"]) == 4
    assert count_rows(ns, ["db", "h"]) == 4
    listed = [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "h"])).versions]
    assert {3, 4} <= set(listed) <= {1, 2, 3, 4}, listed


def _delete_final(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    listed = [v.version for v in ns.list_table_versions(ln.ListTableVersionsRequest(id=["db", "h"])).versions]
    assert listed == [3, 4], listed
    for version in (1, 2):
        with pytest.raises(ln.TableVersionNotFoundError):
            ns.describe_table_version(ln.DescribeTableVersionRequest(id=["db", "h"], version=version))
    assert count_rows(ns, ["db", "h"]) == 4
    assert lance.dataset(namespace_client=ns, table_id=["db", "h"], version=3).count_rows() == 3


# -- drop_table (managed, with versions) --------------------------------------------------------------------
def _drop(ns: DirectoryNamespace, ctx: dict[str, Any]) -> Any:
    return ns.drop_table(ln.DropTableRequest(id=["db", "h"]))


def _drop_between(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    try:
        ns.describe_table(ln.DescribeTableRequest(id=["db", "h"]))
    except ln.TableNotFoundError:
        assert "h" not in ns.list_tables(ln.ListTablesRequest(id=["db"])).tables
        assert _rows(ns, "db$h", prefix=True) == []
        return
    assert count_rows(ns, ["db", "h"]) == 4  # still there: then completely


def _drop_final(ns: DirectoryNamespace, ctx: dict[str, Any]) -> None:
    with pytest.raises(ln.TableNotFoundError):
        ns.table_exists(ln.TableExistsRequest(id=["db", "h"]))
    assert ns.list_tables(ln.ListTablesRequest(id=["db"])).tables == []
    assert _rows(ns, "db$h", prefix=True) == []
    lance.write_dataset(rows(2), namespace_client=ns, table_id=["db", "h"], mode="create")  # the name is free
    assert count_rows(ns, ["db", "h"]) == 2


def _rows(ns: DirectoryNamespace, object_id: str, prefix: bool = False) -> list:
    if prefix:
        where = f"object_id = {sql_string(object_id)} OR starts_with(object_id, {sql_string(object_id + '$')})"
    else:
        where = f"object_id = {sql_string(object_id)}"
    return ns.manifest.query(where)


SCENARIOS = [
    Scenario(
        "declare-child",
        {},
        _build_declare,
        _declare(["db", "t"]),
        (ln.TableAlreadyExistsError,),
        _declare_between(["db", "t"]),
        _declare_final(["db", "t"]),
    ),
    Scenario(
        "declare-root",
        {},
        _build_declare,
        _declare(["t"]),
        (ln.TableAlreadyExistsError,),
        _declare_between(["t"]),
        _declare_final(["t"]),
    ),
    Scenario(
        "create-version-managed",
        MANAGED,
        _build_version,
        _create_version,
        (ln.ConcurrentModificationError,),
        _version_between,
        _version_final,
    ),
    Scenario(
        "batch-create-3-managed",
        MANAGED,
        _build_batch,
        _batch_create,
        (ln.ConcurrentModificationError,),
        _batch_between,
        _batch_final,
    ),
    Scenario(
        "batch-delete-managed",
        MANAGED,
        _build_history,
        _batch_delete,
        (ln.TableVersionNotFoundError,),
        _delete_between,
        _delete_final,
    ),
    Scenario(
        "drop-table-managed",
        MANAGED,
        _build_history,
        _drop,
        (ln.TableNotFoundError,),
        _drop_between,
        _drop_final,
    ),
]


def _restore(saved: Path, root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(saved, root, symlinks=True)


def _run_case(scenario: Scenario, root: Path, ctx: dict[str, Any], fail_at: int, mode: str) -> str | None:
    """One fault; returns a failure description or None."""
    ns = DirectoryNamespace(root=str(root), **scenario.properties)
    injector = FaultInjector(fail_at=fail_at, mode=mode).install(ns)
    try:
        scenario.operation(ns, ctx)
        first_error: Exception | None = None
    except Exception as error:
        first_error = error
    injector.enabled = False
    where = f"{scenario.name} fault #{fail_at} {injector.fired or mode}"
    if injector.fired is None:
        return None
    if first_error is not None and not isinstance(first_error, ln.LanceNamespaceError):
        return f"{where}: raw {type(first_error).__name__}: {first_error}"
    try:
        scenario.check_between(DirectoryNamespace(root=str(root), **scenario.properties), ctx)
    except Exception as error:
        return f"{where}: inconsistent after the fault: {type(error).__name__}: {error}"
    if first_error is not None:
        try:
            scenario.operation(ns, ctx)  # the retry, on the same instance
        except scenario.done_errors:
            pass
        except Exception as error:
            return f"{where}: retry failed: {type(error).__name__}: {error}"
    try:
        scenario.check_final(DirectoryNamespace(root=str(root), **scenario.properties), ctx)
    except Exception as error:
        return f"{where}: wrong final state: {type(error).__name__}: {error}"
    return None


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault_sweep(scenario: Scenario, tmp_path: Path) -> None:
    root = tmp_path / "root"
    saved = tmp_path / "saved"
    root.mkdir()
    ctx = scenario.build(DirectoryNamespace(root=str(root), **scenario.properties))
    shutil.copytree(root, saved, symlinks=True)

    _restore(saved, root)
    # dry run: count the requests of a fault-free run (and check the fault-free final state)
    ns = DirectoryNamespace(root=str(root), **scenario.properties)
    counter = FaultInjector().install(ns)
    scenario.operation(ns, ctx)
    scenario.check_final(DirectoryNamespace(root=str(root), **scenario.properties), ctx)
    cases = [(n, "before") for n in range(1, len(counter.calls) + 1)]
    cases += [(n, "after") for n in counter.mutating_positions()]

    failures = []
    for fail_at, mode in cases:
        _restore(saved, root)
        problem = _run_case(scenario, root, ctx, fail_at, mode)
        if problem:
            failures.append(problem)
    STATS[scenario.name] = {"requests": len(counter.calls), "cases": len(cases), "failures": len(failures)}
    print(f"\n{scenario.name}: {len(counter.calls)} requests, {len(cases)} faults injected, {len(failures)} failed")
    assert not failures, "\n".join(failures[:20])


def _s3_answer(code: str, message: str) -> Exception:
    """What s3fs raises for an S3 error answer (after its retries)."""
    answer = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": 500}}
    return translate_boto_error(ClientError(answer, "PutObject"))


TRANSIENT = {
    "unanswered": lambda: EndpointConnectionError(endpoint_url="http://127.0.0.1:9/unanswered"),
    "internal-error": lambda: _s3_answer("InternalError", "We encountered an internal error. Please try again."),
    "slow-down": lambda: _s3_answer("SlowDown", "Please reduce your request rate."),
}


@pytest.mark.parametrize("failing", ["storage.copy_if_not_exists", "fragments.commit_update"])
@pytest.mark.parametrize("fault", list(TRANSIENT))
def test_a_store_that_stops_answering_after_the_commit_point_does_not_fail_the_batch(
    tmp_path: Path, failing: str, fault: str
) -> None:
    """After the commit point the versions are committed: a copy or repoint that the store does not answer,
    or answers with a 500 or a throttle (a transient error, after the client's retries), must not tell the
    caller that nothing was committed. The batch answers its versions; the next call touching a table
    finishes what was left staged."""
    ns = DirectoryNamespace(root=str(tmp_path), **MANAGED)
    ctx = _build_batch(ns)
    target, _, method = failing.partition(".")
    holder = ns.storage if target == "storage" else fragments  # the commit of the repoint (step 4)
    original = getattr(holder, method)

    def unanswered(*args: Any, **kwargs: Any) -> Any:
        raise TRANSIENT[fault]()

    setattr(holder, method, unanswered)
    try:
        response = _batch_create(ns, ctx)
    finally:
        setattr(holder, method, original)
    assert [v.version for v in response.versions] == [2, 2, 2]
    left_staged = [  # the copies failed (the answer names the staged manifests) or the repointing did (the rows)
        path
        for path in [v.manifest_path for v in response.versions]
        + [row.metadata["manifest_path"] for row in ns.manifest.query("object_type = 'table_version'")]
        if "manifest-" in path
    ]
    assert left_staged, "the fault left no version staged: the test injected nothing"
    _batch_final(DirectoryNamespace(root=str(tmp_path), **MANAGED), ctx)
    for table in BATCH:  # finished by the reads above: path-based readers see version 2
        assert lance.dataset(str(tmp_path / ns.manifest.get("$".join(table)).location)).version == 2
