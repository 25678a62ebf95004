"""Group commit (group_commit.py): writes that threads of one instance make together land in one ``__manifest``
commit, and each request is still answered on its own; writer processes of one machine take turns
(writers_turn.py). Groups are formed deterministically: the first group's commit is held until the requests of
the next one are queued."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import lance
import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace, fragments
from airflow_provider_lance.namespace.manifest import ManifestTable
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, ManifestRow
from airflow_provider_lance.namespace.writers_turn import GroupCommit, MachineTurn
from tests.namespace.helpers_versions import (
    adopt_template,
    build_template,
    copy_staged,
    make_ns,
    read,
    versions,
)

WAIT = 60.0  # a bound on waiting for threads to queue up (never reached when the code works)


def _queued(group: GroupCommit) -> int:
    with group._lock:
        return len(group._queue)


class HeldGroups:
    """Counts the groups an instance commits; the first one waits inside its commit until released."""

    def __init__(self, manifest: ManifestTable) -> None:
        self.group = manifest._writers.group
        self.sizes: list[int] = []
        self.release = threading.Event()
        run = self.group._run

        def held(requests: list[Any]) -> None:
            self.sizes.append(len(requests))
            if len(self.sizes) == 1:
                assert self.release.wait(WAIT)
            run(requests)

        self.group._run = held

    def wait_queued(self, count: int) -> None:
        """Wait until ``count`` requests wait behind the held group."""
        done = threading.Event()
        while _queued(self.group) < count:
            assert not done.wait(0.005) and len(self.sizes) == 1
        assert _queued(self.group) == count


@contextmanager
def running(calls: list[Callable[[], Any]], held: HeldGroups | None = None) -> Iterator[list[Any]]:
    """Run each call on its own thread, the next one only once the previous one queued (when ``held``);
    yields the outcomes (a result or the exception), filled when the block ends."""
    outcomes: list[Any] = [None] * len(calls)

    def run(index: int) -> None:
        try:
            outcomes[index] = calls[index]()
        except Exception as error:  # the outcome under test
            outcomes[index] = error

    threads = [threading.Thread(target=run, args=(index,)) for index in range(len(calls))]
    threads[0].start()
    if held is not None:
        assert _wait_for(lambda: len(held.sizes) == 1)
    for index, thread in enumerate(threads[1:], start=1):
        thread.start()
        if held is not None:
            held.wait_queued(index)
    try:
        yield outcomes
    finally:
        if held is not None:
            held.release.set()
        for thread in threads:
            thread.join(WAIT)
            assert not thread.is_alive()


def _wait_for(condition: Callable[[], bool]) -> bool:
    pause = threading.Event()
    for _ in range(int(WAIT / 0.005)):
        if condition():
            return True
        pause.wait(0.005)
    return False


def _declare(ns: DirectoryNamespace, *parts: str) -> Callable[[], Any]:
    return lambda: ns.declare_table(ln.DeclareTableRequest(id=list(parts)))


def _error_names(outcomes: list[Any]) -> list[str]:
    return [type(outcome).__name__ if isinstance(outcome, Exception) else "ok" for outcome in outcomes]


def test_a_group_of_declares_is_one_commit_and_each_request_gets_its_own_answer(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    held = HeldGroups(ns.manifest)
    commits = Counter()
    commit = fragments.commit_append

    def counted(*args: Any, **kwargs: Any) -> Any:
        commits["append"] += 1
        return commit(*args, **kwargs)

    fragments.commit_append = counted
    try:
        calls = [
            _declare(ns, "a", "first"),  # the held group
            _declare(ns, "a", "first"),  # validated before "first" landed: a duplicate of the version it commits on
            _declare(ns, "a", "dup"),  # the first of two requests of one id in one group wins
            _declare(ns, "a", "dup"),
            _declare(ns, "a", "b1"),
            _declare(ns, "a", "b2"),
        ]
        with running(calls, held) as outcomes:
            pass
    finally:
        fragments.commit_append = commit
    assert _error_names(outcomes) == ["ok", "TableAlreadyExistsError", "ok", "TableAlreadyExistsError", "ok", "ok"]
    assert held.sizes == [1, 5]  # the five requests that arrived during the first commit: one group
    assert commits["append"] == 2  # one commit per group
    tables = sorted(ns.list_tables(ln.ListTablesRequest(id=["a"])).tables)
    assert tables == ["b1", "b2", "dup", "first"]
    # the losers removed their directories: one directory per table, each the one its row points at
    rows = {row.location for row in ns.manifest.query() if row.object_type == "table"}
    assert {path.name for path in tmp_path.iterdir() if path.name != "__manifest"} == rows
    # the reference reads the catalog the group wrote
    reference = ReferenceNamespace(root=str(tmp_path))
    assert sorted(reference.list_tables(ln.ListTablesRequest(id=["a"])).tables) == tables
    for name in tables:
        ours = ns.describe_table(ln.DescribeTableRequest(id=["a", name])).location
        assert reference.describe_table(ln.DescribeTableRequest(id=["a", name])).location.rstrip("/") == ours


def test_a_group_of_drops_counts_each_row_once(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path), manifest_maintenance_every="0")  # commits: only ours
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    for name in ("t1", "t2", "t3", "t4"):
        ns.declare_table(ln.DeclareTableRequest(id=["a", name]))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["empty"]))
    version = lance.dataset(str(tmp_path / "__manifest")).version
    held = HeldGroups(ns.manifest)
    calls = [
        lambda: ns.drop_table(ln.DropTableRequest(id=["a", "t1"])),
        lambda: ns.drop_table(ln.DropTableRequest(id=["a", "t3"])),
        lambda: ns.drop_table(ln.DropTableRequest(id=["a", "t3"])),
        lambda: ns.deregister_table(ln.DeregisterTableRequest(id=["a", "t4"])),
        lambda: ns.drop_namespace(ln.DropNamespaceRequest(id=["empty"])),
    ]
    with running(calls, held) as outcomes:
        pass
    assert _error_names(outcomes) == ["ok", "ok", "TableNotFoundError", "ok", "ok"]
    assert held.sizes == [1, 4]
    assert lance.dataset(str(tmp_path / "__manifest")).version == version + 2
    assert ns.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t2"]
    assert ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces == ["a"]
    assert ReferenceNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t2"]


def test_a_request_is_one_unit_inside_a_group(tmp_path: Path) -> None:
    """Several rows of one request (a BatchCreateTableVersions) land together or not at all, whatever the other
    requests of its group do."""
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    manifest = ns.manifest
    held = HeldGroups(manifest)

    def insert(*ids: str) -> Callable[[], Any]:
        return lambda: manifest.insert([ManifestRow(oid, NAMESPACE) for oid in ids])

    calls = [insert("x"), insert("p", "q"), insert("q2"), insert("p"), insert("z", "x"), insert("y", "y2")]
    with running(calls, held) as outcomes:
        pass
    assert _error_names(outcomes) == ["ok", "ok", "ok", "DuplicateObjectError", "DuplicateObjectError", "ok"]
    assert [outcomes[3].object_id, outcomes[4].object_id] == ["p", "x"]
    assert sorted(row.object_id for row in manifest.query()) == ["a", "p", "q", "q2", "x", "y", "y2"]  # no "z"


def test_a_group_that_cannot_commit_fails_every_request_and_leaves_nothing(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    held = HeldGroups(ns.manifest)
    commit = fragments.commit_append

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the disk is full")

    calls = [_declare(ns, "a", "first"), _declare(ns, "a", "b1"), _declare(ns, "a", "b2")]
    try:
        with running(calls, held) as outcomes:
            fragments.commit_append = broken  # before the held group commits: both groups fail
    finally:
        fragments.commit_append = commit
    assert _error_names(outcomes) == ["InternalError", "InternalError", "InternalError"]
    assert ns.list_tables(ln.ListTablesRequest(id=["a"])).tables == []
    assert [path.name for path in tmp_path.iterdir()] == ["__manifest"]
    assert len(list((tmp_path / "__manifest" / "data").iterdir())) == 1  # the namespace row's file only
    ns.declare_table(ln.DeclareTableRequest(id=["a", "b1"]))  # and the instance goes on
    assert ns.list_tables(ln.ListTablesRequest(id=["a"])).tables == ["b1"]


def test_a_follower_that_waits_long_commits_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A queued request that no leader takes (a pylance callback may hold the thread the leader needs) commits
    by itself after the wait bound; storage stays consistent."""
    monkeypatch.setattr("airflow_provider_lance.namespace.writers_turn.TURN_WAIT_SECONDS", 0.05)
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    held = HeldGroups(ns.manifest)
    with running([_declare(ns, "a", "first")], held) as outcomes:
        alone = [None]
        follower = threading.Thread(target=lambda: alone.__setitem__(0, _declare(ns, "a", "second")()))
        follower.start()
        follower.join(WAIT)  # it does not wait for the held leader
        assert not follower.is_alive()
    assert _error_names(outcomes) == ["ok"]
    assert alone[0] is not None
    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["a"])).tables) == ["first", "second"]


