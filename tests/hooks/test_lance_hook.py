"""LanceHook against real local namespaces (the reference and, when importable, our engine)."""

from __future__ import annotations

import json
import logging

import lance_namespace as ln
import pytest

from airflow_provider_lance.hooks.lance import DEFAULT_IMPL, LanceHook
from airflow_provider_lance.implementations import response_model
from tests.airflow_helpers import stage_append, write_table


class TestConfig:
    def test_properties_from_connection(self, monkeypatch):
        monkeypatch.setenv(
            "AIRFLOW_CONN_LANCE_DEFAULT",
            json.dumps(
                {
                    "conn_type": "lance",
                    "host": "s3://bucket/prefix",
                    "login": "AKIAEXAMPLE",
                    "password": "very-secret-key-123",
                    "extra": {
                        "storage_options": {"region": "eu-west-1", "allow_http": True},
                        "manifest_enabled": True,
                        "dir_listing_enabled": "false",
                        "table_version_management": "true",
                    },
                }
            ),
        )
        impl, props = LanceHook().get_namespace_config()
        assert impl == DEFAULT_IMPL
        assert props == {
            "root": "s3://bucket/prefix",
            "storage.region": "eu-west-1",
            "storage.allow_http": "true",
            "storage.aws_access_key_id": "AKIAEXAMPLE",
            "storage.aws_secret_access_key": "very-secret-key-123",
            "manifest_enabled": "true",
            "dir_listing_enabled": "false",
            "table_version_management": "true",
        }

    def test_root_extra_and_impl_alias(self, monkeypatch):
        monkeypatch.setenv(
            "AIRFLOW_CONN_LANCE_DEFAULT",
            json.dumps({"conn_type": "lance", "extra": {"root": "file:///data/x", "impl": "dir"}}),
        )
        assert LanceHook().get_namespace_config() == ("dir", {"root": "file:///data/x"})

    def test_blank_form_fields_left_out_other_empty_extras_kept(self, monkeypatch, tmp_path):
        # the form stores a blank field as ""; an empty manifest_cache_dir is a setting (no machine cache)
        extra = {"impl": "", "root": "", "token_file": "", "manifest_cache_dir": ""}
        monkeypatch.setenv(
            "AIRFLOW_CONN_LANCE_DEFAULT", json.dumps({"conn_type": "lance", "host": str(tmp_path), "extra": extra})
        )
        hook = LanceHook()
        assert hook.get_namespace_config() == (DEFAULT_IMPL, {"root": str(tmp_path), "manifest_cache_dir": ""})
        assert hook.get_conn().config.manifest_cache_dir is None

    def test_full_class_path_impl(self, set_conn, lance_root):
        set_conn("lance.namespace.DirectoryNamespace")
        hook = LanceHook()
        # another implementation comes wrapped: every call goes through implementations.NamespaceCalls
        assert type(hook.get_conn().inner).__name__ == "DirectoryNamespace"
        assert hook.list_namespaces() == []

    def test_missing_root_fails_clearly(self, monkeypatch):
        monkeypatch.setenv("AIRFLOW_CONN_LANCE_DEFAULT", json.dumps({"conn_type": "lance", "extra": {"impl": "dir"}}))
        with pytest.raises(Exception, match="no namespace root"):
            LanceHook().get_conn()

    def test_secrets_never_in_errors_or_repr(self, set_conn, caplog):
        secret = "s3cr3t-passw0rd-value"
        set_conn("no.such.Namespace", password=secret, extra={"storage_options": {"session_token": "tok-en-123456"}})
        hook = LanceHook()
        with caplog.at_level(logging.DEBUG):
            with pytest.raises(Exception) as excinfo:
                hook.get_conn()
            ok, message = hook.test_connection()
        assert not ok
        for text in (str(excinfo.value), message, repr(hook), caplog.text):
            assert secret not in text
            assert "tok-en-123456" not in text
        assert "no.such.Namespace" in str(excinfo.value)
        assert excinfo.value.__cause__ is None

    def test_a_failed_mask_is_a_warning_naming_the_connection(self, set_conn, caplog, capsys, monkeypatch):
        """A secret that could not be masked may reach task logs: say so (never the secret itself)."""
        import airflow.providers.common.compat.sdk as sdk

        secret = "s3cr3t-never-logged"

        def refuse(value: str) -> None:
            raise RuntimeError(f"cannot mask {value}")

        monkeypatch.setattr(sdk, "mask_secret", refuse)
        set_conn(None, conn_id="lance_masked", password=secret)
        with caplog.at_level(logging.WARNING):
            LanceHook(lance_conn_id="lance_masked").get_namespace_config()
        logged = caplog.text + capsys.readouterr().out  # Airflow's structlog writes the task log to stdout
        assert "Connection 'lance_masked': a secret could not be masked in task logs (RuntimeError)" in logged
        assert secret not in logged

    def test_ui_metadata(self):
        behaviour = LanceHook.get_ui_field_behaviour()
        assert "port" in behaviour["hidden_fields"]
        from airflow_provider_lance.get_provider_info import get_provider_info

        info = get_provider_info()
        # one definition for both Airflow < 3.2 (hook classmethod) and >= 3.2 (provider info)
        ui = info["connection-types"][0]["ui-field-behaviour"]
        assert behaviour == {key.replace("-", "_"): value for key, value in ui.items()}
        behaviour["hidden_fields"].append("mutated")
        assert "mutated" not in LanceHook.get_ui_field_behaviour()["hidden_fields"]
        assert info["package-name"] == "airflow-provider-lance"
        (conn_type,) = info["connection-types"]
        assert conn_type["connection-type"] == LanceHook.conn_type == "lance"
        assert conn_type["hook-class-name"] == "airflow_provider_lance.hooks.lance.LanceHook"
        assert set(conn_type["conn-fields"]) == {"impl", "root", "token_file", "table_version_management"}


