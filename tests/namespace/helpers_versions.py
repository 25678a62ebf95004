"""Shared helpers for the table-version tests (test_versions, test_crash, test_concurrency).

Everything a child process runs lives here (not in a test module), so that ``multiprocessing``'s "spawn" start
method can import it by name: ``tests.namespace.helpers_versions``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pyarrow as pa

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.namespace.identifiers import manifest_name
from airflow_provider_lance.namespace.manifest_rows import TABLE_VERSION
from airflow_provider_lance.staging import StagingNamespace, stage_data

VERSION_METADATA_KEYS = {"manifest_path", "manifest_size", "e_tag", "naming_scheme", "timestamp_millis"}


# -- building blocks -----------------------------------------------------------------------------------------
def make_ns(root: str | Path, managed: bool) -> DirectoryNamespace:
    return DirectoryNamespace(root=str(root), table_version_management="true" if managed else "false")


def rows(n: int, start: int = 0) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": [f"r{i}" for i in ids]})


def location(ns: ln.LanceNamespace, table_id: Sequence[str]) -> Path:
    """The table directory as a local path."""
    uri = ns.describe_table(ln.DescribeTableRequest(id=list(table_id))).location
    return Path(uri.removeprefix("file://"))


def version_rows(ns: DirectoryNamespace) -> dict[str, dict[str, Any]]:
    """object_id → metadata of every ``table_version`` row of ``__manifest``."""
    return {r.object_id: r.metadata or {} for r in ns.manifest.query() if r.object_type == TABLE_VERSION}


def versions(ns: ln.LanceNamespace, table_id: Sequence[str], **kwargs: Any) -> list[int]:
    response = ns.list_table_versions(ln.ListTableVersionsRequest(id=list(table_id), **kwargs))
    return [v.version for v in response.versions]


def read(ns: ln.LanceNamespace, table_id: Sequence[str], version: int | None = None) -> lance.LanceDataset:
    return lance.dataset(namespace_client=ns, table_id=list(table_id), version=version)


def staged_files(table_dir: Path) -> list[str]:
    """Staged manifests (``<final>-<uuid>``) left in a table's ``_versions/``."""
    directory = table_dir / "_versions"
    return sorted(p.name for p in directory.iterdir() if ".manifest-" in p.name) if directory.exists() else []


def stage(ns: DirectoryNamespace, tables: dict[tuple[str, ...], pa.Table]) -> list[ln.CreateTableVersionEntry]:
    """Write and stage one new version per table (nothing becomes visible): the recording wrapper of
    ``staging.py`` answers pylance's create_table_version without committing."""
    staging = StagingNamespace(ns)
    for table_id, data in tables.items():
        stage_data(ns, list(table_id), data, mode="append", staging=staging)
    return staging.entries


def batch(ns: ln.LanceNamespace, entries: Sequence[ln.CreateTableVersionEntry]) -> list[ln.TableVersion]:
    request = ln.BatchCreateTableVersionsRequest(entries=list(entries))
    return ns.batch_create_table_versions(request).versions


def copy_staged(table_dir: Path, source_dir: Path, version: int, scheme: str = "V2") -> str:
    """Stage ``version`` in ``table_dir`` by copying the bytes of ``source_dir``'s final manifest of that
    version to ``_versions/<final name>-<uuid>``; returns the staged path (absolute local path)."""
    name = manifest_name(version, scheme)
    staged = table_dir / "_versions" / f"{name}-{uuid.uuid4()}"
    staged.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source_dir / "_versions" / name, staged)
    return str(staged)


def build_template(template: Path, count: int) -> None:
    """A plain Lance dataset with versions 1..count (one row per version), V2 manifest names."""
    lance.write_dataset(rows(1, 0), str(template), mode="create", enable_v2_manifest_paths=True)
    for i in range(1, count):
        lance.write_dataset(rows(1, i), str(template), mode="append")


