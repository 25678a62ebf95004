"""The in-memory index of ``__manifest`` rows (row_index.py) against a plain model: a dict of rows by id and
sorted lists. Random catalogs with names that sort awkwardly (``$`` below ``%``, spaces, ``#``, non-ASCII),
random chunking, appends, replacements, deletes and merges; then threads that read one index while others derive
the next."""

from __future__ import annotations

import itertools
import random
import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_lance.namespace import row_index, tuning
from airflow_provider_lance.namespace.identifiers import paginate
from airflow_provider_lance.namespace.manifest_rows import NAMESPACE, SCHEMA, TABLE, TABLE_VERSION
from airflow_provider_lance.namespace.row_index import RowIndex
from airflow_provider_lance.namespace.snapshots import Snapshot
from tests.races import BARRIER_SECONDS

PARTS = ["a", "b", "a b", "a#", "a%", "é", "中", "z", "?", "aa", "1", "10", "9", "123456789012345678901"]
TYPES = [NAMESPACE, TABLE, TABLE_VERSION]
# a table_version row points at a final manifest, or still at a staged one (a name with a ``.manifest-`` part
# elsewhere in the path or in user metadata is not staged), or has no metadata
METADATA = [
    None,
    '{"manifest_path":"x/_versions/18446744073709551613.manifest","e_tag":"1"}',
    '{"manifest_path":"x.manifest-y/_versions/18446744073709551613.manifest"}',
    '{"manifest_path":"x/_versions/18446744073709551613.manifest-5f3e-a1","naming_scheme":"V2"}',
]


def random_id(rng: random.Random) -> str:
    return "$".join(rng.choice(PARTS) for _ in range(rng.choice([1, 1, 2, 2, 3])))


def random_rows(rng: random.Random, count: int, taken: set[str]) -> list[dict[str, Any]]:
    rows = []
    while len(rows) < count:
        oid = random_id(rng) + ("" if rng.random() < 0.5 else str(rng.randrange(1000)))
        if oid in taken:
            continue
        taken.add(oid)
        location = None if rng.random() < 0.2 else f"loc/{oid.replace('$', '/')}"
        metadata = rng.choice(METADATA)
        rows.append(
            {"object_id": oid, "object_type": rng.choice(TYPES), "location": location, "metadata": metadata}
            | {"base_objects": None}
        )
    return rows


def chunked(rows: list[dict[str, Any]], rng: random.Random) -> pa.Table:
    """The rows as a table of random chunks (as a scan of several fragments reads them)."""
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    cuts = sorted({0, len(rows), *(rng.randrange(len(rows) + 1) for _ in range(rng.randrange(4)))})
    pieces = [table.slice(start, stop - start) for start, stop in itertools.pairwise(cuts)]
    return pa.concat_tables(pieces) if pieces else table


def key(name: str) -> bytes:
    return name.encode()


