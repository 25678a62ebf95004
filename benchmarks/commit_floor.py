"""The floor of a managed commit (issue 42), measured with pylance alone.

Seed 003 makes a version's ``table_version`` row in ``__manifest`` its commit point. The reference in its
tracking mode (``table_version_tracking_enabled=true``) writes no row: a put-if-not-exists copy of the staged
manifest commits its version. So a managed commit of ours costs, by the protocol, at least the reference's own
work plus one guarded append of one row to ``__manifest``; everything above that is ours to cut.

:class:`CommitFloor` makes that append the way our engine makes its guarded append (a one-row data file written
with ``write_fragments``, then every fragment of the version plus the new one committed as exactly the next
version: a Lance ``Merge`` with ``max_retries=0``), on a Lance dataset of its own that starts as a copy of our
``__manifest`` (same schema, same rows, same data storage version) and grows by one row per append, as ours does.
No code of our engine runs in it, so no change of ours can lower it: in a benchmark's interleaved turn, the
reference's time plus this append's is the floor of ours.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
from lance.fragment import write_fragments

# Appends between two compactions of the floor's dataset (made untimed, between turns): our ``__manifest``'s
# maintenance default (``manifest_maintenance_every``), so that both commit over a handful of fragments.
COMPACT_EVERY = 8


class CommitFloor:
    """One guarded append of a ``table_version`` row at a time, into a copy of a ``__manifest``.

    :param manifest_uri: the ``__manifest`` to copy (ours, at the point where the timed appends start).
    :param uri: where the floor's dataset is written (a new location).
    :param storage_options: pylance's storage options for both (None for local disk).
    """

    def __init__(self, manifest_uri: str, uri: str, storage_options: dict[str, str] | None = None) -> None:
        source = lance.dataset(manifest_uri, storage_options=storage_options)
        rows = source.to_table()
        versions = rows.filter(pc.equal(rows["object_type"], "table_version"))
        if not versions.num_rows:
            raise ValueError(f"{manifest_uri} holds no table_version row to model the floor's rows on")
        last = versions.slice(versions.num_rows - 1, 1).to_pylist()  # a real row: the same columns and sizes
        self._row = pa.Table.from_pylist(last, schema=rows.schema)  # its own buffers, as the engine's rows have
        self._options = storage_options
        self.dataset = lance.write_dataset(
            rows,
            uri,
            mode="create",
            data_storage_version=source.data_storage_version,
            enable_v2_manifest_paths=True,
            storage_options=storage_options,
        )
        self._next_id = _next_fragment_id(self.dataset)
        self.appends = 0

    def append(self, object_id: str) -> None:
        """The timed step: the row ``object_id`` appended as exactly the next version (fails on any concurrent
        commit, as ours does).

        :param object_id: the new row's id (``<table id>$<version>``).
        """
        row = self._row.set_column(0, self._row.schema.field(0), pa.array([object_id], pa.string()))
        written = write_fragments(
            row,
            self.dataset,
            schema=self.dataset.schema,
            data_storage_version=self.dataset.data_storage_version,
            storage_options=self._options,
        )
        for fragment in written:
            fragment.id = self._next_id
            self._next_id += 1
        existing = [fragment.metadata for fragment in self.dataset.get_fragments()]
        self.dataset = lance.LanceDataset.commit(
            self.dataset,
            lance.LanceOperation.Merge(existing + written, self.dataset.lance_schema),
            read_version=self.dataset.version,
            max_retries=0,
            storage_options=self._options,
        )
        self.appends += 1

    def maintain(self) -> None:
        """Untimed, before an append: compact the fragments every ``COMPACT_EVERY`` appends (Lance's own
        compaction; ours pays its compactions inside its timed calls)."""
        if self.appends % COMPACT_EVERY == 0 and len(self.dataset.get_fragments()) > 1:
            self.dataset.optimize.compact_files()
            self._next_id = max(self._next_id, _next_fragment_id(self.dataset))


def _next_fragment_id(dataset: lance.LanceDataset) -> int:
    return max((fragment.fragment_id for fragment in dataset.get_fragments()), default=-1) + 1
