"""test_connection reports the root, the mode and counts; implementation keys in the connection extra."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_lance.hooks.connection import ENGINE_IMPL, namespace_config
from airflow_provider_lance.hooks.lance import LanceHook


def test_missing_root_fails(set_conn, engine_impl, tmp_path):
    set_conn(engine_impl, root=tmp_path / "nowhere")
    ok, message = LanceHook().test_connection()
    assert not ok
    assert "does not exist" in message
    assert not (tmp_path / "nowhere").exists()


@contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """Make ``directory`` refuse new entries for this process, root included (CI runs as root, and root ignores
    file modes): the immutable attribute as root, the owner's write bit otherwise. Fails, never skips, when the
    directory still takes a write."""
    as_root = os.geteuid() == 0
    if as_root:
        subprocess.run(["chattr", "+i", str(directory)], check=True)
    else:
        directory.chmod(0o500)
    try:
        with pytest.raises(PermissionError):
            (directory / "probe").write_bytes(b"")
        yield
    finally:
        if as_root:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
        else:
            directory.chmod(0o700)


@pytest.mark.parametrize("impl", ["dir", "default"])
def test_unwritable_root_fails(set_conn, impl, lance_root):
    # The hook probes the root itself for a directory catalog, ours or the reference's; through a REST server it
    # asks the server's readiness route, which never writes (it is polled), so it cannot tell.
    set_conn(impl)
    with unwritable(lance_root):
        ok, message = LanceHook().test_connection()
    assert not ok
    assert "not writable" in message or "cannot be used" in message


@pytest.mark.parametrize(("extra", "mode"), [({}, "off"), ({"table_version_management": "true"}, "on")])
def test_reports_mode_and_counts_and_creates_nothing(set_conn, engine_impl, lance_root, extra, mode):
    set_conn(engine_impl, extra=extra)
    hook = LanceHook()
    hook.create_namespace("demo")
    before = sorted(p.name for p in lance_root.iterdir())
    ok, message = hook.test_connection()
    assert ok, message
    if engine_impl == "rest":  # a REST server does not say how it keeps its catalog
        assert "layout unknown, table version management unknown" in message
    else:
        assert "layout V1+V2 compat" in message
        assert f"table version management {mode}" in message
    assert "1 namespace(s), 0 table(s)" in message
    assert sorted(p.name for p in lance_root.iterdir()) == before


def _conn(extra, host=None):
    return SimpleNamespace(conn_id="c", host=host, login=None, password=None, extra_dejson=extra)


def test_implementation_keys():
    impl, props = namespace_config(_conn({"dir.root": "/data", "dir.manifest_enabled": "true"}), lambda _: None)
    assert impl == ENGINE_IMPL
    assert props == {"root": "/data", "manifest_enabled": "true"}
    impl, props = namespace_config(_conn({"impl": "rest", "rest.uri": "http://x", "dir.root": "/ignored"}), print)
    assert (impl, props) == ("rest", {"uri": "http://x"})
    _, props = namespace_config(_conn({"root": "/plain", "dir.root": "/prefixed"}), print)
    assert props["root"] == "/plain"
    _, props = namespace_config(_conn({"extra__lance__table_version_management": True}, host="/r"), print)
    assert props == {"root": "/r", "table_version_management": "true"}
