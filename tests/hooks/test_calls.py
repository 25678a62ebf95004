"""How the hook checks responses (request forms: tests/implementations/test_calls.py)."""

from __future__ import annotations

import lance_namespace as ln
import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.hooks.calls import as_model


def test_as_model_validates():
    assert as_model({"version": 2, "manifest_path": "m"}, ln.TableVersion).version == 2
    assert as_model(None, ln.TableVersion) is None
    with pytest.raises(AirflowException, match="invalid TableVersion"):
        as_model({"version": "not a number"}, ln.TableVersion)


def test_removed_aliases_are_not_the_engine(set_conn):
    from airflow_provider_lance.hooks.lance import LanceHook

    set_conn(extra={"impl": "default"})
    with pytest.raises(AirflowException, match="Cannot build Lance namespace 'default'"):
        LanceHook().get_conn()
