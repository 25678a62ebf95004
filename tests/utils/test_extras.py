"""Optional means optional: every module imports with the core dependencies plus its own extra, nothing more.

Each module is imported in a fresh interpreter of this venv in which every package outside the closure of
pyproject.toml's core dependencies (plus the module's extra) cannot be imported, as in a clean ``pip install``;
``make test-install`` then does the same in real clean venvs from the built wheel (``scripts/test_install.py``).
"""

from __future__ import annotations

import importlib.metadata
import json
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import airflow_provider_lance
from airflow_provider_lance.utils.extras import EXTRAS, missing_extra

pytestmark = pytest.mark.slow  # each test starts a fresh interpreter

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]

#: Where each part of the package belongs (longest prefix wins); what is not listed needs only the core.
#: The REST client (and the routes it shares with the server) is core: the hook and the Spark job use it.
MODULE_EXTRAS = {
    "airflow_provider_lance.hooks": "airflow",
    "airflow_provider_lance.operators": "airflow",
    "airflow_provider_lance.sensors": "airflow",
    "airflow_provider_lance.triggers": "airflow",
    "airflow_provider_lance.triggers.changes": "events",
    "airflow_provider_lance.plugins": "airflow",
    "airflow_provider_lance.assets": "airflow",
    "airflow_provider_lance.rest.": "server",
    "airflow_provider_lance.rest.client": None,
    "airflow_provider_lance.rest.routes": None,
    "airflow_provider_lance.page": "server",
    "airflow_provider_lance.spark.": "spark",
}


def extra_of(module: str) -> str | None:
    """The extra ``module`` needs (None: the core dependencies are enough).

    :param module: a dotted module name of the provider.
    """
    # "a.b" is a.b and its submodules, "a.b." only its submodules
    prefixes = [p for p in MODULE_EXTRAS if module.startswith(p if p.endswith(".") else p + ".") or module == p]
    return MODULE_EXTRAS[max(prefixes, key=len)] if prefixes else None


MODULES = ["airflow_provider_lance"] + [
    m.name for m in pkgutil.walk_packages(airflow_provider_lance.__path__, "airflow_provider_lance.")
]


def closure(requirements: list[str], extras: set[str]) -> set[str]:
    """The distributions ``requirements`` install here, transitively (markers evaluated with ``extras``).

    :param requirements: requirement strings (pyproject.toml's).
    :param extras: the extras the requirements are evaluated with.
    """
    found: set[str] = set()
    todo = [(Requirement(r), extras | {""}) for r in requirements]
    while todo:
        requirement, active = todo.pop()
        if requirement.marker and not any(requirement.marker.evaluate({"extra": e}) for e in active):
            continue
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            nested = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # a package this platform does not install
        todo += [(Requirement(r), set(requirement.extras) | {""}) for r in nested]
    return found


def blocked_imports(extra: str | None) -> list[str]:
    """The top-level packages installed here that a clean install of the core (plus ``extra``) lacks.

    :param extra: the extra installed beside the core dependencies, if any.
    """
    requirements = list(PROJECT["dependencies"]) + (PROJECT["optional-dependencies"][extra] if extra else [])
    allowed = closure(requirements, {extra} if extra else set())
    return sorted(
        top
        for top, distributions in importlib.metadata.packages_distributions().items()
        if top != "airflow_provider_lance" and not {canonicalize_name(d) for d in distributions} & allowed
    )


#: Imports each module with a finder in front of sys.meta_path that refuses the blocked packages.
IMPORT_ALL = """
import importlib, json, sys
blocked = set(json.loads(sys.argv[1]))

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not installed with this extra)", name=name)

sys.meta_path.insert(0, Refuse())
failed = {}
for module in json.loads(sys.argv[2]):
    try:
        importlib.import_module(module)
    except Exception as error:
        failed[module] = f"{type(error).__name__}: {error}"
print(json.dumps(failed))
"""


@pytest.mark.parametrize("extra", [None, *EXTRAS])
def test_every_module_imports_with_only_its_extra(extra: str | None) -> None:
    # the provider's modules of that extra, and the packages we import from it (glue has no module of its own)
    modules = [m for m in MODULES if extra_of(m) == extra] + list(EXTRAS.get(extra or "", ()))
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, json.dumps(blocked_imports(extra)), json.dumps(modules)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {}


def test_the_extras_table_matches_pyproject() -> None:
    """EXTRAS names, for each extra of pyproject.toml a user installs, packages of that extra's distributions."""
    declared = {name for name in PROJECT["optional-dependencies"] if name != "test"}
    assert set(EXTRAS) == declared
    tops = importlib.metadata.packages_distributions()
    for extra, packages in EXTRAS.items():
        allowed = closure(PROJECT["optional-dependencies"][extra], {extra})
        for package in packages:
            assert {canonicalize_name(d) for d in tops[package]} & allowed, (extra, package)


def test_a_missing_package_of_an_extra_names_the_extra() -> None:
    error = missing_extra("server", ModuleNotFoundError("No module named 'uvicorn'", name="uvicorn"))
    assert error.name == "uvicorn"
    assert re.search(r"""pip install "airflow-provider-lance\[server\]\"""", str(error))
    other = ModuleNotFoundError("No module named 'h5py'", name="h5py")
    assert missing_extra("server", other) is other  # not the extra's: left as it is


def test_the_server_entry_point_names_its_extra_in_a_core_install() -> None:
    """``lance-namespace-server`` from a core install says what to install instead of a bare import error."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            IMPORT_ALL,
            json.dumps(blocked_imports(None)),
            json.dumps(["airflow_provider_lance.rest.__main__", "airflow_provider_lance.page"]),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    failed = json.loads(done.stdout.splitlines()[-1])
    assert set(failed) == {"airflow_provider_lance.rest.__main__", "airflow_provider_lance.page"}
    for message in failed.values():
        assert 'pip install "airflow-provider-lance[server]"' in message, message
