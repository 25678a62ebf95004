"""Namespace operators against real local namespaces."""

from __future__ import annotations

import pytest
from airflow.providers.common.compat.sdk import AirflowException

from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator, LanceDropNamespaceOperator
from tests.airflow_helpers import ENGINE_ONLY
from tests.operators.context import make_context


@ENGINE_ONLY
def test_namespace_operators(hook):
    created = LanceCreateNamespaceOperator(task_id="c", namespace_id="a").execute(make_context())
    assert created == {"namespace_id": ["a"], "created": True}
    again = LanceCreateNamespaceOperator(task_id="c", namespace_id=["a"]).execute(make_context())
    assert again == {"namespace_id": ["a"], "created": False}
    with pytest.raises(AirflowException, match="already exists"):
        LanceCreateNamespaceOperator(task_id="c", namespace_id="a", if_exists="fail").execute(make_context())
    assert LanceDropNamespaceOperator(task_id="d", namespace_id="a").execute(make_context())["dropped"]
    with pytest.raises(AirflowException, match="does not exist"):
        LanceDropNamespaceOperator(task_id="d", namespace_id="a").execute(make_context())
    result = LanceDropNamespaceOperator(task_id="d", namespace_id="a", ignore_if_missing=True).execute(make_context())
    assert result == {"namespace_id": ["a"], "dropped": False}
