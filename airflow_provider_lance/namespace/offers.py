"""Offers: a writer process waiting for the machine turn (writers_turn.py) hands its written inserts to the process
that holds the turn, which commits them with its own in one ``__manifest`` commit (group_commit.py).

Short-lived writers (Airflow tasks, Spark executors) declaring at the same time otherwise commit one after the
other, each reading the latest version again and committing alone. An offer is one process's group of inserts
whose data file is written: an Arrow IPC file of its rows (what the data file holds), the data file's fragment
metadata in its schema metadata. It lives in the machine's temporary directory next to the turn's lock file, and
only while its writer waits:

1. The waiter posts ``<name>.offer`` (written aside, then renamed) when it finds the turn held by another process.
2. The holder, in its commit, claims each offer by renaming it to ``<name>.claimed``: a rename only one process
   can make. It commits the claimed offers' data files with its own when none of their ids is taken (an offer
   is one unit: all its rows land or none does), and answers each in ``<name>.answer`` before it releases the
   turn: the version that committed it, or ``retry``.
3. The waiter, once it has the turn (or gave up waiting for it), reads its answer. None: it withdraws its offer
   (deletes it) and commits as usual; an offer it cannot withdraw was claimed by a holder that died or gave up
   before answering, and the waiter's commit first looks whether its data file landed (``fragments.holds``).

Correctness stays with the guarded append: every commit, the holder's included, is exactly the next version of
the one its ids were checked against, so an offer cannot land twice nor beside a duplicate id. Offers only save
work; a file of another user, or older than the turn's bound (its writer is gone), is never committed.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from lance.fragment import FragmentMetadata

from airflow_provider_lance.namespace.tuning import MAX_GROUP_ROWS, TURN_WAIT_SECONDS

_FRAGMENTS = b"fragments"
#: The answer to an offer no version committed (Lance versions start at 1): its writer commits it itself.
RETRY = 0
# An offer or answer left this long is its writer's (crashed, or answered after it gave up): deleted.
_STALE_SECONDS = 10 * TURN_WAIT_SECONDS


@dataclass
class Offer:
    """One process's written inserts: ``rows`` (what its data files hold) and their ``fragments``."""

    path: Path  # where it is posted (``<name>.offer``), or claimed (``<name>.claimed``)
    rows: pa.Table
    fragments: list[FragmentMetadata]

    @property
    def answer_path(self) -> Path:
        return self.path.with_suffix(".answer")


class OfferBox:
    """The offers of the writers of one catalog on this machine: ``directory`` next to its machine turn's lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    # -- the waiting writer -------------------------------------------------------------------------------
    def post(self, rows: pa.Table, fragments: list[FragmentMetadata]) -> Offer | None:
        """Offer ``rows`` written as ``fragments``; None when the offer cannot be written (the writer then
        commits as usual)."""
        name = f"{os.getpid()}-{secrets.token_hex(8)}"
        path = self.directory / f"{name}.offer"
        metadata = {_FRAGMENTS: json.dumps([fragment.to_json() for fragment in fragments])}
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            aside = self.directory / f"{name}.writing"
            with pa.OSFile(str(aside), "wb") as sink, pa.ipc.new_file(sink, rows.schema.with_metadata(metadata)) as out:
                out.write_table(rows)
            aside.rename(path)
        except (OSError, pa.ArrowException):
            return None
        return Offer(path, rows, fragments)

    @staticmethod
    def answer_of(offer: Offer) -> int | None:
        """The answer to ``offer``: the version that committed it, :data:`RETRY` (0: no version did, its writer
        commits it), or None for no answer yet. Read once: the answer file is deleted."""
        try:
            version = json.loads(offer.answer_path.read_text())["version"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        offer.answer_path.unlink(missing_ok=True)
        return int(version) if version else RETRY

    @staticmethod
    def withdraw(offer: Offer) -> bool:
        """Take back an offer no holder claimed; False when one did (it may have committed it)."""
        try:
            offer.path.unlink()
        except FileNotFoundError:
            return False
        return True

    # -- the holder ---------------------------------------------------------------------------------------
    def claim(self, max_rows: int = MAX_GROUP_ROWS) -> list[Offer]:
        """Claim the offers posted (oldest first, ``max_rows`` rows in all at most), deleting stale files."""
        try:
            entries = list(os.scandir(self.directory))
        except OSError:
            return []
        now, claimed, rows = time.time(), [], 0
        for modified, entry in sorted(((_modified(entry), entry) for entry in entries), key=lambda pair: pair[0]):
            if now - modified > _STALE_SECONDS:
                Path(entry.path).unlink(missing_ok=True)
                continue
            if not entry.name.endswith(".offer") or now - modified > TURN_WAIT_SECONDS:
                continue  # its writer stopped waiting for the turn: it withdraws it or is gone
            offer = self._claim(Path(entry.path))
            if offer is None:
                continue
            if rows + offer.rows.num_rows > max_rows:
                self.answer(offer, RETRY)  # too many rows for this commit: its writer commits it
                continue
            claimed.append(offer)
            rows += offer.rows.num_rows
        return claimed

    @staticmethod
    def _claim(path: Path) -> Offer | None:
        claimed = path.with_suffix(".claimed")
        try:
            path.rename(claimed)
            with pa.OSFile(str(claimed), "rb") as source:
                if os.fstat(source.fileno()).st_uid != os.geteuid():
                    raise PermissionError(f"offer {claimed} is another user's")
                table = pa.ipc.open_file(source).read_all()
                fragments = [
                    FragmentMetadata.from_json(json.dumps(data))
                    for data in json.loads(table.schema.metadata[_FRAGMENTS])
                ]
        except (OSError, pa.ArrowException, ValueError, KeyError, TypeError):  # not an offer this holder can take
            claimed.unlink(missing_ok=True)
            return None
        return Offer(claimed, table.replace_schema_metadata(None), fragments)

    @staticmethod
    def answer(offer: Offer, version: int) -> None:
        """Answer a claimed offer: committed in ``version``, or :data:`RETRY` (its writer commits it)."""
        aside = offer.path.with_suffix(".answering")
        try:
            aside.write_text(json.dumps({"version": version}))
            aside.rename(offer.answer_path)
        except OSError:
            pass  # unanswered: the writer looks whether its data file landed
        offer.path.unlink(missing_ok=True)


def _modified(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0
