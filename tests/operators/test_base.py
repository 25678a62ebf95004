"""What every operator shares: templated fields, argument checks."""

from __future__ import annotations

import pytest

from airflow_provider_lance.operators.maintenance import LanceMaintainManifestOperator
from airflow_provider_lance.operators.namespace import LanceCreateNamespaceOperator, LanceDropNamespaceOperator
from airflow_provider_lance.operators.table import (
    LanceDeclareTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
    LanceRegisterTableOperator,
)
from airflow_provider_lance.operators.version import (
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
    LanceCreateTableVersionOperator,
)

ALL_OPERATORS = [
    LanceCreateNamespaceOperator,
    LanceDropNamespaceOperator,
    LanceDeclareTableOperator,
    LanceRegisterTableOperator,
    LanceDeregisterTableOperator,
    LanceDropTableOperator,
    LanceCreateTableVersionOperator,
    LanceBatchCreateTableVersionsOperator,
    LanceBatchDeleteTableVersionsOperator,
]


@pytest.mark.parametrize("op_class", ALL_OPERATORS)
def test_template_fields(op_class):
    assert isinstance(op_class.template_fields, tuple)
    assert "lance_conn_id" in op_class.template_fields
    ident = "namespace_id" if "Namespace" in op_class.__name__ else "table_id"
    if op_class is not LanceBatchCreateTableVersionsOperator:
        assert ident in op_class.template_fields
    else:
        assert {"entries", "entries_file"} <= set(op_class.template_fields)


def test_if_exists_is_validated():
    with pytest.raises(ValueError, match="if_exists"):
        LanceDeclareTableOperator(task_id="x", table_id="t", if_exists="replace")


def test_historical_module_reexports_every_operator():
    from airflow_provider_lance.operators import lance

    for op_class in [*ALL_OPERATORS, LanceMaintainManifestOperator]:
        assert getattr(lance, op_class.__name__) is op_class
