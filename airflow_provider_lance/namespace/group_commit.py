"""What a group commit commits (who leads and who waits: writers_turn.py): concurrent ``__manifest`` writes of
one instance in one commit, each request answered on its own, as if they had committed one after the other (of
two inserts of one id the first wins, the second fails alone). A request is one unit: all of its rows land or
none does. Inserts are one guarded append (fragments.py), deletes one Lance delete of the union of their
selections, each request counting the rows only it removed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
from lance.fragment import FragmentMetadata

from airflow_provider_lance.namespace import fragments, maintenance
from airflow_provider_lance.namespace.config import MaintenancePolicy
from airflow_provider_lance.namespace.identifiers import MANIFEST_DIR
from airflow_provider_lance.namespace.manifest_rows import SCHEMA, RowSelection
from airflow_provider_lance.namespace.offers import RETRY, Offer, OfferBox
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.snapshots import Snapshot
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.storage_errors import is_lost_response
from airflow_provider_lance.namespace.writers_turn import Request


class DuplicateObjectError(Exception):
    """An insert found a row with the same ``object_id``."""

    def __init__(self, object_id: str | None) -> None:
        super().__init__(object_id)
        self.object_id = object_id


class MissingParentError(Exception):
    """An insert's parent (``object_id``) is not in the version it would commit on top of (dropped)."""

    def __init__(self, object_id: str) -> None:
        super().__init__(object_id)
        self.object_id = object_id


def _refusal(ids: list[str], parents: tuple[str, ...], index: RowIndex, taken: set[str]) -> Exception | None:
    """Why a unit of rows (a request, an offer) may not commit on top of the version ``index`` holds after the
    units before it (``taken``: their ids, extended by this one's when it may): an id already there, taken or
    repeated, or a parent missing. The parents are checked in the version the guarded append commits on top of,
    so a DropNamespace either committed before (the child fails) or sees the child after."""
    present, seen = index.positions(ids), set()
    for oid in ids:
        if oid in taken or oid in present or oid in seen:
            return DuplicateObjectError(oid)
        seen.add(oid)
    there = index.positions(parents) if parents else {}
    missing = next((parent for parent in parents if parent not in there), None)
    if missing is not None:
        return MissingParentError(missing)
    taken.update(ids)
    return None


def _takes(offer: Offer, index: RowIndex, taken: set[str]) -> bool:
    """Whether another process's ``offer`` joins the commit. An offer is one unit: refused, or of another release's
    rows, its writer commits it (and fails the request at fault)."""
    if not offer.rows.schema.equals(SCHEMA):
        return False
    return _refusal(offer.rows["object_id"].to_pylist(), offer.parents, index, taken) is None


def _may_have_landed(error: BaseException) -> bool:
    """Whether the last commit attempt behind ``error`` may have landed: its answer was lost (the retries ran out
    on it: ``ConcurrentModificationError`` from it)."""
    return any(cause is not None and is_lost_response(cause) for cause in (error, error.__cause__))


class NothingToCommit(Exception):
    """Every request of a group was answered without a commit (all failed, or nothing to delete)."""


INSERT, DELETE = "insert", "delete"


@dataclass
class _Written:
    """The data file of a group's inserts (and of the offers it takes), committed again on each retry while its
    requests and offers stay the same."""

    requests: list[Request] = field(default_factory=list)
    offers: list[Offer] = field(default_factory=list)
    fragments: list[FragmentMetadata] = field(default_factory=list)
    base: Snapshot | None = None  # the version whose every row the file also holds (a rewrite), if any

    def discard(self, storage: Storage) -> None:
        if self.fragments:
            fragments.delete_files(storage, MANIFEST_DIR, self.fragments)  # no version holds it: none will
        self.requests, self.offers, self.fragments, self.base = [], [], [], None


