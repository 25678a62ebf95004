"""The engine's architecture rules, checked against the code: no Airflow imports, no import circle among its
modules (type-only imports included, since a circle broken only by ``TYPE_CHECKING`` is still a circle in the
design), and imports that only go down the layers of ``docs/engine.md``'s module map, which must list every
module of the engine and nothing else. The map is the one table of layers: this test reads it."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

import airflow_provider_lance.namespace as engine
from tests.test_layout import imports_of

PACKAGE = "airflow_provider_lance.namespace"
ROOT = Path(engine.__file__).parent
ENGINE_DOC = ROOT.parents[1] / "docs" / "engine.md"
# The layers docs/engine.md names, lowest first: a module imports its own layer or the ones before it.
LAYERS = ("rules", "storage", "__manifest", "operations", "facade")


def _module_name(relative: str) -> str:
    parts = [part for part in Path(relative).with_suffix("").parts if part != "__init__"]
    return ".".join([PACKAGE, *parts])


FILES = {_module_name(str(path.relative_to(ROOT))): path for path in sorted(ROOT.rglob("*.py"))}


def _imports(path: Path) -> set[str]:
    return imports_of(path, FILES)


IMPORTS = {name: _imports(path) for name, path in FILES.items()}


def _module_map() -> dict[str, str]:
    """module → layer, from the ``| layer | module | ... |`` table of docs/engine.md."""
    lines = ENGINE_DOC.read_text().splitlines()
    start = lines.index("| layer | module | what lives there |")
    layers: dict[str, str] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        layer, modules = line.split("|")[1:3]
        layer = layer.strip().strip("`")
        assert layer in LAYERS, f"unknown layer {layer!r} in docs/engine.md: {line}"
        for module in re.findall(r"`([^`]+\.py)`", modules):
            assert _module_name(module) not in layers, f"{module} is listed twice in docs/engine.md"
            layers[_module_name(module)] = layer
    return layers


def test_the_engine_does_not_import_airflow() -> None:
    offenders = {name: sorted(i for i in imports if i.split(".")[0] == "airflow") for name, imports in IMPORTS.items()}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_engine_modules_import_each_other_without_a_circle() -> None:
    graph = {
        name: {imported for imported in imports if imported in FILES} - {name} for name, imports in IMPORTS.items()
    }
    graphlib.TopologicalSorter(graph).prepare()  # raises CycleError naming the circle


def test_the_module_map_lists_every_module_and_only_existing_ones() -> None:
    listed = set(_module_map())
    assert sorted(set(FILES) - listed) == [], "modules missing from docs/engine.md's module map"
    assert sorted(listed - set(FILES)) == [], "docs/engine.md's module map lists modules that do not exist"


def _upward(imports: dict[str, set[str]]) -> list[str]:
    """Every import of ``imports`` (module → what it imports) that goes up the map's layers."""
    layer = {name: LAYERS.index(found) for name, found in _module_map().items()}
    return sorted(
        f"{name} ({LAYERS[layer[name]]}) imports {imported} ({LAYERS[layer[imported]]})"
        for name, imported_modules in imports.items()
        for imported in imported_modules
        if imported in layer and layer[imported] > layer[name]
    )


def test_engine_imports_only_go_down_the_layers() -> None:
    assert _upward(IMPORTS) == []


def test_the_layer_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The check is not vacuous: a rules module importing the facade, or storage importing ``__manifest``, is
    found, whichever ``import`` form it takes."""
    module = tmp_path / "probe.py"
    module.write_text(f"from {PACKAGE} import DirectoryNamespace\nimport {PACKAGE}.manifest\n")
    imports = {**IMPORTS, f"{PACKAGE}.identifiers": _imports(module), f"{PACKAGE}.storage": _imports(module)}
    assert _upward(imports) == [
        f"{PACKAGE}.identifiers (rules) imports {PACKAGE} (facade)",
        f"{PACKAGE}.identifiers (rules) imports {PACKAGE}.manifest (__manifest)",
        f"{PACKAGE}.storage (storage) imports {PACKAGE} (facade)",
        f"{PACKAGE}.storage (storage) imports {PACKAGE}.manifest (__manifest)",
    ]


_BACKENDS = {"file", "memory", "s3", "s3a"}


def _is_storage_scheme(node: ast.Attribute) -> bool:
    """``storage.scheme``, ``self._storage.scheme``, ``catalog.storage.scheme`` (a version's naming scheme is not
    a backend)."""
    if node.attr != "scheme":
        return False
    owner = node.value
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return name.lstrip("_") == "storage"


def _scheme_tests(path: Path) -> list[str]:
    """Where ``path`` tells backends apart itself: reads a ``scheme``/``protocol`` attribute, or compares with a
    backend's name or URI prefix (string constants in code; docstrings are expressions of their own)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and (node.attr == "protocol" or _is_storage_scheme(node)):
            found.append(f"{path.name}:{node.lineno} .{node.attr}")
        elif isinstance(node, (ast.Compare, ast.Call)):
            for constant in ast.walk(node):
                if isinstance(constant, ast.Constant) and isinstance(constant.value, str):
                    value = constant.value
                    if value in _BACKENDS or (value.partition("://")[0] in _BACKENDS and "://" in value):
                        found.append(f"{path.name}:{node.lineno} {value!r}")
    return found


def test_no_module_but_storage_tells_backends_apart() -> None:
    """Every difference between local disk, memory and S3 is a ``Storage`` method or attribute (storage.py;
    ``s3.py`` translates S3's options): nowhere else in the engine or the page is a scheme tested."""
    page = ROOT.parent / "page"
    checked = [path for path in [*ROOT.rglob("*.py"), *page.rglob("*.py")] if path.name not in ("storage.py", "s3.py")]
    assert [found for path in checked for found in _scheme_tests(path)] == []
    assert _scheme_tests(ROOT / "storage.py")  # the check sees the scheme tests where they belong
