"""Stage new table versions with pylance without committing them.

A pipeline that writes several tables wants all of them to become visible at once. This package writes the
data files and a *staged* manifest (``_versions/<final name>-<uuid>``) for each table and returns, per
table, a :class:`lance_namespace.CreateTableVersionEntry` describing it. Nothing is visible to readers until
the entries are committed with ``batch_create_table_versions`` (atomic when the namespace manages table
versions), which can happen in another process: :func:`write_entries` / :func:`read_entries` move them as
one plain JSON document::

    {"entries": [{"id": ["ns", "t"], "version": 2, "manifest_path": "...", ...}, ...]}

Modules: :mod:`.namespace` (:class:`StagingNamespace`, the wrapper that records instead of committing),
:mod:`.stage` (:func:`prepare_target`, :func:`stage_data`, :func:`stage_fragments`), :mod:`.entries` (the
JSON entries document and :func:`commit_entries`), :mod:`.runs` (what a pipeline run already committed).

Caveats:

* ``manifest_path`` is kept exactly as pylance reports it. For object stores it is a path without a scheme
  (``bucket/prefix/t.lance/_versions/...``); the committing namespace resolves it against its own store.
* pylance still updates ``_versions/latest_version_hint.json`` to the staged version number. pylance readers
  verify the hint (and fall back to the real latest manifest), but nothing else should trust that file.
* Staged manifests and data files of entries that are never committed stay on storage until a cleanup removes
  unreferenced files.

This package is a client of any ``lance_namespace.LanceNamespace`` (the provider's engine or another) and
does not import Airflow.
"""

from __future__ import annotations

from airflow_provider_lance.staging.entries import (
    ENTRIES_KEY,
    EntryParser,
    commit_entries,
    entries_from_json,
    entries_to_document,
    entries_to_json,
    read_entries,
    write_entries,
)
from airflow_provider_lance.staging.namespace import StagingNamespace, table_id_key
from airflow_provider_lance.staging.runs import RUN_ID_METADATA, committed_by_run, committed_entry
from airflow_provider_lance.staging.stage import (
    AUDIT_VERSION_METADATA,
    StageMode,
    StagingTarget,
    fragment_from_json,
    fragment_to_json,
    latest_version,
    prepare_target,
    stage_data,
    stage_fragments,
    stage_restore,
    staged_dataset,
)

__all__ = [
    "AUDIT_VERSION_METADATA",
    "ENTRIES_KEY",
    "RUN_ID_METADATA",
    "EntryParser",
    "StageMode",
    "StagingNamespace",
    "StagingTarget",
    "commit_entries",
    "committed_by_run",
    "committed_entry",
    "entries_from_json",
    "entries_to_document",
    "entries_to_json",
    "fragment_from_json",
    "fragment_to_json",
    "latest_version",
    "prepare_target",
    "read_entries",
    "stage_data",
    "stage_fragments",
    "stage_restore",
    "staged_dataset",
    "table_id_key",
    "write_entries",
]
