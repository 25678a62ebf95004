"""The Lance commits of ``__manifest`` rows: the guarded append, the Update of a repoint, the rewrites.

A pylance ``merge_insert`` fails a concurrent duplicate by joining the new keys against the whole table: 6-10
ms per write at a few thousand rows. An insert whose ids were checked against version N needs only the
guarantee that nobody changed the rows after N: an ``Append`` gives none (pylance rebases it), a ``Merge`` of
"every fragment of N plus the new one" with ``max_retries=0`` fails on any concurrent commit. The data file is
written once; a retry on the next version only commits it again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import lance
import lance_namespace as ln
import pyarrow as pa
from lance.fragment import FragmentMetadata, write_fragments

from airflow_provider_lance.namespace.manifest_rows import rows_without, sql_string
from airflow_provider_lance.namespace.storage import Storage

# Lance manifest protobuf (``lance.table.Manifest``): field 11 is ``max_fragment_id``, the highest fragment id
# the table ever used. pylance does not expose it, and a reused id could fall under an index's fragment bitmap.
_MAX_FRAGMENT_ID_FIELD = 11


def write_rows(
    dataset: lance.LanceDataset, rows: pa.Table, storage_options: dict[str, str] | None
) -> list[FragmentMetadata]:
    """Write ``rows`` as new data files of ``dataset`` (not committed: invisible until :func:`commit_append`)."""
    return write_fragments(
        rows,
        dataset,  # the dataset object, not its URI: a memory:// store exists only in the objects that opened it
        schema=dataset.schema,
        data_storage_version=dataset.data_storage_version,
        storage_options=storage_options,
    )


def commit_append(
    dataset: lance.LanceDataset, fragments: list[FragmentMetadata], storage_options: dict[str, str] | None
) -> lance.LanceDataset:
    """Commit ``fragments`` after every fragment of ``dataset``'s version as exactly the next version; raises
    pylance's commit conflict when another writer committed anything since."""
    _number(dataset, fragments)
    existing = [fragment.metadata for fragment in dataset.get_fragments()]
    return lance.LanceDataset.commit(
        dataset,
        lance.LanceOperation.Merge(existing + fragments, dataset.lance_schema),
        read_version=dataset.version,
        max_retries=0,
        storage_options=storage_options,
    )


def _number(dataset: lance.LanceDataset, fragments: list[FragmentMetadata]) -> None:
    """Give new fragments the ids after every id the table ever used."""
    first_id = max_fragment_id(dataset) + 1
    for offset, fragment in enumerate(fragments):
        fragment.id = first_id + offset


def fragments_holding(
    dataset: lance.LanceDataset,
    object_ids: set[str],
    max_rows: int,
    known: Mapping[str, pa.Table] | None = None,
    check: bool = False,
) -> tuple[list[int], list[FragmentMetadata], pa.Table] | None:
    """How to take the rows of ``object_ids`` out of ``dataset``'s version, newest fragments first: (fragments
    of at most ``max_rows`` rows removed, larger ones with a new deletion vector, the removed fragments' other
    rows to write again); None when some row is in none of them. ``known``: the rows of data files this process
    wrote (:func:`small_fragment_rows`); ``check``: check mode."""
    removed: list[int] = []
    updated: list[FragmentMetadata] = []
    kept: list[pa.Table] = []
    predicate = "object_id IN (" + ", ".join(sql_string(oid) for oid in sorted(object_ids)) + ")"
    remaining = len(object_ids)  # ids are unique in the table: once this many are found, all are
    for fragment in reversed(dataset.get_fragments()):
        if not remaining:
            break
        if fragment.metadata.physical_rows <= max_rows:
            rows = small_fragment_rows(fragment, known or {}, check)
            hits = [at for at, oid in enumerate(rows["object_id"].to_pylist()) if oid in object_ids]
            if hits:
                removed.append(fragment.fragment_id)
                kept.append(rows_without(rows, hits))
                remaining -= len(hits)
            continue
        before = fragment.metadata.num_rows
        after = fragment.delete(predicate)  # unchanged metadata when no row matches
        if after is None:  # every row of it
            removed.append(fragment.fragment_id)
            remaining -= before
        elif after.num_rows < before:
            updated.append(after)
            remaining -= before - after.num_rows
    if remaining:
        return None
    return removed, updated, pa.concat_tables(kept) if kept else dataset.schema.empty_table()


def small_fragment_rows(fragment: lance.LanceFragment, known: Mapping[str, pa.Table], check: bool) -> pa.Table:
    """A small fragment's rows: read, unless it is one data file this process wrote, without deletions (``known``:
    data file path -> the rows written to it; a data file is named by a UUID and never rewritten, so its rows
    are those). A managed commit's repoint takes its row out of the fragment the commit before it wrote: this
    saves opening and reading that file (measured: docs/benchmarks.md, "The managed commit at its floor").
    ``check``: check mode, the rows compared with a read of the file (InternalError on a difference)."""
    files = fragment.metadata.files
    rows = known.get(files[0].path) if len(files) == 1 and fragment.metadata.deletion_file is None else None
    if rows is None or rows.num_rows != fragment.metadata.physical_rows:
        return fragment.to_table()
    if check and not rows.equals(fragment.to_table()):
        raise ln.InternalError(f"__manifest data file {files[0].path}: its rows differ from those written to it")
    return rows


