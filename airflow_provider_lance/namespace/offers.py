"""Offers: a writer process waiting for the machine turn (writers_turn.py) hands the rows it inserts to the process
that holds the turn, which writes and commits them with its own in one ``__manifest`` commit (group_commit.py).

Short-lived writers (Airflow tasks, Spark executors) declaring at the same time otherwise commit one after the
other, each writing a data file, reading the latest version again and committing alone. An offer is one
process's group of inserts: an Arrow IPC file of its rows in the machine's temporary directory, next to the
turn's lock file, that lives only while its writer waits:

1. The waiter posts ``<name>.offer`` (written aside, then renamed) when it finds the turn held by another process.
2. The holder, in its commit, claims each offer by renaming it to ``<name>.claimed``: a rename only one process
   can make. When none of its ids is taken (an offer is one unit: all its rows land or none does) its rows go
   into the holder's data file. Before committing, the holder writes each such offer's answer with that data
   file's name and no version (its intent); after, the version that committed it. An offer it does not commit
   is answered :data:`RETRY`.
3. The waiter, once it has the turn (or gave up waiting for it), reads its answer: committed, it is done without
   reading the catalog again or writing anything. No answer: it withdraws its offer (deletes it) and commits as
   usual. Claimed and not committed (an intent or a retry answer, or claimed by a holder still at work after the
   waiter stopped waiting): before each commit attempt it looks whether the data file its answer names is in the
   latest version (``fragments.holds_files``); otherwise it commits its rows itself.

Correctness stays with the guarded append: every commit, the holder's included, is exactly the next version of
the one its ids were checked against, so rows cannot land twice nor beside a duplicate id. Offers only save
work; a file of another user, or older than the turn's bound (its writer is gone), is never committed.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from airflow_provider_lance.namespace.tuning import MAX_GROUP_ROWS, TURN_WAIT_SECONDS

#: The version of an answer that no version committed the offer in (Lance versions start at 1).
RETRY = 0
_PARENTS = b"parents"
# An offer or answer left this long is its writer's (crashed, or answered after it gave up): deleted.
_STALE_SECONDS = 10 * TURN_WAIT_SECONDS


@dataclass
class Offer:
    """One process's rows to insert, posted at ``path`` (``<name>.offer``, ``<name>.claimed`` once claimed)."""

    path: Path
    rows: pa.Table
    parents: tuple[str, ...] = ()  # the ids its rows need in the version they commit on top of
    files: list[str] = field(default_factory=list)  # the holder's data files that hold its rows, if any

    @property
    def answer_path(self) -> Path:
        return self.path.with_suffix(".answer")


@dataclass(frozen=True)
class Answer:
    """What the holder said: committed in ``version`` (None: about to commit, :data:`RETRY`: not committed), and
    the data files it wrote the rows into (empty when it wrote none)."""

    version: int | None
    files: list[str]

    @property
    def committed(self) -> bool:
        return bool(self.version)


class OfferBox:
    """The offers of the writers of one catalog on this machine: ``directory`` next to its machine turn's lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    # -- the waiting writer -------------------------------------------------------------------------------
    def post(self, rows: pa.Table, parents: tuple[str, ...] = ()) -> Offer | None:
        """Offer ``rows``, which need ``parents`` in the version they commit on top of; None when the offer
        cannot be written (the writer then commits as usual)."""
        name = f"{os.getpid()}-{secrets.token_hex(8)}"
        aside = self.directory / f"{name}.writing"
        stored = rows.replace_schema_metadata({_PARENTS: json.dumps(parents)})
        try:
            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            with pa.OSFile(str(aside), "wb") as sink, pa.ipc.new_file(sink, stored.schema) as out:
                out.write_table(stored)
            aside.rename(aside.with_suffix(".offer"))
        except (OSError, pa.ArrowException):
            aside.unlink(missing_ok=True)
            return None
        return Offer(aside.with_suffix(".offer"), rows, parents)

    @staticmethod
    def answer_of(offer: Offer) -> Answer | None:
        """The holder's answer to ``offer``, None for none yet."""
        try:
            answer = json.loads(offer.answer_path.read_text())
            return Answer(answer["version"], list(answer["files"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @staticmethod
    def withdraw(offer: Offer) -> bool:
        """Take back an offer no holder claimed; False when one did."""
        try:
            offer.path.unlink()
        except FileNotFoundError:
            return False
        return True

    @staticmethod
    def done(offer: Offer) -> None:
        """The writer has its outcome: its answer is deleted."""
        offer.answer_path.unlink(missing_ok=True)

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
                rows = pa.ipc.open_file(source).read_all()
            parents = tuple(str(parent) for parent in json.loads((rows.schema.metadata or {})[_PARENTS]))
        except (OSError, pa.ArrowException, ValueError, KeyError, TypeError):  # not an offer this holder can take
            claimed.unlink(missing_ok=True)
            return None
        return Offer(claimed, rows.replace_schema_metadata(None), parents)

    @staticmethod
    def answer(offer: Offer, version: int | None) -> None:
        """Answer a claimed offer: its rows are about to be committed (None; ``offer.files`` name their data
        files), committed in ``version``, or :data:`RETRY` (its writer commits them)."""
        aside = offer.path.with_suffix(".answering")
        try:
            aside.write_text(json.dumps({"version": version, "files": offer.files}))
            aside.rename(offer.answer_path)
        except OSError:
            pass  # unanswered: the writer commits its rows, after looking for the files of an earlier answer
        if version is not None:
            offer.path.unlink(missing_ok=True)


def _modified(entry: os.DirEntry[str]) -> float:
    try:
        return entry.stat().st_mtime
    except OSError:
        return 0.0
