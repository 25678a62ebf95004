"""Our engine and the reference writing one local catalog at the same time, from separate processes: nothing
lost, no spurious error, exactly one winner per contended id, and both see everything (issue 12, point 3)."""

from __future__ import annotations

from pathlib import Path

import lance_namespace as ln
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.cross_writers import race

pytestmark = pytest.mark.slow  # starts processes of its own

ROUNDS = 6


def check_race(props: dict[str, str], kinds: list[str]) -> None:
    outcomes = race(props, kinds, ROUNDS)
    spurious = [outcome for results in outcomes for what, outcome in results if what != "shared" and outcome != "ok"]
    assert spurious == []
    for round_number in range(ROUNDS):
        shared = [results[3 * round_number + 2][1] for results in outcomes]
        assert shared.count("ok") == 1, shared
        # a loser of ours hears AlreadyExists; the reference's loser says AlreadyExists or ConcurrentModification
        for kind, outcome in zip(kinds, shared, strict=True):
            losers = {"NamespaceAlreadyExistsError"}
            if kind == "reference":
                losers.add("ConcurrentModificationError")
            assert outcome == "ok" or outcome in losers, (kind, outcome)
    expected = {f"{kind}{index}_{i}" for index, kind in enumerate(kinds) for i in range(ROUNDS)}
    expected |= {f"shared_{i}" for i in range(ROUNDS)}
    # both readers are asked before anything is asserted: a failure says which of them misses what
    seen = {}
    for label, reader in (("ours", DirectoryNamespace(**props)), ("reference", ReferenceNamespace(**props))):
        namespaces = set(reader.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces)
        tables = {name: _tables(reader, name) for name in expected - {f"shared_{i}" for i in range(ROUNDS)}}
        seen[label] = (namespaces ^ expected, {name: found for name, found in tables.items() if found != ["t"]})
    assert seen == {"ours": (set(), {}), "reference": (set(), {})}, (seen, outcomes)


def _tables(reader: DirectoryNamespace | ReferenceNamespace, namespace: str) -> list[str] | str:
    """The namespace's tables, or the error a reader answers (so that a failure shows both readers' views)."""
    try:
        return reader.list_tables(ln.ListTablesRequest(id=[namespace])).tables
    except ln.LanceNamespaceError as error:
        return f"{type(error).__name__}: {error}"


def test_ours_and_the_reference_race_on_one_local_catalog(tmp_path: Path) -> None:
    check_race({"root": str(tmp_path)}, ["ours", "reference", "ours", "reference"])
