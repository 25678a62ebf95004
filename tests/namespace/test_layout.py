"""The engine's architecture rules: no Airflow imports, and no import circle among its modules (type-only
imports included, since a circle broken only by ``TYPE_CHECKING`` is still a circle in the design)."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import airflow_provider_lance.namespace as engine

PACKAGE = "airflow_provider_lance.namespace"
ROOT = Path(engine.__file__).parent


def _module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = [part for part in relative.parts if part != "__init__"]
    return ".".join([PACKAGE, *parts])


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


MODULES = {_module_name(path): _imports(path) for path in ROOT.rglob("*.py")}


def test_the_engine_does_not_import_airflow() -> None:
    offenders = {name: sorted(i for i in imports if i.split(".")[0] == "airflow") for name, imports in MODULES.items()}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_engine_modules_import_each_other_without_a_circle() -> None:
    graph = {
        name: {imported for imported in imports if imported in MODULES and imported != name and imported != PACKAGE}
        for name, imports in MODULES.items()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the circle


def test_engine_modules_stay_small() -> None:
    sizes = {_module_name(path): len(path.read_text().splitlines()) for path in ROOT.rglob("*.py")}
    assert {name: lines for name, lines in sizes.items() if lines > 450} == {}
