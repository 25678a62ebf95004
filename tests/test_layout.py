"""The provider's architecture, checked against the code: every module of the package sits in one layer of the
map in ``docs/architecture.md``, imports go only down those layers, and no modules import each other in a circle
(type-only imports included: a circle broken only by ``TYPE_CHECKING`` is still a circle in the design).
``tests/namespace/test_layout.py`` checks the engine's own layers."""

from __future__ import annotations

import ast
import graphlib
import re
from collections.abc import Collection
from pathlib import Path

import pytest

import airflow_provider_lance as package

PACKAGE = "airflow_provider_lance"
ROOT = Path(package.__file__).parent
MAP = ROOT.parent / "docs" / "architecture.md"
# The layers of docs/architecture.md, lowest first: a module imports its own layer or the ones before it.
LAYERS = ("protocol", "engine", "adapters", "servers", "airflow")


def _module_name(path: Path) -> str:
    parts = [part for part in path.relative_to(ROOT).with_suffix("").parts if part != "__init__"]
    return ".".join([PACKAGE, *parts])


FILES = {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imports_of(path: Path, modules: Collection[str]) -> set[str]:
    """Every module ``path`` imports (``from package import module`` names the module when it is one of
    ``modules``); the engine's layout test uses it too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else str(node.module))
    return found


IMPORTS = {
    name: {found for found in imports_of(path, FILES) if found in FILES} - {name} for name, path in FILES.items()
}


def _places() -> dict[str, str]:
    """place (a file or a folder ending in ``/``) → layer, from the map's ``| layer | place | ... |`` table."""
    lines = MAP.read_text().splitlines()
    start = lines.index("| layer | place | what lives there |")
    places: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        layer, cell = (part.strip() for part in line.split("|")[1:3])
        assert layer in LAYERS, f"unknown layer {layer!r} in docs/architecture.md: {line}"
        for place in re.findall(r"`([^`]+)`", cell):
            assert place not in places, f"{place} is listed twice in docs/architecture.md"
            places[place] = layer
    return places


def _layer_of(module: str, places: dict[str, str]) -> str | None:
    """The layer of the most specific place holding ``module`` (a file row beats its folder's)."""
    relative = str(FILES[module].relative_to(ROOT))
    for place in sorted(places, key=len, reverse=True):
        if relative == place or (place.endswith("/") and relative.startswith(place)):
            return places[place]
    return None


def _loaded(module: str, imports: dict[str, set[str]]) -> set[str]:
    """What importing ``module`` runs beside its own imports: the imports of its packages' ``__init__.py`` (the
    provider's own ``__init__.py`` holds only metadata)."""
    parts = module.split(".")
    return {found for end in range(2, len(parts)) for found in imports.get(".".join(parts[:end]), set())}


def _upward(imports: dict[str, set[str]]) -> list[str]:
    imports = {
        name: {*found, *_loaded(name, imports), *(x for module in found for x in _loaded(module, imports))} - {name}
        for name, found in imports.items()
    }
    places = _places()
    layer = {name: LAYERS.index(_layer_of(name, places) or LAYERS[-1]) for name in FILES}
    return sorted(
        f"{name} ({LAYERS[layer[name]]}) imports {imported} ({LAYERS[layer[imported]]})"
        for name, imported_modules in imports.items()
        for imported in imported_modules
        if layer[imported] > layer[name]
    )


def test_the_map_places_every_module_and_names_only_existing_places() -> None:
    places = _places()
    assert [name for name in FILES if _layer_of(name, places) is None] == []
    assert [place for place in places if not (ROOT / place).exists()] == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    graphlib.TopologicalSorter(IMPORTS).prepare()  # raises CycleError naming the circle


def test_imports_only_go_down_the_layers() -> None:
    assert _upward(IMPORTS) == []


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    """Not vacuous: the engine importing a hook is upward, and the REST client importing the registry while the
    registry imports the client is a circle (what issue 38 found)."""
    assert _upward({**IMPORTS, f"{PACKAGE}.namespace.tuning": {f"{PACKAGE}.hooks.lance"}}) == [
        f"{PACKAGE}.namespace.tuning (engine) imports {PACKAGE}.hooks.lance (airflow)"
    ]
    circle = {
        **IMPORTS,
        f"{PACKAGE}.implementations": {*IMPORTS[f"{PACKAGE}.implementations"], f"{PACKAGE}.rest.client"},
    }
    with pytest.raises(graphlib.CycleError):
        graphlib.TopologicalSorter(circle).prepare()