def commit_update(
    dataset: lance.LanceDataset,
    removed: list[int],
    updated: list[FragmentMetadata],
    fragments: list[FragmentMetadata],
    storage_options: dict[str, str] | None,
    inserting: bool = False,
) -> lance.LanceDataset:
    """Remove the fragments ``removed``, replace ``updated`` and add ``fragments``: a Lance *Update*, rebased over
    a compatible concurrent commit (an append of other rows, an Update of other fragments), failing on a guarded
    append or a change of these fragments (the caller retries on the new version).

    ``inserting``: ``fragments`` hold rows inserted after a check against this version. Two such Updates of
    different fragments would both land, rebased one over the other, and a row checked absent by both would be
    inserted twice; so each of them also lists the version's first fragment, unchanged, among its updated ones,
    and Lance fails the later of two Updates of one fragment."""
    if inserting:
        touched = set(removed) | {fragment.id for fragment in updated}
        first = dataset.get_fragments()[:1]
        updated = updated + [f.metadata for f in first if f.fragment_id not in touched]
    return lance.LanceDataset.commit(
        dataset,
        lance.LanceOperation.Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=fragments),
        read_version=dataset.version,
        max_retries=0,
        storage_options=storage_options,
    )


def commit_rewrite(
    dataset: lance.LanceDataset, fragments: list[FragmentMetadata], storage_options: dict[str, str] | None
) -> lance.LanceDataset:
    """Replace every fragment of ``dataset``'s version by ``fragments`` (its rows rewritten) as exactly the next
    version, as the reference writes: an Overwrite, which fails on any concurrent commit (a *Rewrite* would fail
    every guarded append during its long read-and-rewrite). Scalar indices are dropped, as the reference does."""
    return lance.LanceDataset.commit(
        dataset,
        lance.LanceOperation.Overwrite(dataset.schema, fragments),
        read_version=dataset.version,
        max_retries=0,
        storage_options=storage_options,
    )


def commit_compaction(
    dataset: lance.LanceDataset,
    old: list[FragmentMetadata],
    new: list[FragmentMetadata],
    storage_options: dict[str, str] | None,
) -> lance.LanceDataset:
    """Replace the fragments ``old`` by ``new`` (their rows rewritten), the others unchanged, as a Lance
    *Rewrite* with no retries: it fails on a concurrent change of ``old``, and every guarded append (a Merge
    of all fragments) fails on it. The table has no index (see ``maintenance.compact``)."""
    group = lance.LanceOperation.RewriteGroup(old_fragments=old, new_fragments=new)
    return lance.LanceDataset.commit(
        dataset,
        lance.LanceOperation.Rewrite(groups=[group], rewritten_indices=[]),
        read_version=dataset.version,
        max_retries=0,
        storage_options=storage_options,
    )


def data_file_paths(fragments: list[FragmentMetadata]) -> list[str]:
    """The data files (relative to the table's ``data/``) that ``fragments`` wrote."""
    return [data_file.path for fragment in fragments for data_file in fragment.files]


def delete_files(storage: Storage, table: str, fragments: list[FragmentMetadata]) -> None:
    """Delete the data files ``fragments`` wrote into ``table`` (once no version can reference them)."""
    for path in data_file_paths(fragments):
        storage.delete(f"{table}/data/{path}")


def holds(dataset: lance.LanceDataset, fragments: list[FragmentMetadata]) -> bool:
    """Whether ``dataset``'s version references the data files of ``fragments`` (a commit of them landed)."""
    return holds_files(dataset, data_file_paths(fragments))


def holds_files(dataset: lance.LanceDataset, paths: list[str]) -> bool:
    """Whether ``dataset``'s version references any of the data files ``paths`` (relative to ``data/``)."""
    written = set(paths)
    return bool(written) and any(
        data_file.path in written for fragment in dataset.get_fragments() for data_file in fragment.metadata.files
    )


def max_fragment_id(dataset: lance.LanceDataset) -> int:
    """The highest fragment id the version's table ever used (-1 for none)."""
    for number, value in _varint_fields(dataset._ds.serialized_manifest()):
        if number == _MAX_FRAGMENT_ID_FIELD:
            return value
    return max((fragment.fragment_id for fragment in dataset.get_fragments()), default=-1)


def _varint_fields(message: bytes) -> Iterator[tuple[int, int]]:
    """The top-level varint fields of a protobuf message (other wire types are skipped)."""
    position = 0

    def varint() -> int:
        nonlocal position
        value = shift = 0
        while True:
            byte = message[position]
            position += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while position < len(message):
        key = varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            yield number, varint()
        elif wire_type == 2:
            length = varint()
            position += length
        elif wire_type in (1, 5):
            position += 8 if wire_type == 1 else 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type} in a Lance manifest")
