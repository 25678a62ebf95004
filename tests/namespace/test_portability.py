"""The implementation's name resolves in any process: ``lance_namespace.connect`` with the class path works in
a worker that never imported this package (lance-ray, Spark executors), unlike a registered alias."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lance_namespace as ln
import pytest

from airflow_provider_lance.namespace import IMPL, DirectoryNamespace


def test_impl_is_the_class_path() -> None:
    assert IMPL == "airflow_provider_lance.namespace.DirectoryNamespace"
    assert isinstance(ln.connect(IMPL, {"root": "/tmp"}), DirectoryNamespace)


@pytest.mark.slow  # starts processes of its own
def test_a_fresh_process_connects_by_class_path(tmp_path: Path) -> None:
    ns = DirectoryNamespace(root=str(tmp_path))
    ns.create_namespace(ln.CreateNamespaceRequest(id=["made_here"]))
    script = (
        "import sys, lance_namespace as ln\n"
        "assert not any(m.startswith('airflow_provider_lance') for m in sys.modules)\n"
        "ns = ln.connect(sys.argv[1], {'root': sys.argv[2]})\n"
        "print(ns.list_namespaces(ln.ListNamespacesRequest(id=[])).namespaces)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, IMPL, str(tmp_path)], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "['made_here']"