def adopt_template(table_dir: Path, template: Path) -> None:
    """Copy everything but ``_versions/`` of the template into the table, so that the template's manifests
    (which reference data files relatively) are valid manifests of this table."""
    for child in template.iterdir():
        if child.name != "_versions":
            shutil.copytree(child, table_dir / child.name, dirs_exist_ok=True)


def describe_error(error: BaseException) -> str:
    """``<class>:<code>`` for a namespace error, ``<class>`` otherwise (what children report)."""
    return f"{type(error).__name__}:{getattr(error, 'code', '')}"


# -- child processes: concurrency ----------------------------------------------------------------------------
def race_create_namespace(root: str, name: str, barrier: Any) -> tuple[str, str]:
    ns = DirectoryNamespace(root=root)
    barrier.wait()
    try:
        ns.create_namespace(ln.CreateNamespaceRequest(id=[name]))
        return "ok", ""
    except Exception as error:
        return describe_error(error), str(error)[:300]


def race_declare_table(root: str, table_id: list[str], barrier: Any) -> tuple[str, str]:
    ns = DirectoryNamespace(root=root)
    barrier.wait()
    try:
        ns.declare_table(ln.DeclareTableRequest(id=table_id))
        return "ok", ""
    except Exception as error:
        return describe_error(error), str(error)[:300]


def race_commit_version(
    root: str, table_id: list[str], table_dir: str, template: str, version: int, barrier: Any
) -> tuple[str, str, str | None, float]:
    """Stage ``version`` (a byte copy, before the barrier), then race create_table_version on it. Returns the
    outcome, the message, the e-tag the winner was answered with (that of the final manifest, to match it with
    the row) and the call's duration."""
    ns = DirectoryNamespace(root=root)
    staged = copy_staged(Path(table_dir), Path(template), version)
    e_tag = ns.storage.info(ns.storage.key_of(staged)).e_tag
    barrier.wait()
    started = time.perf_counter()
    try:
        response = ns.create_table_version(
            ln.CreateTableVersionRequest(id=table_id, version=version, manifest_path=staged)
        )
        return "ok", "", response.version.e_tag, time.perf_counter() - started
    except Exception as error:
        return describe_error(error), str(error)[:300], e_tag, time.perf_counter() - started


def race_append(root: str, table_id: list[str], worker: int, appends: int, barrier: Any) -> tuple[int, int, list[str]]:
    """Append ``appends`` batches of ``worker + 1`` rows through the namespace with pylance. Returns the rows
    written, how many create_table_version calls this process lost (and pylance rebased), and errors."""
    ns = DirectoryNamespace(root=root)
    lost = 0
    original = ns.create_table_version

    def counting(request: Any = None) -> Any:
        nonlocal lost
        try:
            return original(request)
        except ln.ConcurrentModificationError:
            lost += 1
            raise

    ns.create_table_version = counting  # type: ignore[method-assign]
    barrier.wait()
    written, errors = 0, []
    for i in range(appends):
        data = rows(worker + 1, 1_000_000 * (worker + 1) + 1000 * i)
        try:
            lance.write_dataset(data, namespace_client=ns, table_id=table_id, mode="append")
            written += data.num_rows
        except Exception as error:
            errors.append(f"{describe_error(error)} {str(error)[:300]}")
    return written, lost, errors


def pool_worker(barrier: Any, commands: Any, results: Any) -> None:
    """A long-lived spawned worker: runs ``(function name, kwargs)`` commands from its queue (the shared
    barrier is passed to every function) until it receives None. Spawning costs ~1.5 s of imports per
    process, so the concurrency tests share one pool."""
    results.put(("ready", os.getpid()))
    while True:
        command = commands.get()
        if command is None:
            return
        name, kwargs = command
        try:
            results.put(("done", globals()[name](barrier=barrier, **kwargs)))
        except BaseException as error:  # report, never hang the parent
            results.put(("crashed", f"{describe_error(error)} {error}"))
            with contextlib.suppress(Exception):
                barrier.abort()


