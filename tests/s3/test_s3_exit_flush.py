"""A writer process that exits normally makes its deferred repoint on object stores too (issue 42): the flush
runs before the interpreter stops the thread pools the store's clients use."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from tests.namespace.helpers_versions import version_rows
from tests.s3.conftest import ObjectStore

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys, lance, pyarrow as pa
from airflow_provider_lance.namespace import DirectoryNamespace
ns = DirectoryNamespace(**json.loads(sys.argv[1]))
lance.write_dataset(pa.table({"id": [2]}), namespace_client=ns, table_id=["t"], mode="append")
"""


@pytest.mark.s3
def test_a_writer_that_exits_repoints_its_last_version(object_store: ObjectStore) -> None:
    props = {**object_store.properties(), "table_version_management": "true"}
    lance.write_dataset(pa.table({"id": [1]}), namespace_client=DirectoryNamespace(**props), table_id=["t"])
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(props)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "left to readers" not in done.stderr, done.stderr
    pending = [oid for oid, meta in version_rows(DirectoryNamespace(**props)).items() if ".manifest-" in str(meta)]
    assert pending == [], pending
