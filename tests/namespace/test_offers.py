"""Offers (offers.py): a writer waiting for the machine turn offers its written inserts to the holder, which
commits them with its own. Two instances on one catalog each open the turn's lock file, so ``flock`` treats them
as two processes; a third ``MachineTurn`` held by the test plays a holder, or keeps the turn busy while the
writers queue up."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import lance
import lance_namespace as ln
import pyarrow as pa
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace, fragments
from airflow_provider_lance.namespace.manifest_rows import ManifestRow, rows_table
from airflow_provider_lance.namespace.offers import RETRY, Answer, Offer, OfferBox
from airflow_provider_lance.namespace.writers_turn import MachineTurn

WAIT = 60.0  # a bound on waiting for a thread (never reached when the code works)


def _catalog(root: Path) -> DirectoryNamespace:
    ns = DirectoryNamespace(root=str(root))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    return ns


def _box(ns: DirectoryNamespace) -> OfferBox:
    box = ns.manifest._writers.offers
    assert box is not None
    return box


def _version(root: Path) -> int:
    return lance.dataset(str(root / "__manifest")).version


def _tables(root: Path) -> list[str]:
    """The tables of namespace ``a`` as the reference lists them."""
    return sorted(ReferenceNamespace(root=str(root)).list_tables(ln.ListTablesRequest(id=["a"])).tables)


def _offers(box: OfferBox) -> list[Path]:
    return sorted(box.directory.glob("*.offer")) if box.directory.exists() else []


def _wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.005)


@contextmanager
def _busy_turn(ns: DirectoryNamespace) -> Iterator[None]:
    """Another holder of the catalog's machine turn for the block."""
    with MachineTurn(ns.manifest.storage.catalog_key).hold() as another:
        assert another is False
        yield


class _Declare(threading.Thread):
    """``ns.declare_table`` of ``a.<name>`` on a thread: ``outcome`` is "ok" or the error's class name."""

    def __init__(self, ns: DirectoryNamespace, name: str) -> None:
        super().__init__()
        self.ns, self.name_, self.outcome = ns, name, ""
        self.start()

    def run(self) -> None:
        try:
            self.ns.declare_table(ln.DeclareTableRequest(id=["a", self.name_]))
            self.outcome = "ok"
        except Exception as error:
            self.outcome = type(error).__name__

    def result(self) -> str:
        self.join(WAIT)
        assert not self.is_alive()
        return self.outcome


def test_the_holder_commits_the_offers_of_the_writers_waiting_with_its_own_in_one_version(tmp_path: Path) -> None:
    first, second, third = (
        _catalog(tmp_path),
        DirectoryNamespace(root=str(tmp_path)),
        DirectoryNamespace(root=str(tmp_path)),
    )
    before = _version(tmp_path)
    with _busy_turn(first):
        writers = [_Declare(ns, f"t{n}") for n, ns in enumerate((first, second, third))]
        _wait_for(lambda: len(_offers(_box(first))) == 3)  # each waits for the turn with its offer posted
    assert [writer.result() for writer in writers] == ["ok", "ok", "ok"]
    assert _version(tmp_path) == before + 1  # the first to get the turn committed all three
    assert _tables(tmp_path) == ["t0", "t1", "t2"]
    assert not list(_box(first).directory.iterdir())  # every offer and answer taken away
    for ns in (first, second, third):  # each instance reads the rows it did not commit
        assert sorted(ns.list_tables(ln.ListTablesRequest(id=["a"])).tables) == ["t0", "t1", "t2"]


def test_of_two_offers_of_one_name_one_lands_and_the_other_writer_fails_alone(tmp_path: Path) -> None:
    first, second, third = (
        _catalog(tmp_path),
        DirectoryNamespace(root=str(tmp_path)),
        DirectoryNamespace(root=str(tmp_path)),
    )
    with _busy_turn(first):
        writers = [_Declare(first, "same"), _Declare(second, "same"), _Declare(third, "other")]
        _wait_for(lambda: len(_offers(_box(first))) == 3)
    outcomes = [writer.result() for writer in writers]
    assert sorted(outcomes[:2]) == ["TableAlreadyExistsError", "ok"] and outcomes[2] == "ok"
    assert _tables(tmp_path) == ["other", "same"]
    rows = [row.object_id for row in first.manifest.query() if row.object_type == "table"]
    assert sorted(rows) == ["a$other", "a$same"]  # no duplicate row


def _claim_one(box: OfferBox) -> list[Offer]:
    claimed = box.claim()
    assert len(claimed) == 1
    return claimed


