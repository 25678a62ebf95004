"""Lance's dataset APIs on a managed catalog on S3 (moto), a representative subset of
tests/namespace/test_dataset_apis_managed.py (issue 37): branches, clean-ups that remove versions (all but the
latest, a hole, lancedb's optimize) and a write and a restore, each on our engine (managed) and on the reference
(tracking) from the same start, then compared, and the reference reading our catalog."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import lance
import pytest
from lance.namespace import DirectoryNamespace as ReferenceNamespace

from tests.namespace.dataset_apis import MANAGED, Side, make_side, rows, run_on, view
from tests.namespace.test_dataset_apis_managed import SCENARIOS
from tests.s3.conftest import BUCKET, MotoServer

pytestmark = pytest.mark.s3

SUBSET = ("append", "merge_insert", "restore", "cleanup_retain", "cleanup_middle", "lancedb_maintenance")


@pytest.fixture(scope="module")
def sides(moto_server: MotoServer) -> dict[str, Side]:
    """One catalog per engine for the module, each under its own prefix of the session's bucket."""
    options = moto_server.storage_options()
    prefix = f"s3://{BUCKET}/dataset-apis-{uuid.uuid4().hex[:8]}"
    return {kind: make_side(kind, f"{prefix}/{kind}", options) for kind in ("ours", "reference")}


@pytest.fixture(scope="module")
def reader(sides: dict[str, Side]) -> Side:
    ours = sides["ours"]
    properties = {**MANAGED["reference"], **{k: v for k, v in ours.properties.items() if k.startswith("storage.")}}
    return Side("reference", ours.root, ReferenceNamespace(root=ours.root, **properties), properties, ours.options)


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
@pytest.mark.parametrize("scenario", SUBSET)
def test_dataset_api_matches_the_reference_on_s3(sides: dict[str, Side], reader: Side, scenario: str) -> None:
    results = run_on(sides, scenario, SCENARIOS[scenario])
    assert results["ours"] == results["reference"]
    assert view(reader, scenario) == results["ours"]["view"]


def test_branch_and_clean_up_on_s3(sides: dict[str, Side], reader: Side) -> None:
    """A branch of a managed table on S3, then a clean-up of the main line: the same answers on both engines."""
    views: dict[str, Any] = {}
    for kind, side in sides.items():
        run_on({kind: side}, "branch", lambda side, name: None)
        branch = side.open("branch").create_branch("dev")
        lance.write_dataset(rows([100]), branch, mode="append")
        side.open("branch").cleanup_old_versions(older_than=timedelta(0))
        views[kind] = (view(side, "branch"), view(side, "branch", branch="dev"))
    assert views["ours"] == views["reference"]
    assert views["ours"][0]["listed"] == [3] and views["ours"][1]["listed"] == [3, 4]
    assert (view(reader, "branch"), view(reader, "branch", branch="dev")) == views["ours"]
