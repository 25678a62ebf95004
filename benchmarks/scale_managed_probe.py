"""One engine on one large managed-mode catalog, in a process of its own (the child of
``benchmarks/scale_managed.py``).

``python -m benchmarks.scale_managed_probe`` reads a job (JSON on stdin: engine, root, tables, versions,
repetitions, appends, page size) and writes what it measured (JSON on stdout): the open (construct + first
DescribeTable) and the p50 of each operation on varying tables of ``bench``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from benchmarks.scale_probe import timed

NAMESPACE = "bench"  # benchmarks.catalog.NAMESPACE (not imported: it would load our engine into both probes)
APPEND_SEED = 41  # the walk of the tables that get new versions (scale_managed.reset relinks them)


def pick_index(i: int, tables: int, seed: int) -> int:
    """A varying table of ``bench`` for repetition ``i`` (each operation walks with its own ``seed``)."""
    return (i * 7919 + seed) % tables


def probe(job: dict[str, Any]) -> dict[str, Any]:
    """Open the catalog, answer once, then time each operation.

    :param job: ``engine`` (ours / reference), ``root``, ``tables``, ``versions``, ``reps``, ``appends``,
        ``page``.
    """
    import lance
    import lance_namespace as ln
    import pyarrow as pa

    from airflow_provider_lance.hooks.lance import LanceHook

    if job["engine"] == "ours":
        from airflow_provider_lance.namespace import DirectoryNamespace

        def make() -> Any:
            return DirectoryNamespace(root=job["root"], table_version_management="true")
    else:
        from lance.namespace import DirectoryNamespace as Reference

        def make() -> Any:
            return Reference(root=job["root"], table_version_tracking_enabled="true")

    tables, versions, reps = job["tables"], job["versions"], job["reps"]
    as_dict = job["engine"] != "ours"  # the reference's version methods take plain dicts

    def table(i: int, seed: int) -> list[str]:
        return [NAMESPACE, f"t{pick_index(i, tables, seed)}"]

    started = time.perf_counter()
    namespace = make()
    first = namespace.describe_table(ln.DescribeTableRequest(id=table(0, 1)))
    open_ms = (time.perf_counter() - started) * 1000
    assert first.location, "the first describe has no location"
    hook = LanceHook()
    hook.__dict__["namespace"] = namespace  # the sensor's code path, no Airflow connection

    def describe(i: int) -> None:
        assert namespace.describe_table(ln.DescribeTableRequest(id=table(i, 13))).location

    def exists(i: int) -> None:
        namespace.table_exists(ln.TableExistsRequest(id=table(i, 29)))

    def describe_version(i: int, seed: int, version: int | None) -> None:
        request = ln.DescribeTableVersionRequest(id=table(i, seed), version=version)
        answer = namespace.describe_table_version(request.model_dump(exclude_none=True) if as_dict else request)
        found = answer["version"]["version"] if isinstance(answer, dict) else answer.version.version
        assert found == (version or versions), f"version {found}, expected {version or versions}"

    def page(i: int) -> None:
        request = ln.ListTableVersionsRequest(id=table(i, 53), limit=job["page"], descending=True)
        listed = namespace.list_table_versions(request).versions
        assert [v.version for v in listed] == list(range(versions, max(0, versions - job["page"]), -1))

    def poke(i: int) -> None:
        assert hook.check_table_version(table(i, 71), min_version=1) == (True, versions)

    def append(i: int) -> None:
        lance.write_dataset(
            pa.table({"x": [i]}), namespace_client=namespace, table_id=table(i, APPEND_SEED), mode="append"
        )

    operations = {
        "describe_table": timed(describe, reps),
        "table_exists": timed(exists, reps),
        "describe_table_version latest": timed(lambda i: describe_version(i, 31, None), reps),
        "describe_table_version old": timed(
            lambda i: describe_version(i, 37, 1 + (i * 61) % max(1, versions - 1)), reps
        ),
        "list_table_versions page": timed(page, reps),
        "version sensor poke": timed(poke, reps),
        "new version": timed(append, job["appends"]),
    }
    return {"open_ms": open_ms, "operations": operations}


if __name__ == "__main__":
    json.dump(probe(json.load(sys.stdin)), sys.stdout)
