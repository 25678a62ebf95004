"""The writers' turn: who commits to one ``__manifest`` when, in a process and on a machine.

A guarded append (fragments.py) fails on any concurrent commit, so writers committing at the same time mostly
waste their work. Three turns, always taken in this order (so no two writers wait on each other in a circle):

1. **Group commit** (:class:`GroupCommit`): concurrent writes of one instance's threads are queued; the first
   thread to find no group under way leads and commits every queued request of its kind together
   (group_commit.py); each request gets its own answer, and the first that arrived meanwhile leads the next
   group. 32 threads declaring through one instance: 141 -> 640 writes/s.
2. **The instance turn** (:class:`WritersTurn`, re-entrant: maintenance commits inside a commit): the
   instance's group leaders and other commits, one at a time.
3. **The machine turn** (:class:`MachineTurn`): an advisory ``flock`` per catalog in the machine's temporary
   directory, so a machine's writer processes commit one after the other, each on top of the one before at the
   first try. 4 and 8 writer processes: 0.88x-1.72x -> 1.29x-1.95x the reference's writes/s (CHANGELOG).
   A group of inserts that waits for it offers its rows to the holder, which writes and commits them with its
   own (offers.py): the waiter is answered without writing, reading the catalog again or committing.

Every wait is bounded by ``TURN_WAIT_SECONDS`` (tuning.py, with why): the turns only save work, correctness
stays with the guarded append and the retry of conflicting commits.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from airflow_provider_lance.namespace.offers import OfferBox
from airflow_provider_lance.namespace.tuning import MAX_GROUP_ROWS, TURN_WAIT_SECONDS

if TYPE_CHECKING:
    from airflow_provider_lance.namespace.manifest_rows import RowSelection
    from airflow_provider_lance.namespace.snapshots import Snapshot

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no machine turn, commits stay guarded
    fcntl = None  # type: ignore[assignment]

_DIRECTORY = "airflow-provider-lance-turns"


@dataclass(eq=False)
class Request:
    """One queued write of a ``kind`` (group_commit.py): ``rows`` to insert, or the ``selection`` to delete;
    ``parents``: the ids an insert needs in the version it commits on top of (a child's namespace)."""

    kind: str
    rows: pa.Table | None = None
    selection: RowSelection | None = None
    parents: tuple[str, ...] = ()
    result: Any = None
    error: BaseException | None = None
    snapshot: Snapshot | None = None  # the version that answered it (the requester's operation goes on there)
    answered: bool = False
    lead: bool = False
    _event: threading.Event = field(default_factory=threading.Event)

    @property
    def size(self) -> int:
        return self.rows.num_rows if self.rows is not None else 1

    def answer(self, result: Any = None, error: BaseException | None = None) -> None:
        if not self.answered:
            self.result, self.error, self.answered = result, error, True


class GroupCommit:
    """Turn 1: the queue of one ``__manifest``'s writers in one process; ``run`` commits a group of requests
    (of one kind) and answers each of them."""

    def __init__(self, run: Callable[[list[Request]], None]) -> None:
        self._run = run
        self._lock = threading.Lock()
        self._queue: list[Request] = []
        self._busy = False  # a leader is committing a group

    def submit_many(self, requests: list[Request]) -> None:
        """Queue ``requests`` together, in order, and return once each is answered (its own result or error),
        as the writes of many threads would be (the REST server's batches of declares)."""
        with self._lock:
            for request in requests:
                self._queue.append(request)
                request.lead = not self._busy
                self._busy = True
        for request in requests:
            self._complete(request)

    def _complete(self, request: Request) -> None:
        """Wait for a leader to answer ``request``, or lead its group; one no leader takes in time commits alone."""
        while not request.lead and not request._event.wait(TURN_WAIT_SECONDS):
            with self._lock:
                if request in self._queue and not request.lead:  # no leader took it yet: commit it alone
                    self._queue.remove(request)
                    break
        if request.answered:
            return
        if not request.lead:
            self._commit([request])
            return
        with self._lock:
            self._queue.remove(request)
            group, rows = [request], request.size
            for queued in list(self._queue):  # then every request of its kind, in queue order, bounded
                if queued.kind == request.kind and rows + queued.size <= MAX_GROUP_ROWS:
                    group.append(queued)
                    rows += queued.size
                    self._queue.remove(queued)
        try:
            self._commit(group)
        finally:
            with self._lock:
                if self._queue:
                    self._queue[0].lead = True  # the next group's leader
                else:
                    self._busy = False
                successor = self._queue[0] if self._queue else None
            for done in group:
                done._event.set()
            if successor is not None:
                successor._event.set()

    def _commit(self, group: list[Request]) -> None:
        try:
            self._run(group)
        except BaseException as error:  # the commit failed as a whole: every request not answered shares it
            for request in group:
                request.answer(error=error)
        for request in group:
            request.answer()


class WritersTurn:
    """The turns of one ``__manifest``'s writers in this process. ``machine_key``: ``Storage.catalog_key``, None
    for no machine turn (``memory://``); ``released``: called once the turn is released."""

    def __init__(
        self, run_group: Callable[[list[Request]], None], machine_key: str | None, released: Callable[[], None]
    ) -> None:
        self.group = GroupCommit(run_group)
        self._instance = threading.RLock()
        self._machine = MachineTurn(machine_key) if machine_key is not None else None
        self._released = released

    @property
    def offers(self) -> OfferBox | None:
        """Where this machine's writer processes of the catalog offer their inserts to the holder (offers.py)."""
        return self._machine.offers if self._machine is not None else None

    @contextmanager
    def hold(self, on_busy: Callable[[], None] | None = None) -> Iterator[bool]:
        """Turns 2 and 3 around one commit; yields whether another process held the machine turn first (its
        commit is then likely newer than what the caller read). ``on_busy``: called once if another process
        holds the machine turn (before waiting for it)."""
        acquired = self._instance.acquire(timeout=TURN_WAIT_SECONDS)
        try:
            if self._machine is None:
                yield False
            else:
                with self._machine.hold(on_busy) as another_process:
                    yield another_process
        finally:
            if acquired:
                self._instance.release()
            self._released()


class MachineTurn:
    """Turn 3: the turn of the writers of one catalog (``Storage.catalog_key``) on this machine.

    A busy turn is waited for in the kernel: one thread of the process blocks in ``flock`` for every thread of
    it that waits (each at most ``TURN_WAIT_SECONDS``) and hands the turn over the moment the holder releases
    it. Polling a non-blocking ``flock`` every 0.1-1 ms cost each waiting process a wake-up per poll: CPU that
    the holder's commit queued for (docs/benchmarks.md, "Short-lived writer processes")."""

    def __init__(self, catalog_key: str) -> None:
        digest = hashlib.sha256(catalog_key.encode()).hexdigest()[:32]
        self.path = Path(tempfile.gettempdir()) / _DIRECTORY / f"{digest}.lock"
        self.offers = OfferBox(self.path.with_suffix(".offers"))
        self._state = threading.Condition()
        self._holders = 0  # threads of this process holding the turn (they share the one flock)
        self._granted = False  # the blocked flock returned: the turn is this process's, for a waiting thread
        self._blocked = False  # a thread of this process is blocked in flock (only it locks until it returns)
        self._waiters = 0  # threads of this process waiting for the turn
        self._descriptor: int | None = None
        self._pid = os.getpid()

    @contextmanager
    def hold(self, on_busy: Callable[[], None] | None = None) -> Iterator[bool]:
        """Hold the turn while committing; yields whether another process held it first. Without the turn (no
        ``flock``, an unwritable directory, a holder past ``TURN_WAIT_SECONDS``) the caller commits anyway.
        ``on_busy``: called once before waiting for another process."""
        taken, waited = self._take(on_busy)
        try:
            yield waited
        finally:
            if taken:
                with self._state:
                    self._holders -= 1
                    if self._holders == 0 and self._descriptor is not None:
                        fcntl.flock(self._descriptor, fcntl.LOCK_UN)

    def _take(self, on_busy: Callable[[], None] | None) -> tuple[bool, bool]:
        """(taken, waited for another process)."""
        deadline = time.monotonic() + TURN_WAIT_SECONDS
        waited = False
        with self._state:
            while True:
                descriptor = self._open()
                if descriptor is None:
                    return False, waited
                if self._holders or self._granted:  # held by another thread of this process, or just handed over
                    self._granted = False
                    self._holders += 1
                    return True, waited
                waited = waited or self._blocked
                if not self._blocked:
                    try:
                        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        self._holders = 1
                        return True, waited
                    except BlockingIOError:
                        waited = self._blocked = True
                    threading.Thread(target=self._block, args=(descriptor,), name="machine-turn", daemon=True).start()
                if on_busy is not None:
                    on_busy()
                    on_busy = None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False, True
                self._waiters += 1
                try:
                    self._state.wait(remaining)
                finally:
                    self._waiters -= 1

    def _block(self, descriptor: int) -> None:
        """Wait in ``flock`` until the other process releases the turn, then hand it to a waiting thread, or give
        it back when none waits any more (each goes ahead without it after ``TURN_WAIT_SECONDS``)."""
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            locked = True
        except OSError:  # the waiters go ahead without the turn at their bound
            locked = False
        with self._state:
            self._blocked = False
            if locked and self._waiters and descriptor == self._descriptor:
                self._granted = True
            elif locked:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
            self._state.notify_all()

    def _open(self) -> int | None:
        if fcntl is None:
            return None
        if self._descriptor is None or self._pid != os.getpid():  # a forked child opens its own
            self._holders, self._granted, self._blocked, self._waiters = 0, False, False, 0
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError:
                return None
            self._pid = os.getpid()
        return self._descriptor
