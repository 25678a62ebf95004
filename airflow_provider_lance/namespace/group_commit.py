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
from airflow_provider_lance.namespace.manifest_rows import RowSelection
from airflow_provider_lance.namespace.offers import RETRY, Offer, OfferBox
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.snapshots import Snapshot
from airflow_provider_lance.namespace.storage import Storage
from airflow_provider_lance.namespace.writers_turn import Request


class DuplicateObjectError(Exception):
    """An insert found a row with the same ``object_id``."""

    def __init__(self, object_id: str | None) -> None:
        super().__init__(object_id)
        self.object_id = object_id


def _takes(offer: Offer, index: RowIndex, taken: set[str]) -> bool:
    """Whether another process's ``offer`` joins the commit: none of its ids is in the version below nor taken
    (then they are). An offer is one unit: with any duplicate its writer commits it (and fails that request)."""
    ids = offer.rows["object_id"].to_pylist()
    if len(set(ids)) < len(ids) or taken.intersection(ids) or index.positions(ids):
        return False
    taken.update(ids)
    return True


class NothingToCommit(Exception):
    """Every request of a group was answered without a commit (all failed, or nothing to delete)."""


INSERT, DELETE = "insert", "delete"


@dataclass
class _Written:
    """The data file of a group's inserts, committed again on each retry while its requests stay the same."""

    requests: list[Request] = field(default_factory=list)
    fragments: list[FragmentMetadata] = field(default_factory=list)
    base: Snapshot | None = None  # the version whose every row the file also holds (a rewrite), if any

    def discard(self, storage: Storage) -> None:
        if self.fragments:
            fragments.delete_files(storage, MANIFEST_DIR, self.fragments)  # no version holds it: none will
        self.requests, self.fragments, self.base = [], [], None


