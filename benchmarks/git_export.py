"""A commit's files, extracted with ``git archive`` (the standard library only: ``scripts/bench_compare.py`` imports
it outside the project's venv)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def export(commit: str, directory: Path, *paths: str) -> Path:
    """``directory`` holding ``paths`` of ``commit`` (every file when none), extracted once.

    :param commit: the commit.
    :param directory: where the files go (kept: a second call finds them there).
    :param paths: paths of the commit's tree.
    """
    if not all((directory / path).exists() for path in paths or ("Makefile",)):
        directory.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, *paths], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
    return directory
