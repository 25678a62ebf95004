"""test_connection reports the root, the mode and counts; implementation keys in the connection extra."""

from __future__ import annotations

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


def test_unwritable_root_fails(set_conn, engine_impl, lance_root):
    lance_root.chmod(0o500)
    try:
        import os

        if os.access(lance_root, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        set_conn(engine_impl)
        ok, message = LanceHook().test_connection()
    finally:
        lance_root.chmod(0o700)
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
