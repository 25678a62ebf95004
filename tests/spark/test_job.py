"""The staging job's choice of implementation (no Spark needed): ``auto`` is our engine or an import error."""

from __future__ import annotations

import sys
from pathlib import Path

import lance.namespace
import pytest

from airflow_provider_lance.namespace import DirectoryNamespace
from airflow_provider_lance.spark.job import build_namespace


def test_auto_is_the_engine(tmp_path: Path) -> None:
    assert type(build_namespace("auto", {"root": str(tmp_path)})) is DirectoryNamespace


def test_auto_fails_when_the_engine_does_not_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job meant to stage for an atomic batch commit must not run on another engine without saying so."""
    monkeypatch.setitem(sys.modules, "airflow_provider_lance.namespace", None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"airflow_provider_lance\.namespace"):
        build_namespace("auto", {"root": str(tmp_path)})


def test_another_engine_only_by_name(tmp_path: Path) -> None:
    assert isinstance(build_namespace("dir", {"root": str(tmp_path)}), lance.namespace.DirectoryNamespace)