def test_a_holder_that_dies_after_claiming_an_offer_leaves_its_writer_to_commit_it(tmp_path: Path) -> None:
    ns = _catalog(tmp_path)
    before = _version(tmp_path)
    with _busy_turn(ns):
        writer = _Declare(ns, "t")
        _wait_for(lambda: len(_offers(_box(ns))) == 1)
        _claim_one(_box(ns))  # then the holder dies: no commit, no answer
    assert writer.result() == "ok"
    assert _version(tmp_path) == before + 1
    assert _tables(tmp_path) == ["t"]


@pytest.mark.parametrize("committed", [True, False], ids=["after its commit", "before its commit"])
def test_a_holder_that_dies_after_naming_its_data_file_leaves_the_rows_committed_once(
    tmp_path: Path, committed: bool
) -> None:
    ns = _catalog(tmp_path)
    before = _version(tmp_path)
    with _busy_turn(ns):
        writer = _Declare(ns, "t")
        _wait_for(lambda: len(_offers(_box(ns))) == 1)
        (offer,) = _claim_one(_box(ns))
        dataset = lance.dataset(str(tmp_path / "__manifest"))
        written = fragments.write_rows(dataset, offer.rows, None)
        offer.files = fragments.data_file_paths(written)
        OfferBox.answer(offer, None)  # its intent
        if committed:
            fragments.commit_append(dataset, written, None)
        # then the holder dies: no answer with a version
    assert writer.result() == "ok"  # its rows are in the latest version, or it commits them itself
    assert _version(tmp_path) == before + 1
    assert _tables(tmp_path) == ["t"]
    rows = [row.object_id for row in ns.manifest.query() if row.object_type == "table"]
    assert rows == ["a$t"]


def test_an_offer_answered_retry_is_committed_by_its_writer(tmp_path: Path) -> None:
    ns = _catalog(tmp_path)
    with _busy_turn(ns):
        writer = _Declare(ns, "t")
        _wait_for(lambda: len(_offers(_box(ns))) == 1)
        (offer,) = _claim_one(_box(ns))
        _box(ns).answer(offer, RETRY)
    assert writer.result() == "ok"
    assert _tables(tmp_path) == ["t"]


def test_a_writer_that_stops_waiting_withdraws_its_offer_and_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("airflow_provider_lance.namespace.writers_turn.TURN_WAIT_SECONDS", 0.2)
    ns = _catalog(tmp_path)
    with _busy_turn(ns):  # held past the writer's bound
        assert _Declare(ns, "t").result() == "ok"
        assert _offers(_box(ns)) == []
    assert _tables(tmp_path) == ["t"]


def _post(box: OfferBox, name: str) -> Path:
    """An offer of a table row of ``a.<name>``, as a waiting writer posts it."""
    offer = box.post(rows_table([ManifestRow(f"a${name}", "table", name)]))
    assert offer is not None
    return offer.path


def test_offers_of_another_user_or_of_a_writer_gone_are_never_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = _catalog(tmp_path)
    box = _box(ns)
    old = _post(box, "old")
    os.utime(old, (time.time() - 5.0, time.time() - 5.0))  # its writer stopped waiting (TURN_WAIT_SECONDS)
    stale = _post(box, "stale")
    os.utime(stale, (time.time() - 3600.0, time.time() - 3600.0))  # its writer is gone: deleted
    assert box.claim() == []
    assert old.exists() and not stale.exists()
    foreign = _post(box, "foreign")
    monkeypatch.setattr("airflow_provider_lance.namespace.offers.os.geteuid", lambda: os.stat(foreign).st_uid + 1)
    assert box.claim() == []  # another user's file: dropped
    assert not foreign.exists() and not foreign.with_suffix(".claimed").exists()


def test_an_offer_of_rows_of_another_shape_is_answered_retry_and_the_holder_commits_its_own(tmp_path: Path) -> None:
    ns = _catalog(tmp_path)
    rows = rows_table([ManifestRow("a$other", "table", "other")])
    offer = _box(ns).post(rows.append_column("extra", pa.array([1])))  # another release's rows
    assert offer is not None
    ns.declare_table(ln.DeclareTableRequest(id=["a", "mine"]))  # the holder: claims it, cannot take it
    assert OfferBox.answer_of(offer) == Answer(RETRY, [])
    assert _tables(tmp_path) == ["mine"]


def test_an_offer_whose_namespace_is_gone_is_answered_retry(tmp_path: Path) -> None:
    ns = _catalog(tmp_path)
    offer = _box(ns).post(rows_table([ManifestRow("gone$t", "table", "t")]), ("gone",))
    assert offer is not None
    ns.declare_table(ln.DeclareTableRequest(id=["a", "mine"]))  # the holder: its commit would orphan the row
    assert OfferBox.answer_of(offer) == Answer(RETRY, [])
    assert _tables(tmp_path) == ["mine"]