# -- child processes: crash injection ------------------------------------------------------------------------
CRASH_EXIT_CODE = 17
CRASH_POINTS = ("after_row_insert", "after_copy", "before_repoint")


def _exit() -> None:
    os._exit(CRASH_EXIT_CODE)


def install_crash(point: str) -> None:
    """Make this process die (``os._exit``, no cleanup) at one step of the managed commit protocol
    (seed 003 "External Store Commit"), by patching the engine's classes in this process only:

    * ``after_row_insert``: right after the ``table_version`` rows were merge-inserted (the commit point);
    * ``after_copy``: right after the first staged manifest was copied to its final name (before the staged
      file is deleted, so the other tables of a batch are still only staged);
    * ``before_repoint``: after every copy, before the rows are repointed at the final manifests (a batch) or
      their repoint is deferred to the next insert (one version): the process never repoints them.
    """
    from airflow_provider_lance.namespace.manifest import ManifestTable
    from airflow_provider_lance.namespace.storage import Storage

    if point == "after_row_insert":
        insert = ManifestTable.insert

        def insert_then_die(self: ManifestTable, new_rows: list, *args: Any, **kwargs: Any) -> None:
            insert(self, new_rows, *args, **kwargs)
            if any(row.object_type == TABLE_VERSION for row in new_rows):
                _exit()

        ManifestTable.insert = insert_then_die  # type: ignore[method-assign]
    elif point == "after_copy":
        delete = Storage.delete

        def die_before_staged_delete(self: Storage, key: str) -> None:
            if ".manifest-" in key.rsplit("/", 1)[-1]:
                _exit()
            delete(self, key)

        Storage.delete = die_before_staged_delete  # type: ignore[method-assign]
    elif point == "before_repoint":
        from airflow_provider_lance.namespace import commit

        def die(*args: object) -> None:
            _exit()

        commit.repoint = die  # type: ignore[assignment]  # the committer's step (4) (a batch)
        commit.defer_repoint = die  # type: ignore[assignment]  # or its deferral (one version)
    else:
        raise ValueError(point)


def crash_batch(root: str, entries_json: str, point: str) -> None:
    """Child: commit a batch of staged entries, dying at ``point``."""
    from airflow_provider_lance.staging import entries_from_json

    install_crash(point)
    ns = DirectoryNamespace(root=root)
    batch(ns, entries_from_json(entries_json))
    os._exit(0)  # the crash point was never reached


def crash_append(root: str, table_id: list[str], point: str) -> None:
    """Child: append one row through the namespace with pylance, dying at ``point``."""
    install_crash(point)
    ns = DirectoryNamespace(root=root)
    lance.write_dataset(rows(1, 999), namespace_client=ns, table_id=table_id, mode="append")
    os._exit(0)


def append_and_exit(root: str, table_id: list[str]) -> None:
    """Child: append one row through the namespace with pylance and exit normally (its repoint is deferred)."""
    ns = DirectoryNamespace(root=root)
    lance.write_dataset(rows(1, 999), namespace_client=ns, table_id=table_id, mode="append")


def crash_after_staging(root: str, table_ids: list[list[str]], entries_file: str) -> None:
    """Child: stage one version per table, save the entries, then die before any commit."""
    from airflow_provider_lance.staging import write_entries

    ns = DirectoryNamespace(root=root)
    entries = stage(ns, {tuple(t): rows(5, 100) for t in table_ids})
    write_entries(entries, entries_file)
    _exit()


def run_child(target: Callable[..., Any], *args: Any, timeout: float = 120) -> int:
    """Run ``target(*args)`` in a spawned process and return its exit code."""
    import multiprocessing

    process = multiprocessing.get_context("spawn").Process(target=target, args=args)
    process.start()
    process.join(timeout)
    if process.is_alive():
        process.kill()
        process.join()
        raise AssertionError(f"{target.__name__} did not finish within {timeout}s")
    return process.exitcode