def check(index: RowIndex, model: dict[str, dict[str, Any]], rng: random.Random) -> None:
    """Every query of the index answers what the model answers."""
    assert sorted(index.table["object_id"].to_pylist()) == sorted(model)
    if index._tail_ids is not None:  # the short tail's sorted ids, derived commit by commit
        assert index._tail_ids == sorted(index.tail["object_id"].to_pylist())
    asked = [rng.choice(list(model)) for _ in range(5)] if model else []
    asked += [random_id(rng) for _ in range(5)]
    assert index.rows(asked) == {oid: model[oid] for oid in asked if oid in model}
    prefixes = ["", *{oid.rsplit("$", 1)[0] + "$" for oid in asked if "$" in oid}, "a", "a$", "é$", "z$"]
    for prefix in prefixes:
        for object_type in (None, *TYPES):
            expected = [
                oid
                for oid, row in model.items()
                if oid.startswith(prefix) and (object_type is None or row["object_type"] == object_type)
            ]
            found = index.descendants(prefix, object_type).to_pylist()
            assert sorted(row["object_id"] for row in found) == sorted(expected)
            assert all(row == model[row["object_id"]] for row in found)
        assert index.has_descendants(prefix) == any(oid.startswith(prefix) for oid in model)
        for object_type in TYPES:
            names = [
                oid[len(prefix) :]
                for oid, row in model.items()
                if oid.startswith(prefix) and row["object_type"] == object_type and "$" not in oid[len(prefix) :]
            ]
            names = [name for name in names if name]
            assert list(index.child_names(prefix, object_type)) == sorted(names, key=key)
            after = rng.choice(names + PARTS)
            assert list(index.child_names(prefix, object_type, after)) == paginate(names, after, None)[0]
    for parent in [*asked, "a", "a b"]:
        expected_children = sorted(
            oid
            for oid, row in model.items()
            if oid.startswith(parent + "$")
            and row["object_type"] == TABLE_VERSION
            and "$" not in oid[len(parent) + 1 :]
        )
        versions = {
            int(oid[len(parent) + 1 :]): (oid, model[oid]["metadata"])
            for oid in expected_children
            if oid[len(parent) + 1 :].isdigit()
        }
        line = index.version_line(parent)
        assert line.rows == versions
        assert line.latest == max(versions, default=0)
        staged = [v for v, (_, meta) in versions.items() if meta is None or ".manifest-5f3e" in meta]
        assert line.staged == tuple(sorted(staged))
        assert index.version_line(parent) is line  # read once per index and table
    for oid in asked:
        location = f"loc/{oid.replace('$', '/')}"
        overlapping = [
            (row["location"], row["object_id"])
            for row in model.values()
            if row["object_type"] == TABLE
            and row["location"]
            and (
                row["location"] == location
                or location.startswith(row["location"] + "/")
                or row["location"].startswith(location + "/")
            )
        ]
        found_overlap = index.location_overlap(location)
        assert (found_overlap is None) == (not overlapping)
        assert found_overlap is None or found_overlap in overlapping