@dataclass
class InsertGroup:
    """One commit of a group of inserts: a guarded append of every request that duplicates no row of the version
    below nor an earlier request; when a compaction that rewrites every row would follow at once, the commit is
    that rewrite (``maintenance.rewrite_due``). ``group``: the requests, in queue order.

    With the machine's other writer processes (``offers``, offers.py): while another process holds the machine
    turn, the written group is offered to it (:meth:`offer`), and is answered when it committed it
    (:meth:`settled`); a group that holds the turn commits the offers it finds with its own appends.
    """

    group: list[Request]
    storage: Storage
    storage_options: dict[str, str] | None
    policy: MaintenancePolicy
    offers: OfferBox | None = None
    seen: Snapshot | None = None  # the version the last attempt validated against
    _written: _Written = field(default_factory=_Written)
    _offer: Offer | None = None  # this group's offer, posted while another process holds the turn
    _unsure: bool = False  # offered, claimed and not answered: a commit may have landed it
    _claimed: list[Offer] = field(default_factory=list)  # other processes' offers, not answered yet
    _attempt: list[Offer] = field(default_factory=list)  # those the last commit attempt committed
    _committed: list[Offer] = field(default_factory=list)  # those the commit committed

    def prepare(self, snapshot: Snapshot) -> None:
        """Write the data file before the writers' turn: usually no request is a duplicate and it commits as is."""
        dataset = snapshot.private()
        base = snapshot if maintenance.rewrite_due(dataset, self.policy) else None
        self._write([request for request in self.group if not request.answered], dataset, base)

    def offer(self) -> None:
        """Another process holds the machine turn: offer it this group's appended data file."""
        written = self._written
        if self.offers is not None and written.fragments and written.base is None:
            rows = pa.concat_tables([request.rows for request in written.requests])
            self._offer = self.offers.post(rows, written.fragments)

    def settled(self) -> bool:
        """In the turn, before a commit: whether the process that held the turn committed this group's offer
        (each request is then answered); otherwise the group commits as usual."""
        offer, self._offer = self._offer, None
        if offer is None or self.offers is None:
            return False
        version = self.offers.answer_of(offer)
        if not version:  # claimed and not committed (RETRY), or by a holder that died or gave up
            self._unsure = version == RETRY or not self.offers.withdraw(offer)  # then :meth:`write` looks first
            return False
        for request in self._written.requests:
            request.answer()
        return True

    def _write(self, accepted: list[Request], dataset: lance.LanceDataset, base: Snapshot | None) -> None:
        data = pa.concat_tables([request.rows for request in accepted])
        if base is not None:
            data = pa.concat_tables([base.table().cast(dataset.schema), data.cast(dataset.schema)])
        self._written.fragments.extend(fragments.write_rows(dataset, data, self.storage_options))
        self._written.requests, self._written.base = accepted, base

    def write(self, snapshot: Snapshot, dataset: lance.LanceDataset) -> tuple[lance.LanceDataset, None]:
        """One commit attempt on top of ``snapshot``."""
        retry, self.seen, written = self.seen is not None, snapshot, self._written
        if (retry or self._unsure) and written.fragments and fragments.holds(dataset, written.fragments):
            self._answer_offers(dataset.version)  # the offers of the attempt that landed landed with it
            return dataset, None  # the commit landed though it reported a conflict (or a holder committed it)
        self._attempt = []  # each attempt takes the claimed offers whose ids are still free (else: RETRY)
        index = snapshot.index()
        accepted, taken = [], set()
        for request in self.group:
            if request.answered:
                continue
            ids = request.rows["object_id"].to_pylist()
            present = index.positions(ids)
            duplicate = next((oid for oid in ids if oid in taken or oid in present), None)
            if duplicate is not None:
                request.answer(error=DuplicateObjectError(duplicate))
                continue
            accepted.append(request)
            taken.update(ids)
        # the version prepare() found due is due still (no fragment listing again)
        due = written.base is snapshot or maintenance.rewrite_due(dataset, self.policy)
        base = snapshot if due else None
        if accepted != written.requests or written.base is not base:
            written.discard(self.storage)
        if base is None and self.offers is not None:  # other processes' offers join an append
            self._claimed.extend(self.offers.claim())
            self._attempt = [offer for offer in self._claimed if _takes(offer, index, taken)]
        if not accepted and not self._attempt:
            raise NothingToCommit
        if accepted and not written.fragments:
            self._write(accepted, dataset, base)
        if base is not None:
            return fragments.commit_rewrite(dataset, written.fragments, self.storage_options), None
        offered = [data for offer in self._attempt for data in offer.fragments]
        committed = fragments.commit_append(dataset, written.fragments + offered, self.storage_options)
        self._answer_offers(committed.version)
        return committed, None

    def _answer_offers(self, version: int) -> None:
        """The offers the commit of ``version`` committed are answered with it."""
        for offer in self._attempt:
            self.offers.answer(offer, version)  # type: ignore[union-attr]  # an attempt has offers only with a box
            self._claimed.remove(offer)
        self._committed, self._attempt = self._attempt, []

    def close(self) -> None:
        """Before the turn is released: the offers claimed and not committed are answered :data:`RETRY` (their
        writers commit them)."""
        for offer in self._claimed:
            self.offers.answer(offer, RETRY)  # type: ignore[union-attr]
        self._claimed, self._attempt = [], []

    def change(self, index: RowIndex) -> RowIndex:
        rows = [request.rows for request in self._written.requests] + [offer.rows for offer in self._committed]
        return index.appended(pa.concat_tables(rows))

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
    snapshot: Snapshot | None,
    policy: MaintenancePolicy,
    offers: OfferBox | None,
) -> Any:
    """Commit a group of requests of one kind with ``commit`` (``ManifestTable.commit``); ``snapshot``: the
    latest version known (None without ``__manifest``), to write data files on before the commit; ``offers``:
    the machine's offers (offers.py). Returns the version the last attempt worked on (where a group that needed
    no commit found its answers; None when another process committed it)."""
    writes: InsertGroup | DeleteGroup
    if group[0].kind == INSERT:
        writes = inserts = InsertGroup(group, storage, storage.options or None, policy, offers)
        try:
            if snapshot is not None:
                inserts.prepare(snapshot)
            commit(inserts.write, inserts.change, share=inserts)
        except BaseException as error:
            inserts.abandon()
            if not isinstance(error, NothingToCommit):
                raise
    else:
        writes = DeleteGroup(group, conflict_retries)
        with contextlib.suppress(NothingToCommit):
            commit(writes.write, writes.change)
    return writes.seen
