"""The built wheel, and clean venvs holding it (``make test-install``): what users install, not this checkout.

A venv per user path is created with ``uv`` from the wheel, its extras and the lock's versions as constraints
(or the oldest / newest versions our ranges allow: ``--resolution lowest-direct`` / ``highest``), and cached
between runs under ``~/.cache/airflow-provider-lance/install-venvs`` (``LANCE_INSTALL_CACHE``), keyed by the
lock, the declared dependencies, the extras and the Python (and the week, for the newest): a run with the same
lock only reinstalls the provider's own wheel into it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.s3.conftest import moto_server  # noqa: F401  (moto's S3, STS, IAM and Glue for tests/packaging)

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("LANCE_INSTALL_CACHE", Path.home() / ".cache" / "airflow-provider-lance" / "install-venvs"))


def uv_command() -> list[str]:
    """How to run uv here (this venv's, else the system Python's module)."""
    for python in (sys.executable, "python3"):
        probe = subprocess.run([python, "-m", "uv", "--version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return [python, "-m", "uv"]
    if shutil.which("uv"):
        return ["uv"]
    pytest.skip("uv is not installed")


def uv(*args: str, cwd: Path = REPO, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    """Run ``uv`` (every ``uv pip`` call names its ``--python``: ``python -m uv`` would else pick the Python
    that runs it)."""
    # the user's uv cache (built pyspark wheels included), not the suite's throwaway XDG_CACHE_HOME (tests/conftest.py)
    env = {**os.environ, "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv"))}
    done = subprocess.run(
        [*uv_command(), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout
    )
    if done.returncode != 0:
        raise AssertionError(f"uv {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return done


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--wheel", "--out-dir", str(out), str(REPO))
    (built,) = out.glob("airflow_provider_lance-*.whl")
    return built


@pytest.fixture(scope="session")
def constraints(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lock's versions as a constraints file (reproducible installs, warm cache)."""
    path = tmp_path_factory.mktemp("constraints") / "constraints.txt"
    uv(
        "export",
        "--frozen",
        "--all-extras",
        "--no-hashes",
        "--no-emit-project",
        "--format",
        "requirements.txt",
        "--quiet",
        "-o",
        str(path),
    )
    return path


#: Prints the versions a venv holds of what our ranges name.
VERSIONS = (
    "import importlib.metadata as m\n"
    "names = ['pylance', 'lance-namespace', 'pyarrow', 'fsspec', 's3fs', 'botocore', 'apache-airflow',\n"
    "         'apache-airflow-task-sdk', 'apache-airflow-providers-apache-spark', 'pyspark', 'pyspark-client',\n"
    "         'starlette', 'uvicorn', 'jinja2', 'pyyaml', 'lance-namespace-impls']\n"
    "found = {}\n"
    "for name in names:\n"
    "    try:\n"
    "        found[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        pass\n"
    "print(' '.join(f'{k}=={v}' for k, v in found.items()))\n"
)


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (``3.12``) on this machine: pyenv's, else one on PATH."""
    if sys.version_info[:2] == tuple(int(p) for p in version.split(".")):
        return sys.executable
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for candidate in sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True):
        return str(candidate)
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "--version"], capture_output=True, check=False).returncode == 0:
        return found
    return None


def dependency_key(*parts: str) -> str:
    """What a cached venv depends on: the lock, the declared dependencies and ``parts``."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = json.dumps([project["dependencies"], project["optional-dependencies"]], sort_keys=True)
    digest = hashlib.sha256((REPO / "uv.lock").read_bytes() + declared.encode() + "|".join(parts).encode())
    return digest.hexdigest()[:16]


@dataclass(frozen=True)
class InstallVenv:
    """A venv holding the built wheel with some extras."""

    path: Path

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def python(self) -> str:
        return str(self.bin / "python")

    def run(
        self, program: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        """Run ``program`` of this venv's ``bin`` (``python``, ``airflow`` ...) outside the checkout, failing with
        its output."""
        command = [str(self.bin / program), *args]
        done = subprocess.run(
            command,
            env=clean_env(self, env),
            cwd=cwd or self.path,
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout,
        )
        assert done.returncode == 0, (
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
        )
        return done


def clean_env(venv: InstallVenv, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a user's shell would give: this venv first on PATH, no PYTHONPATH into the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv.bin}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv.path)
    env.update(extra or {})
    return env


def install_venv(
    name: str, wheel: Path, constraints: Path, extras: tuple[str, ...], python: str, resolution: str = "locked"
) -> InstallVenv:
    """A venv with ``wheel[extras]`` on ``python``: cached by :func:`dependency_key`, else made from scratch.

    :param name: the user path (the cache directory's prefix).
    :param wheel: the built wheel.
    :param constraints: the lock's versions (``resolution="locked"``).
    :param extras: the extras to install.
    :param python: the interpreter.
    :param resolution: ``locked`` (the lock's versions), ``lowest-direct`` or ``highest`` (what a resolver picks
        today for the oldest / newest allowed versions of our direct dependencies).
    """
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    # the newest releases change without the lock: those venvs are made again every week
    week = time.strftime("%G-%V") if resolution == "highest" else ""
    key = dependency_key(name, ",".join(extras), version, resolution, week)
    path = CACHE / f"{name}-{key}"
    venv = InstallVenv(path)
    requirement = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
    if resolution == "locked":
        pinned = ["-c", str(constraints)]
    else:  # our requirements named on the command line: for uv, the wheel's own are not "direct"
        project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
        direct = project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]
        pinned = ["--resolution", resolution, *direct]
    if not (path / ".complete").exists():
        for stale in CACHE.glob(f"{name}-*"):  # the venvs of an older lock: one per path is kept
            shutil.rmtree(stale, ignore_errors=True)
        uv("venv", "--quiet", "--python", python, str(path))
        uv("pip", "install", "--quiet", "--compile-bytecode", "--python", venv.python, *pinned, requirement)
        if "spark" in extras:  # README, "Installing": the Spark provider's pyspark-client shares pyspark's folder
            pyspark = venv.run("python", "-c", "import importlib.metadata as m; print(m.version('pyspark'))")
            uv("pip", "uninstall", "--quiet", "--python", venv.python, "pyspark")  # so pyspark goes in last; not
            pinned_pyspark = f"pyspark=={pyspark.stdout.strip()}"  # --reinstall, which rebuilds the 456 MB sdist
            uv("pip", "install", "--quiet", "--no-deps", "--compile-bytecode", "--python", venv.python, pinned_pyspark)
        (path / ".complete").write_text(requirement + "\n")
    else:  # the same dependencies: this checkout's wheel replaces the cached one
        uv(
            "pip",
            "install",
            "--quiet",
            "--python",
            venv.python,
            *pinned,
            "--reinstall-package",
            "airflow-provider-lance",
            requirement,
        )
    # what this path ran on (``make test-install`` shows it: pytest -s)
    print(f"\n{name}: {venv.run('python', '-c', VERSIONS).stdout.strip()}", flush=True)
    return venv