class TestOperations:
    def test_test_connection_creates_nothing(self, hook, lance_root):
        ok, message = hook.test_connection()
        assert ok, message
        assert "successfully" in message
        assert list(lance_root.iterdir()) == []

    def test_namespaces(self, hook):
        hook.create_namespace("a")
        hook.create_namespace(["a", "b"])
        assert hook.namespace_exists("a")
        assert hook.namespace_exists("a.b")
        assert not hook.namespace_exists("zz")
        assert hook.list_namespaces() == ["a"]
        assert hook.list_namespaces("a") == ["b"]
        hook.describe_namespace("a.b")
        with pytest.raises(ln.NamespaceAlreadyExistsError):
            hook.create_namespace("a")
        hook.drop_namespace("a.b")
        assert not hook.namespace_exists("a.b")
        with pytest.raises(ln.NamespaceNotFoundError):
            hook.describe_namespace("a.b")
        with pytest.raises(ln.NamespaceNotFoundError):  # what the operators' ignore_if_missing relies on
            hook.drop_namespace("a.b")

    def test_tables(self, hook, lance_root):
        hook.create_namespace("ns")
        declared = hook.declare_table("ns.t1")
        assert declared.location
        assert hook.table_exists("ns.t1")
        assert not hook.table_exists("ns.missing")
        assert not hook.table_exists("nope.missing")
        assert hook.describe_table(["ns", "t1"]).location == declared.location
        with pytest.raises(ln.TableAlreadyExistsError):
            hook.declare_table("ns.t1")
        write_table(hook.namespace, ["ns", "t2"])
        assert sorted(hook.list_tables("ns")) == ["t1", "t2"]
        hook.drop_table("ns.t2")
        assert not hook.table_exists("ns.t2")
        with pytest.raises(ln.TableNotFoundError):
            hook.drop_table("ns.t2")

    def test_register_and_deregister(self, hook, lance_root):
        hook.create_namespace("ns")
        write_table(hook.namespace, ["ns", "t"])
        location = hook.describe_table("ns.t").location
        deregistered = hook.deregister_table("ns.t")
        assert not hook.table_exists("ns.t")
        relative = location.rstrip("/").rsplit("/", 1)[-1]
        assert deregistered.location is None or deregistered.location.endswith(relative)
        registered = hook.register_table("ns.t_again", relative)
        assert hook.table_exists("ns.t_again")
        assert registered.location
        # what the operators' ignore_if_missing and their error messages rely on, on every implementation
        with pytest.raises(ln.TableNotFoundError):
            hook.deregister_table("ns.t")
        with pytest.raises(ln.InvalidInputError):
            hook.register_table("ns.elsewhere", "/abs/path")

    def test_list_tables_follows_pages(self, hook):
        hook.create_namespace("ns")
        for i in range(5):
            hook.declare_table(["ns", f"t{i}"])
        assert hook.list_tables("ns", limit=2) == [f"t{i}" for i in range(5)]

    def test_list_namespaces_follows_pages(self, hook):
        for i in range(5):
            hook.create_namespace(f"n{i}")
        assert hook.list_namespaces(limit=2) == [f"n{i}" for i in range(5)]

    def test_every_list_follows_page_tokens(self, hook, monkeypatch):
        pages = {None: {"items": [1, 2], "page_token": "p2"}, "p2": {"items": [3], "page_token": None}}
        calls = []

        def fake_call(operation, request):
            calls.append((operation, request.page_token))
            page = pages[request.page_token]
            field = {"list_namespaces": "namespaces", "list_tables": "tables"}.get(operation, "versions")
            if field == "versions":
                items = [{"version": i, "manifest_path": f"m{i}"} for i in page["items"]]
            else:
                items = [f"x{i}" for i in page["items"]]
            return response_model(operation).model_validate({field: items, "page_token": page["page_token"]})

        monkeypatch.setattr(hook, "_call", fake_call)
        assert hook.list_namespaces() == ["x1", "x2", "x3"]
        assert hook.list_tables("ns") == ["x1", "x2", "x3"]
        assert [v.version for v in hook.list_table_versions("t")] == [1, 2, 3]
        assert calls == [
            (op, token) for op in ("list_namespaces", "list_tables", "list_table_versions") for token in (None, "p2")
        ]

    def test_versions(self, hook):
        hook.create_namespace("ns")
        assert write_table(hook.namespace, ["ns", "t"]) == 1
        write_table(hook.namespace, ["ns", "t"], mode="append")
        write_table(hook.namespace, ["ns", "t"], mode="append")
        versions = hook.list_table_versions("ns.t")
        assert [v.version for v in versions] == [1, 2, 3]
        assert [v.version for v in hook.list_table_versions("ns.t", descending=True)] == [3, 2, 1]
        assert hook.describe_table_version("ns.t", 2).version == 2
        assert hook.get_latest_version("ns.t") == 3
        with pytest.raises(ln.TableVersionNotFoundError):
            hook.describe_table_version("ns.t", 42)
        assert hook.batch_delete_table_versions("ns.t", [(1, 3)]) == 2
        assert [v.version for v in hook.list_table_versions("ns.t")] == [3]

    def test_latest_version_of_declared_table_is_none(self, hook):
        hook.declare_table("t")
        assert hook.get_latest_version("t") is None

    def test_create_table_version_commits_staged_manifest(self, hook):
        write_table(hook.namespace, ["t"])
        entry = stage_append(hook.namespace, ["t"])
        assert hook.get_latest_version("t") == 1
        response = hook.create_table_version(
            "t",
            entry["version"],
            entry["manifest_path"],
            manifest_size=entry.get("manifest_size"),
            e_tag=entry.get("e_tag"),
            naming_scheme=entry.get("naming_scheme"),
        )
        assert response.version.version == 2
        assert hook.get_latest_version("t") == 2

    def test_check_table_version(self, hook):
        assert hook.check_table_version("t", version=1) == (False, None)
        write_table(hook.namespace, ["t"])
        assert hook.check_table_version("t", version=1) == (True, 1)
        assert hook.check_table_version("t", version=2) == (False, None)
        assert hook.check_table_version("t", min_version=2) == (False, 1)
        assert hook.check_table_version("t", baseline=1) == (False, 1)
        assert hook.check_table_version("t", baseline=0) == (True, 1)


def test_batch_create_table_versions(set_conn, engine_impl):
    set_conn(engine_impl)
    hook = LanceHook()
    write_table(hook.namespace, ["a"])
    write_table(hook.namespace, ["b"])
    entries = [stage_append(hook.namespace, ["a"]), stage_append(hook.namespace, ["b"])]
    response = hook.batch_create_table_versions(entries)
    assert [v.version for v in response.versions] == [2, 2]
    assert hook.get_latest_version("a") == 2
    assert hook.get_latest_version("b") == 2