def test_version_commits_of_many_threads_group_their_rows_and_repoints(tmp_path: Path) -> None:
    """CreateTableVersion from threads of one instance: the commit points (inserts) of versions of several tables
    and a duplicate version are grouped, then their repointing upserts; every committed version is final."""
    ns = make_ns(tmp_path / "root", managed=True)
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    template = tmp_path / "template.lance"
    build_template(template, 2)
    tables = [["a", f"t{i}"] for i in range(4)]
    staged = {}
    for table in tables:
        directory = Path(ns.declare_table(ln.DeclareTableRequest(id=table)).location.removeprefix("file://"))
        adopt_template(directory, template)
        staged[tuple(table)] = copy_staged(directory, template, 1)
    second = copy_staged(Path(ns.describe_table(ln.DescribeTableRequest(id=tables[0])).location[7:]), template, 1)
    held = HeldGroups(ns.manifest)

    def commit(table: list[str], path: str) -> Callable[[], Any]:
        return lambda: ns.create_table_version(ln.CreateTableVersionRequest(id=table, version=1, manifest_path=path))

    calls = [commit(table, staged[tuple(table)]) for table in tables] + [commit(tables[0], second)]
    with running(calls, held) as outcomes:
        pass
    assert _error_names(outcomes) == ["ok", "ok", "ok", "ok", "ConcurrentModificationError"]
    assert held.sizes[:2] == [1, 4]  # the inserts of the waiting requests: one group (the duplicate fails in it)
    assert len(held.sizes) < 1 + 4 + 4  # the repointing upserts were grouped too
    for table in tables:
        assert versions(ns, table) == [1]
        assert read(ns, table).version == 1
    for table in tables:  # each version answered final (its repoint deferred to the next insert: seed 003 step 4)
        described = ns.describe_table_version(ln.DescribeTableVersionRequest(id=table, version=1)).version
        assert ".manifest-" not in described.manifest_path