@dataclass
class InsertGroup:
    """One commit of a group of inserts: a guarded append of every request that duplicates no row of the version
    below nor an earlier request; when a compaction that rewrites every row would follow at once, the commit is
    that rewrite (``maintenance.rewrite_due``). ``group``: the requests, in queue order.

    With the machine's other writer processes (``offers``, offers.py): while another process holds the machine
    turn, the group's rows are offered to it (:meth:`offer`), and the group is done when it committed them
    (:meth:`settled`); a group that holds the turn writes and commits the offers it finds with its own rows.
    """

    group: list[Request]
    storage: Storage
    storage_options: dict[str, str] | None
    policy: MaintenancePolicy
    offers: OfferBox | None = None
    seen: Snapshot | None = None  # the version the last attempt validated against
    _written: _Written = field(default_factory=_Written)
    _offer: Offer | None = None  # this group's offer, posted while another process held the turn
    _unsure: bool = False  # its offer was claimed and not committed: an attempt looks whether a holder's did
    _claimed: list[Offer] = field(default_factory=list)  # other processes' offers, not finally answered yet

    def offer(self) -> None:
        """Another process holds the machine turn: offer it the rows of this group."""
        if self.offers is not None:
            rows = pa.concat_tables([request.rows for request in self.group])
            parents = tuple(dict.fromkeys(parent for request in self.group for parent in request.parents))
            self._offer = self.offers.post(rows, parents)

    def settled(self) -> bool:
        """In the turn, before a commit: whether the process that held the turn committed this group's offer
        (each request is then answered); otherwise the group commits as usual."""
        offer, box = self._offer, self.offers
        if offer is None or box is None:
            return False
        answer = box.answer_of(offer)
        if answer is not None and answer.committed:
            box.done(offer)
            self._offer = None
            return True
        if answer is None and box.withdraw(offer):
            self._offer = None  # nobody claimed it
        else:
            self._unsure = True  # claimed and not committed, or claimed by a holder still at work
        return False

    def _landed_elsewhere(self, dataset: lance.LanceDataset) -> bool:
        """Whether the version holds a data file that a holder wrote this group's offered rows into."""
        if not self._unsure or self._offer is None or self.offers is None:
            return False
        answer = self.offers.answer_of(self._offer)
        return answer is not None and fragments.holds_files(dataset, answer.files)

    def write(self, snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
        """One commit attempt on top of ``snapshot``."""
        retry, self.seen, written = self.seen is not None, snapshot, self._written
        if retry and written.fragments and fragments.holds(dataset, written.fragments):
            self._answer(written.offers, dataset.version)  # the offers it wrote landed with it
            return dataset, None  # the commit landed though it reported a conflict
        if self._landed_elsewhere(dataset):
            written.discard(self.storage)  # its own data file of an earlier attempt: no version holds it
            return dataset, None  # a holder committed this group's rows
        index = snapshot.index()
        accepted, taken = [], set()
        for request in self.group:
            if request.answered:
                continue
            refusal = _refusal(request.rows["object_id"].to_pylist(), request.parents, index, taken)
            if refusal is not None:
                request.answer(error=refusal)
                continue
            accepted.append(request)
        if self.offers is not None:  # the offers of other processes waiting for the turn join the commit
            self._claimed.extend(self.offers.claim())
        joined = [offer for offer in self._claimed if _takes(offer, index, taken)]
        # the version the last attempt found due is due still (no fragment listing again)
        due = written.base is snapshot or maintenance.rewrite_due(dataset, self.policy)
        base = snapshot if due else None
        if accepted != written.requests or joined != written.offers or written.base is not base:
            written.discard(self.storage)
        if not accepted and not joined:
            raise NothingToCommit
        if not written.fragments:
            self._write(accepted, joined, dataset, base)
        commit = fragments.commit_append if base is None else fragments.commit_rewrite
        committed = commit(dataset, written.fragments, self.storage_options)
        self._answer(joined, committed.version)
        return committed, None

    def _write(
        self, accepted: list[Request], joined: list[Offer], dataset: lance.LanceDataset, base: Snapshot | None
    ) -> None:
        """Write the data file of the accepted requests and joined offers (after every row of ``base``) and tell
        the offers' writers its name before it is committed."""
        tables = [request.rows for request in accepted] + [offer.rows for offer in joined]
        data = pa.concat_tables(tables)
        if base is not None:
            data = pa.concat_tables([base.table().cast(dataset.schema), data.cast(dataset.schema)])
        written = self._written
        written.fragments = fragments.write_rows(dataset, data, self.storage_options)
        written.requests, written.offers, written.base = accepted, joined, base
        files = fragments.data_file_paths(written.fragments)
        for offer in joined:
            offer.files = files
            OfferBox.answer(offer, None)

    def _answer(self, offers: list[Offer], version: int) -> None:
        for offer in offers:
            OfferBox.answer(offer, version)
            self._claimed.remove(offer)

    def close(self) -> None:
        """Before the turn is released: the offers claimed and not committed are answered :data:`RETRY` (their
        writers commit them), and this group's own answer is taken away."""
        for offer in self._claimed:
            OfferBox.answer(offer, RETRY)
        self._claimed = []
        if self._offer is not None and self.offers is not None:
            self.offers.done(self._offer)
            self._offer = None

    def change(self, index: RowIndex) -> RowIndex:
        written = self._written
        return index.appended(
            pa.concat_tables([request.rows for request in written.requests] + [offer.rows for offer in written.offers])
        )

    def abandon(self) -> None:
        """The group did not commit: its data file is deleted."""
        self._written.discard(self.storage)


@dataclass
class DeleteGroup:
    """One commit of a group of deletes: one Lance delete of the union of the selections. Each request counts
    the rows no earlier request of the group removed (exactly one of two deletes of a row sees 1).
    """

    group: list[Request]
    conflict_retries: int
    seen: Snapshot | None = None  # the version the last attempt counted on

    def write(self, snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
        """One commit attempt on top of ``snapshot``."""
        self.seen = snapshot
        table = snapshot.table()
        claimed: Any = None
        owned: list[pa.Array] = []
        for request in self.group:
            assert request.selection is not None
            mask = pc.fill_null(request.selection.mask(table), False)
            if claimed is not None:
                mask = pc.and_(mask, pc.invert(claimed))
            owned.append(table["object_id"].filter(mask).combine_chunks())
            claimed = mask if claimed is None else pc.or_(claimed, mask)
        if not any(len(ids) for ids in owned):
            for request in self.group:
                request.answer(0)
            raise NothingToCommit
        where = RowSelection(any_of=tuple(request.selection for request in self.group if request.selection))
        dataset.delete(where.sql(), conflict_retries=self.conflict_retries)
        if dataset.version != snapshot.version + 1:
            # Rebased over other writers' commits: a row counts only if it was still there just before ours.
            before = dataset.checkout_version(dataset.version - 1)
            claimed_ids = RowSelection(tuple(pa.concat_arrays(owned).to_pylist()))
            present = before.to_table(columns=["object_id"], filter=claimed_ids.sql())["object_id"]
            owned = [chunk.filter(pc.is_in(chunk, value_set=present.combine_chunks())) for chunk in owned]
        for request, ids in zip(self.group, owned, strict=True):
            request.answer(len(ids))
        return dataset, None

    def change(self, index: RowIndex) -> RowIndex:
        """The cached rows after the commit."""
        keep: Any = None
        for request in self.group:
            assert request.selection is not None
            kept = pc.invert(pc.fill_null(request.selection.mask(index.table), False))
            keep = kept if keep is None else pc.and_(keep, kept)
        return index.filtered(keep)


def commit_group(
    group: list[Request],
    commit: Callable[..., Any],
    storage: Storage,
    conflict_retries: int,
    policy: MaintenancePolicy,
    offers: OfferBox | None,
) -> Any:
    """Commit a group of requests of one kind with ``commit`` (``ManifestTable.commit``); ``offers``: the
    machine's offers (offers.py). Returns the version the last attempt worked on (where a group that needed no
    commit found its answers; None when another process committed it)."""
    writes: InsertGroup | DeleteGroup
    if group[0].kind == INSERT:
        writes = inserts = InsertGroup(group, storage, storage.options or None, policy, offers)
        try:
            commit(inserts.write, inserts.change, share=inserts)
        except BaseException as error:
            if not _may_have_landed(error):  # a version may hold the data file of a commit whose answer was lost
                inserts.abandon()
            if not isinstance(error, NothingToCommit):
                raise
    else:
        writes = DeleteGroup(group, conflict_retries)
        with contextlib.suppress(NothingToCommit):
            commit(writes.write, writes.change)
    return writes.seen
