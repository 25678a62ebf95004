"""Install as users do: build the wheel, check its metadata, install it with --no-deps into a throwaway venv.

The throwaway venv (``uv venv --seed``) sees the current environment's packages through a ``.pth`` file (the
stand-in for "an existing Airflow 3 environment"); only the wheel is installed into it, offline, so the
provider and its entry point must load from the installed wheel, not from this checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests.packaging.conftest import uv

pytestmark = pytest.mark.slow


def test_wheel_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        entry_points = archive.read(f"{dist_info}/entry_points.txt").decode()
    requires = metadata.get_all("Requires-Dist")
    assert set(metadata.get_all("Provides-Extra")) >= {"airflow", "spark"}
    assert any(r.startswith("apache-airflow>=3.1.3") and "extra == 'airflow'" in r for r in requires), requires
    assert any(r.startswith("apache-airflow>=3.3.0") and "extra == 'events'" in r for r in requires), requires
    assert any(r.startswith("pyspark[sql]") and "<5" in r and ">=4.2" in r for r in requires), requires
    assert not any(r.startswith("pyspark") and "==" in r.split(";")[0] for r in requires)
    assert "[apache_airflow_provider]" in entry_points
    assert "provider_info = airflow_provider_lance.get_provider_info:get_provider_info" in entry_points
    assert f"{dist_info}/licenses/LICENSE" in names
    assert "airflow_provider_lance/py.typed" in names
    assert "airflow_provider_lance/spark/job.py" in names
    # The catalog page's templates and stylesheet ship with it; Airflow finds the plugin through its entry point.
    assert "airflow_provider_lance/page/templates/versions.html" in names
    assert "airflow_provider_lance/page/static/page.css" in names
    assert "lance = airflow_provider_lance.plugins.lance:LancePlugin" in entry_points
    assert not any(n.startswith(("tests/", "example_dags/")) for n in names)


def test_installed_wheel_loads_the_provider(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    uv("venv", "--seed", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    uv("pip", "install", "--offline", "--no-deps", "--python", str(python), str(wheel))
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    # The existing environment's packages (Airflow 3, pylance ...), after the wheel's own directory.
    (site / "zz_existing_environment.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["AIRFLOW_HOME"] = str(tmp_path / "airflow")
    code = (
        "import airflow_provider_lance, importlib.metadata as m;"
        "(ep,) = [e for e in m.entry_points(group='apache_airflow_provider')"
        " if e.value.startswith('airflow_provider_lance')];"
        "info = ep.load()();"
        "from airflow_provider_lance.hooks.lance import LanceHook;"
        "from airflow_provider_lance.operators.spark import LanceSparkStagingOperator;"
        "print(airflow_provider_lance.__file__); print(info['package-name'])"
    )
    done = subprocess.run(
        [str(python), "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    location, name = done.stdout.strip().splitlines()[-2:]
    assert location.startswith(str(site)), location
    assert name == "airflow-provider-lance"