# -- processes --------------------------------------------------------------------------------------------------
def _declare_from_threads(root: str, names: list[str]) -> list[tuple[str, str]]:
    """A spawned process: 8 threads of one instance declare ``names`` (each name once); (name, outcome)."""
    ns = DirectoryNamespace(root=root)

    def one(name: str) -> tuple[str, str]:
        try:
            ns.declare_table(ln.DeclareTableRequest(id=["a", name]))
            return name, "ok"
        except ln.LanceNamespaceError as error:
            return name, type(error).__name__

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, names))


@pytest.mark.slow  # starts processes of its own
def test_threads_in_several_processes_one_winner_per_id_nothing_lost(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    shared = [f"s{i}" for i in range(24)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        results = pool.starmap(
            _declare_from_threads, [(str(tmp_path), shared + [f"p{p}_{i}" for i in range(16)]) for p in range(3)]
        )
    outcomes: dict[str, list[str]] = {}
    for name, outcome in (pair for result in results for pair in result):
        outcomes.setdefault(name, []).append(outcome)
    for name in shared:
        assert sorted(outcomes[name])[-1] == "ok" and outcomes[name].count("ok") == 1, (name, outcomes[name])
        assert set(outcomes[name]) <= {"ok", "TableAlreadyExistsError", "ConcurrentModificationError"}
    assert all(outcomes[f"p{p}_{i}"] == ["ok"] for p in range(3) for i in range(16))
    expected = sorted(shared + [f"p{p}_{i}" for p in range(3) for i in range(16)])
    assert sorted(ns.list_tables(ln.ListTablesRequest(id=["a"], limit=1000)).tables) == expected
    reference = ReferenceNamespace(root=str(tmp_path))
    assert sorted(reference.list_tables(ln.ListTablesRequest(id=["a"], limit=1000)).tables) == expected
    rows = [row for row in ns.manifest.query() if row.object_type == "table"]
    assert len(rows) == len(expected)  # no duplicate row
    assert {path.name for path in tmp_path.iterdir() if path.name != "__manifest"} == {row.location for row in rows}


def _hold_turn(key: str, held: Any, release: Any) -> None:
    with MachineTurn(key).hold():
        held.set()
        release.wait(WAIT)


@contextmanager
def _another_process_holds(key: str) -> Iterator[tuple[Any, Any]]:
    """Another process holds the machine turn ``key`` until ``release`` is set (or the block ends); yields
    (the process, release)."""
    context = multiprocessing.get_context("spawn")
    held, release = context.Event(), context.Event()
    holder = context.Process(target=_hold_turn, args=(key, held, release))
    holder.start()
    try:
        assert held.wait(WAIT)
        yield holder, release
    finally:
        release.set()
        holder.join(WAIT)


@pytest.mark.slow  # starts processes of its own
def test_writer_processes_of_a_machine_take_turns(tmp_path: Path) -> None:
    key = f"test {tmp_path}"
    with _another_process_holds(key) as (_, release):
        turn = MachineTurn(key)
        answers: list[bool] = []

        def take() -> None:
            with turn.hold() as another_process:
                answers.append(another_process)

        taker = threading.Thread(target=take)
        taker.start()
        taker.join(0.2)
        assert answers == []  # still waiting for the other process
        release.set()
        taker.join(WAIT)
        assert answers == [True]
        with turn.hold() as another_process:  # free now: taken at once, and shared by this process's threads
            assert another_process is False
            with turn.hold() as again:
                assert again is False


@pytest.mark.slow  # starts processes of its own
def test_a_stuck_machine_turn_is_passed_by_after_the_one_wait_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The machine turn waits no longer than ``TURN_WAIT_SECONDS``, the bound of every turn: a holder that does
    not finish (a stuck process) is passed by, and the caller is told another process held the turn."""
    monkeypatch.setattr("airflow_provider_lance.namespace.writers_turn.TURN_WAIT_SECONDS", 0.2)
    key = f"stuck {tmp_path}"
    with _another_process_holds(key) as (holder, release):
        passed = threading.Event()

        def take() -> None:
            with MachineTurn(key).hold() as another_process:
                assert another_process is True
                passed.set()

        taker = threading.Thread(target=take)
        taker.start()
        taker.join(WAIT)
        assert passed.is_set()  # went ahead while the other process still holds the turn
        assert holder.is_alive() and not release.is_set()


def _free(key: str) -> bool:
    """Whether the machine turn ``key`` can be taken at once: a new ``MachineTurn`` opens its own file, which
    ``flock`` treats like another process's."""
    turn = MachineTurn(key)
    descriptor = turn._open()
    assert descriptor is not None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(descriptor)
    return True


@pytest.mark.slow  # starts processes of its own
def test_threads_waiting_for_the_machine_turn_are_handed_it_together_then_it_is_free(tmp_path: Path) -> None:
    """The threads of a process that wait for a busy turn all get it when the other process releases it (one
    ``flock`` blocked for them), and the process gives it back once the last of them is done."""
    key = f"handed {tmp_path}"
    turn = MachineTurn(key)
    inside, leave = threading.Barrier(4, timeout=WAIT), threading.Event()  # the takers and this thread
    answers: list[bool] = []

    def take() -> None:
        with turn.hold() as another_process:
            answers.append(another_process)
            inside.wait()  # all three hold it at once: shared by the process's threads
            assert leave.wait(WAIT)

    with _another_process_holds(key) as (_, release):
        takers = [threading.Thread(target=take) for _ in range(3)]
        for taker in takers:
            taker.start()
        while turn._waiters < 3:  # every one of them waits for the other process
            time.sleep(0.01)
        assert answers == [] and turn._blocked
        release.set()
        inside.wait()
        assert answers == [True, True, True] and not _free(key)
        leave.set()
        for taker in takers:
            taker.join(WAIT)
    assert _free(key)


@pytest.mark.slow  # starts processes of its own
def test_a_machine_turn_freed_after_its_waiters_went_ahead_is_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiter that went ahead at the wait bound leaves its blocked ``flock`` behind: when the other process
    releases the turn, that ``flock`` gives it back at once instead of keeping it from every other process."""
    monkeypatch.setattr("airflow_provider_lance.namespace.writers_turn.TURN_WAIT_SECONDS", 0.2)
    key = f"given back {tmp_path}"
    turn = MachineTurn(key)
    with _another_process_holds(key) as (_, release):
        with turn.hold() as another_process:  # went ahead without the turn after 0.2 s
            assert another_process is True
        assert turn._blocked
        release.set()
    deadline = time.monotonic() + WAIT
    while turn._blocked and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not turn._blocked and turn._holders == 0 and not turn._granted
    assert _free(key)
    with turn.hold() as another_process:  # and this process takes it again at once
        assert another_process is False


def test_declare_tables_answers_each_request_and_commits_once(tmp_path: Path) -> None:
    """Many declares in one call (what the REST server sends): one ``__manifest`` commit for the ones that
    land, and each request its own answer, as separate calls would give; a refused declare leaves no marker."""
    ns = DirectoryNamespace(root=str(tmp_path), manifest_maintenance_every="0")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["db"]))
    ns.declare_table(ln.DeclareTableRequest(id=["db", "existing"]))
    before = lance.dataset(str(tmp_path / "__manifest")).version
    requests: list[Any] = [
        ln.DeclareTableRequest(id=["db", "a"], properties={"k": "v"}),
        ln.DeclareTableRequest(id=["db", "existing"]),
        {"id": ["db", "b"]},
        ln.DeclareTableRequest(id=["db", "a"]),  # the second of one name fails alone
        ln.DeclareTableRequest(id=["nope", "c"]),
        {"id": 7},  # a request that does not parse
        ln.DeclareTableRequest(id=["db", "e"]),
    ]
    outcomes = ns.declare_tables(requests)
    kinds = [type(outcome).__name__ for outcome in outcomes]
    assert kinds == [
        "DeclareTableResponse",
        "TableAlreadyExistsError",
        "DeclareTableResponse",
        "TableAlreadyExistsError",
        "NamespaceNotFoundError",
        "InvalidInputError",
        "DeclareTableResponse",
    ]
    assert outcomes[0].properties == {"k": "v"} and outcomes[0].location.endswith("$a")
    assert lance.dataset(str(tmp_path / "__manifest")).version == before + 1
    reference = ReferenceNamespace(root=str(tmp_path))
    assert sorted(reference.list_tables(ln.ListTablesRequest(id=["db"])).tables) == ["a", "b", "e", "existing"]
    markers = sorted(path.parent.name.split("$")[-1] for path in tmp_path.glob("*/.lance-reserved"))
    assert markers == ["a", "b", "e", "existing"]


def test_a_last_commit_attempt_that_landed_without_its_answer_keeps_its_data_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The retries run out on a commit whose answer was lost although it landed: its data file stays (a version
    references it), the catalog reads, and the declare's retry finds the table there."""
    ns = DirectoryNamespace(root=str(tmp_path), commit_retries="1")
    ns.create_namespace(ln.CreateNamespaceRequest(id=["a"]))
    commit_append = fragments.commit_append
    attempts: list[int] = []

    def conflict_then_lost_answer(dataset: Any, written: Any, options: Any) -> Any:
        attempts.append(dataset.version)
        if len(attempts) == 1:
            raise OSError("Commit conflict for version 3: another writer committed first")
        commit_append(dataset, written, options)
        raise OSError("LanceError(IO): error sending request: connection reset by peer")

    monkeypatch.setattr(fragments, "commit_append", conflict_then_lost_answer)
    with pytest.raises(ln.ConcurrentModificationError):
        ns.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
    monkeypatch.undo()
    assert len(attempts) == 2
    assert DirectoryNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    assert ReferenceNamespace(root=str(tmp_path)).list_tables(ln.ListTablesRequest(id=["a"])).tables == ["t"]
    with pytest.raises(ln.TableAlreadyExistsError):
        ns.declare_table(ln.DeclareTableRequest(id=["a", "t"]))