@pytest.mark.parametrize("seed", range(12))
def test_random_catalogs_answer_like_a_dict(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    monkeypatch.setattr(row_index, "TAIL_ROWS", 8)  # merges happen every few steps
    monkeypatch.setattr(row_index, "SORT_AT_ONCE", 0 if seed % 2 else 10**9)  # read whole: scanned, or sorted
    rng = random.Random(seed)
    taken: set[str] = set()
    rows = random_rows(rng, rng.randrange(0, 60), taken)
    model = {row["object_id"]: row for row in rows}
    index = RowIndex.of(chunked(rows, rng)) if rows else RowIndex.of(pa.Table.from_pylist([], schema=SCHEMA))
    if rng.random() < 0.5:
        index = index.merged()
    check(index, model, rng)
    for _ in range(25):
        step = rng.random()
        if step < 0.5:
            added = random_rows(rng, rng.randrange(1, 12), taken)
            index = index.appended(chunked(added, rng))
            model.update((row["object_id"], row) for row in added)
        elif step < 0.65:  # a repoint: rows replaced by id (in the tail or the base), new ones added after them
            pool = index.tail["object_id"].to_pylist() if rng.random() < 0.7 else sorted(model)  # mostly the tail's
            changed = [
                {**model[oid], "metadata": rng.choice(METADATA)}
                for oid in rng.sample(pool, min(len(pool), rng.randrange(1, 4)))
            ]
            added = changed + random_rows(rng, rng.randrange(3), taken)
            if added:
                index = index.replaced(chunked(added, rng))
                model.update((row["object_id"], row) for row in added)
        elif step < 0.8 and model:
            gone = set(rng.sample(sorted(model), rng.randrange(len(model) // 2 + 1)))
            index = index.filtered(pc.invert(pc.is_in(index.table["object_id"], pa.array(sorted(gone), pa.string()))))
            for oid in gone:
                del model[oid]
        else:
            index = index.merged()
            assert index.indexed == index.table.num_rows
        check(index, model, rng)


def test_a_table_read_whole_is_scanned_until_sorted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookups of large rows read whole scan them (no sort for a process that asks a few ids); a listing or
    ``SORT_AFTER`` scans sort them, and the sorted index answers the same."""
    monkeypatch.setattr(row_index, "SORT_AT_ONCE", 100)
    rng = random.Random(7)
    rows = random_rows(rng, row_index.TAIL_ROWS + 50, set())
    snapshot = Snapshot(1, {}, None, source=chunked(rows, rng))
    first = snapshot.index()
    assert first.unsorted and first.indexed == 0
    wanted = [row["object_id"] for row in rows[:3]]
    for _ in range(tuning.SORT_AFTER):
        assert set(snapshot.index().rows(wanted)) == set(wanted)
    assert snapshot.index() is not first and not snapshot.index().unsorted  # sorted after enough scans
    assert set(snapshot.index().rows(wanted)) == set(wanted)
    listing = Snapshot(1, {}, None, source=chunked(rows, rng))
    names = list(listing.index(ordered=True).child_names("", TABLE))
    assert not listing.index().unsorted
    assert names == sorted(
        (row["object_id"] for row in rows if row["object_type"] == TABLE and "$" not in row["object_id"]), key=key
    )


def test_a_page_reads_only_as_far_as_it_needs() -> None:
    """A page of a namespace with a deep subtree before its children jumps over it instead of reading it."""
    rows = [{"object_id": "ns", "object_type": NAMESPACE}]
    rows += [{"object_id": f"ns$a$v{i:06d}", "object_type": TABLE_VERSION} for i in range(20000)]
    rows += [{"object_id": f"ns$t{i}", "object_type": TABLE} for i in range(10)]
    rows += [{"object_id": "ns$a", "object_type": TABLE}]
    full = [row | {"location": None, "metadata": None, "base_objects": None} for row in rows]
    index = RowIndex.of(pa.Table.from_pylist(full, schema=SCHEMA)).merged()
    read: list[int] = []
    original = index._ids.slice

    class Counting:
        def __getattr__(self, name: str) -> Any:
            return getattr(index._ids, name)

        def slice(self, start: int, count: int) -> pa.Array:
            read.append(count)
            return original(start, count)

    index._ids = Counting()  # type: ignore[assignment]
    assert list(index.child_names("ns$", TABLE)) == ["a", *sorted((f"t{i}" for i in range(10)), key=key)]
    assert sum(read) < 1000


def test_threads_read_one_index_while_others_derive_the_next() -> None:
    """Readers of a published index keep getting its answers while writers derive new ones from it."""
    rng = random.Random(3)
    taken: set[str] = set()
    rows = random_rows(rng, 3000, taken)
    model = {row["object_id"]: row for row in rows}
    shared = RowIndex.of(chunked(rows, rng)).merged()
    errors: list[BaseException] = []
    stop = threading.Event()

    def read(seed: int) -> None:
        local = random.Random(seed)
        try:
            while not stop.is_set():
                oid = local.choice(rows)["object_id"]
                assert shared.rows([oid]) == {oid: model[oid]}
                prefix = oid.split("$", 1)[0] + "$"
                expected = sorted(
                    (
                        name
                        for o, r in model.items()
                        if o.startswith(prefix) and r["object_type"] == TABLE and "$" not in (name := o[len(prefix) :])
                    ),
                    key=key,
                )
                assert list(shared.child_names(prefix, TABLE)) == expected
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    def write(seed: int) -> None:
        local = random.Random(seed)
        derived = shared
        try:
            for _ in range(30):
                derived = derived.appended(chunked(random_rows(local, 200, set(taken)), local))
                derived = derived.filtered(pc.not_equal(derived.table["object_type"], NAMESPACE))
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    readers = [threading.Thread(target=read, args=(seed,)) for seed in range(4)]
    writers = [threading.Thread(target=write, args=(seed,)) for seed in range(100, 102)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors, errors[0]
    assert sorted(shared.table["object_id"].to_pylist()) == sorted(model)


def test_threads_share_one_sort_of_a_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads that ask a snapshot read whole for a listing at the same time get one sorted index."""
    monkeypatch.setattr(row_index, "SORT_AT_ONCE", 100)
    rng = random.Random(5)
    rows = random_rows(rng, row_index.TAIL_ROWS + 100, set())
    snapshot = Snapshot(1, {}, None, source=chunked(rows, rng))
    seen: list[RowIndex] = []
    barrier = threading.Barrier(8, timeout=BARRIER_SECONDS)

    def ask() -> None:
        barrier.wait()
        seen.append(snapshot.index(ordered=True))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(index) for index in seen}) == 1 and not seen[0].unsorted


def test_pages_of_a_namespace_list_every_child_once_in_byte_order(tmp_path: Any) -> None:
    """ListTables and ListNamespaces paged with every limit list each direct child once, in UTF-8 byte order,
    past subtrees of nested namespaces and with names that sort around the delimiter."""
    import lance_namespace as ln

    from airflow_provider_lance.namespace import DirectoryNamespace

    namespace = DirectoryNamespace(root=str(tmp_path))
    namespace.create_namespace(ln.CreateNamespaceRequest(id=["n"]))
    tables = ["a", "a b", "a#", "a%", "a?", "é", "中", "Z", "10", "9", "a%25"]
    children = ["a!", "m", "éé"]
    for child in children:
        namespace.create_namespace(ln.CreateNamespaceRequest(id=["n", child]))
        namespace.declare_table(ln.DeclareTableRequest(id=["n", child, "inner"]))
    for name in tables:
        namespace.declare_table(ln.DeclareTableRequest(id=["n", name]))
    for limit in (1, 2, 3, 5, len(tables), len(tables) + 1):
        for method, request, expected in (
            (namespace.list_tables, ln.ListTablesRequest, tables),
            (namespace.list_namespaces, ln.ListNamespacesRequest, children),
        ):
            listed, token = [], None
            while True:
                page = method(request(id=["n"], limit=limit, page_token=token))
                names = page.tables if method == namespace.list_tables else page.namespaces
                listed += names
                token = page.page_token
                assert len(names) <= limit and (token is None or token == names[-1])
                if token is None:
                    break
            assert listed == sorted(expected, key=key)


def test_staged_candidates_and_version_lines_are_derived_commit_by_commit() -> None:
    """The candidate ids of rows still pointing at a staged manifest, and a table's version line, are the same
    derived through appends, repoints (in the tail and in the sorted base) and deletes as read afresh."""
    final, staged = METADATA[1], METADATA[3]

    def table(rows: list[tuple[str, str, str | None]]) -> pa.Table:
        return pa.Table.from_pylist(
            [
                {"object_id": o, "object_type": t, "location": None, "metadata": m, "base_objects": None}
                for o, t, m in rows
            ],
            schema=SCHEMA,
        )

    def same_as_fresh(index: RowIndex) -> list[str]:
        fresh = RowIndex.of(index.table)
        assert index.staged_ids() == fresh.staged_ids()
        for oid in ("t", "u"):
            derived, read = index.version_line(oid), fresh.version_line(oid)
            assert (sorted(derived.rows), derived.staged, derived.latest) == (
                sorted(read.rows),
                read.staged,
                read.latest,
            )
            assert {v: derived.rows[v] for v in derived.rows} == {v: read.rows[v] for v in read.rows}
            assert index.has_staged(oid) == bool(read.staged)
        return index.staged_ids()

    index = RowIndex.of(table([("t", TABLE, None), ("t$1", TABLE_VERSION, final), ("t$2", TABLE_VERSION, staged)]))
    assert same_as_fresh(index) == ["t$2"]
    index = index.appended(table([("u", TABLE, None), ("u$1", TABLE_VERSION, staged), ("t$3", TABLE_VERSION, staged)]))
    assert same_as_fresh(index) == ["t$2", "t$3", "u$1"]
    index = index.replaced(table([("u$1", TABLE_VERSION, final)]))  # a repoint of a row in the tail
    assert same_as_fresh(index) == ["t$2", "t$3"]
    index = index.replaced(table([("t$2", TABLE_VERSION, final)]))  # a repoint of a row in the sorted base
    assert same_as_fresh(index) == ["t$3"]
    index = index.filtered(pc.not_equal(index.table["object_id"], "t$3"))
    assert same_as_fresh(index) == []
    assert index.version_line("t").latest == 2 and 3 not in index.version_line("t").rows


def test_staged_candidates_match_alike_in_python_and_in_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit's few rows are matched in Python, a version read whole with pyarrow: one pattern, one answer."""
    rng = random.Random(7)
    rows = pa.Table.from_pylist(random_rows(rng, 200, set()), schema=SCHEMA)
    in_pyarrow = row_index._staged_candidates(rows)
    monkeypatch.setattr(row_index, "ROWS_IN_PYTHON", rows.num_rows)
    assert row_index._staged_candidates(rows) == in_pyarrow
    assert 0 < len(in_pyarrow) < rows.num_rows
