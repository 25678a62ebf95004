"""Writers of one catalog in the processes of one machine take turns at ``__manifest`` commits.

A guarded append (fragments.py) fails on any concurrent commit, so writer processes that commit at the same
time mostly waste their work: each loses, re-reads and tries again. An advisory lock (``flock``) on a file of
the machine's temporary directory, one per catalog, lets them commit one after the other instead: a writer
that waited reads the commit of the one before it (the fragments added since its version, see snapshots.py)
and appends on top of it at the first try. The lock is only an optimisation: correctness stays with the
guarded append (writers on other machines are not in the turn), a process that dies releases it, and a writer
that waits longer than ``WAIT_SECONDS`` (a stuck holder) commits without it.

Threads of one process share the turn (the lock is held while any of them commits): they already take turns
in-process (ManifestTable), and one of them waiting on the process's own lock could deadlock a pylance callback.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no turn, commits stay guarded
    fcntl = None  # type: ignore[assignment]

WAIT_SECONDS = 5.0
_POLL_SECONDS = (0.0001, 0.001)  # between attempts to take a busy lock: short, randomised (no convoy)
_DIRECTORY = "airflow-provider-lance-turns"


class MachineTurn:
    """The turn of one catalog's writers on this machine.

    :param catalog_key: what names the catalog on this machine (its URI and endpoint).
    """

    def __init__(self, catalog_key: str) -> None:
        digest = hashlib.sha256(catalog_key.encode()).hexdigest()[:32]
        self.path = Path(tempfile.gettempdir()) / _DIRECTORY / f"{digest}.lock"
        self._lock = threading.Lock()
        self._holders = 0
        self._descriptor: int | None = None
        self._pid = os.getpid()

    @contextmanager
    def hold(self) -> Iterator[bool]:
        """Hold the turn while committing; yields whether another process held it first (its commit is then
        likely newer than what the caller read). Without the turn (no lock on this platform, a directory that
        is not writable, a holder that did not finish within ``WAIT_SECONDS``) the caller commits anyway."""
        taken, waited = self._take()
        try:
            yield waited
        finally:
            if taken:
                self._give_back()

    def _take(self) -> tuple[bool, bool]:
        """(taken, waited for another process)."""
        deadline = time.monotonic() + WAIT_SECONDS
        waited = False
        while True:
            with self._lock:
                descriptor = self._open()
                if descriptor is None:
                    return False, False
                if self._holders:
                    self._holders += 1  # another thread of this process holds it
                    return True, waited
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self._holders = 1
                    return True, waited
                except BlockingIOError:
                    waited = True
            if time.monotonic() > deadline:
                return False, True
            time.sleep(random.uniform(*_POLL_SECONDS))

    def _give_back(self) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0 and self._descriptor is not None:
                fcntl.flock(self._descriptor, fcntl.LOCK_UN)

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        if self._descriptor is None or self._pid != os.getpid():  # a forked child opens its own
            self._holders = 0
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                return None
            self._pid = os.getpid()
        return self._descriptor
