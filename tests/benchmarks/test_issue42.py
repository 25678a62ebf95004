"""Issue 42's table of the page (``benchmarks/issue42.py``) and the command that measures its rows again
(``scripts/bench_issue42.py``)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from benchmarks import issue42
from benchmarks.common import REPO, RESULTS_DIR, export_package
from benchmarks.report import render
from scripts import bench_issue42

PAGE = "\n".join(
    [
        "### Not met",
        "## Table version management against the reference's tracking mode",
        "### With table version management",
        "## Storage requests per sensor poke",
        "## Short-lived writer processes into a small catalog",
        "## REST server: CPU per request, authenticated, managed mode (issue 42)",
        "## The managed commit at its floor (issue 42; measured today)",
    ]
)


def _row(table: list[str], start: str) -> list[str]:
    """The cells of the table's row whose first cell starts with ``start``."""
    (line,) = [line for line in table if line.startswith(f"| {start}")]
    return [cell.strip() for cell in line.strip("|").split(" | ")]


def _rest_round(ours: float, before: float) -> dict[str, dict[str, float]]:
    return {name: {"per_s": value} for name, value in (("ours", ours), ("before", before), ("reference", 100.0))}


def test_each_row_is_the_median_of_its_runs_with_their_spread_and_its_before() -> None:
    """Runs of the short-lived, REST and Spark sections: median, min-max and ± half the range; before as the
    section measured it alongside, with its commit; fewer than 5 runs said; a goal not met links to its profile,
    a row whose section did not run says so."""
    results: dict[str, Any] = {
        "date": "2026-11-23",
        "_measured_on": {"short_lived": "2026-11-28"},
        "short_lived": {
            "_meta": {"before": "ceec513"},
            "imports": {
                "ours": {"wall": [1.0, 1.05, 1.3]},
                "reference": {"wall": [1.0, 1.0, 1.0]},
                "before": {"wall": [1.4, 1.5, 1.3]},
            },
            "off": {"ratios": [0.6, 1.0, 0.8, 1.0, 1.0], "before": {"ratios": [0.6, 1.0, 0.8, 0.8, 0.8]}},
            "managed": {"ratios": [1.0, 1.1, 1.2, 1.3, 1.4]},
        },
        "managed/after": {"append": {"ours": {"p50": 15.0}, "reference": {"p50": 10.0}}},
        "rest_authenticated": {
            "rounds": [_rest_round(ours, 95.0) for ours in (90.0, 120.0, 110.0, 130.0, 105.0)],
            "before": "ceec513",
        },
        "spark": {"numbers": {"seconds": {"ours": [6.0, 8.0, 8.0, 8.0, 10.0], "parquet": [10.0] * 5}}},
    }
    table = issue42.table(results, PAGE)
    assert table[0] == f"## {issue42.TITLE}"

    off = _row(table, "8 short-lived writer processes")
    assert off[2:7] == [
        "0.80x (0.60-1.00, ±25%), `ceec513`, same runs",
        "1.00x (0.60-1.00, ±20%)",
        "5 runs",
        "yes",
        "2026-11-28",
    ]
    assert off[7] == "[figures](#short-lived-writer-processes-into-a-small-catalog)"
    managed = _row(table, "the same, managed")
    assert managed[3:6] == ["1.20x (1.00-1.40, ±17%)", "5 runs", "yes"]

    imports = _row(table, "import of")
    assert imports[2:6] == [
        "+0.400 s (+0.300 to +0.500), `ceec513`, same rounds",
        "+0.050 s (+0.000 to +0.300)",
        "3 pairs (< 5)",
        "yes",
    ]

    append = _row(table, "pylance append")
    assert append[2].startswith("issue: 2.06x") and append[3:6] == ["1.50x", "1 run (< 5)", "**no**"]
    assert append[6] == "2026-11-23"  # the full run's date: not measured again since
    assert append[7] == (
        "[figures](#table-version-management-against-the-references-tracking-mode);"
        " [profile](#the-managed-commit-at-its-floor-issue-42-measured-today)"
    )

    rest = _row(table, "REST mixed load")
    assert rest[2] == "0.95x (0.95-0.95, ±0%), `ceec513`, same rounds"
    assert rest[3:6] == ["1.10x (0.90-1.30, ±18%)", "5 rounds", "yes"]
    assert "profile" not in rest[7]

    spark = _row(table, "Spark: stage 2 tables")
    assert spark[3:6] == ["0.80x (0.60-1.00, ±25%)", "5 rounds", "yes"]
    large = _row(table, "Spark: the same at 4 tables")
    assert large[3] == "not measured"
    assert large[7] == "figures: **no heading “Spark staging throughput…” on this page**"


def test_the_managed_before_is_the_commits_run_of_its_own_when_measured() -> None:
    def run(ours: float) -> dict[str, Any]:
        return {"append": {"ours": {"p50": ours}, "reference": {"p50": 10.0}}}

    results = {"managed/after": run(9.0), "managed/before": {**run(20.0), "_meta": {"engine": issue42.BEFORE}}}
    append = _row(issue42.table(results, PAGE), "pylance append")
    assert append[2:6] == [f"2.00x, `{issue42.BEFORE}`, a run of its own", "0.90x", "1 run (< 5)", "yes"]
    results["managed/before"]["_meta"]["engine"] = "an older label"  # issue 29's before: not this row's
    assert _row(issue42.table(results, PAGE), "pylance append")[2].startswith("issue: ")


def test_a_managed_row_meets_its_goal_at_the_protocols_floor() -> None:
    """Ours ÷ the reference above 1.0x still meets "≤ 1.0x, or the protocol's floor, proven" when ours ÷ the
    floor measured in the same runs is at most 1.0x; each run's ratio counts."""
    ratios = {"reference": [1.5, 1.6, 1.7, 1.6, 1.8], "floor": [0.9, 1.0, 1.05, 0.95, 1.1]}
    results = {"managed/after": {"_ratios": {"append": ratios}}}
    append = _row(issue42.table(results, PAGE), "pylance append")
    assert append[3:6] == [
        "1.60x (1.50-1.80, ±9%); ÷ the protocol's floor 1.00x (0.90-1.10, ±10%)",
        "5 runs",
        "yes",
    ]
    ratios["floor"] = [1.2] * 5
    assert _row(issue42.table(results, PAGE), "pylance append")[5] == "**no**"


def test_the_poke_row_counts_the_cases_at_the_goal_and_the_pokes_at_their_floor() -> None:
    """Counts, the most of each case over the sizes; a case above its floor is counted as such."""
    exists = "LanceTableExistenceSensor|table exists"
    root = "LanceTableExistenceSensor|not yet (root table)"

    def counts(warm: int, fresh: int) -> dict[str, dict[str, int]]:
        return {"warm": {"LIST": warm}, "cold": {"LIST": warm}, "cold_new_machine": {"LIST": warm, "GET": fresh - warm}}

    results = {
        "poke": {
            "s3": {
                "100": {"ours": {exists: counts(1, 2), root: counts(2, 3)}},
                "10000": {"ours": {exists: counts(2, 2), root: counts(2, 3)}},
            }
        }
    }
    poke = _row(issue42.table(results, PAGE), "sensor poke")
    assert poke[1:4] == [
        "1 / 2",
        "issue: 2 / 3",
        "2 / 2-3: 0 of 2 cases at 1 / 2; pokes at the floor of their key ranges: 10 of 12",
    ]
    assert poke[4:6] == ["counts: the same in every run (1 run)", "**no**"]
    assert poke[7].endswith("; [profile](#storage-requests-per-sensor-poke)")


def test_anchors_are_githubs() -> None:
    assert issue42.anchor("REST server: CPU per request, authenticated, managed mode (issue 42)") == (
        "rest-server-cpu-per-request-authenticated-managed-mode-issue-42"
    )
    assert issue42.anchor("4 tables x 10,000,000 rows") == "4-tables-x-10000000-rows"
    assert issue42.anchor("`ours` ÷ reference") == "ours--reference"
    assert issue42.headings("# Runs\n\n## Runs!\n### Other") == {"Runs": "runs", "Runs!": "runs-1", "Other": "other"}


def test_the_committed_page_has_every_row_and_its_links_resolve() -> None:
    """The page as rendered from the committed results: one line per row, every link to a heading of the page,
    every goal not met with its profile."""
    page = render(json.loads((RESULTS_DIR / "latest.json").read_text()))
    start = page.index(f"## {issue42.TITLE}\n")
    table = page[start:].split("\n\n")[2].splitlines()
    assert len(table) == 2 + len(issue42.ROWS)
    anchors = set(issue42.headings(page).values())
    for line in table[2:]:
        assert set(re.findall(r"\]\(#([^)]+)\)", line)) <= anchors and "no heading" not in line, line
        assert "| **no** |" not in line or "[profile](#" in line, line


def test_the_command_measures_every_row_with_the_older_engine_and_server_alongside(tmp_path: Path) -> None:
    environment = bench_issue42.environment(tmp_path, bench_issue42.SECTIONS, quick=True)
    assert set(environment["BENCH_ONLY"].split(",")) == {row.key for row in issue42.ROWS} | {"managed/before"}
    assert {key: environment[key] for key in ("BENCH_MANAGED_BEFORE", "BENCH_SHORT_LIVED_BEFORE")} == {
        "BENCH_MANAGED_BEFORE": issue42.BEFORE,
        "BENCH_SHORT_LIVED_BEFORE": issue42.BEFORE,
    }
    assert environment["BENCH_REST_BEFORE"] == str(tmp_path)
    assert (environment["BENCH_MERGE"], environment["BENCH_QUICK"]) == ("1", "1")
    assert "BENCH_QUICK" not in bench_issue42.environment(tmp_path, ["short_lived"], quick=False)
    seconds = {"_seconds": {"managed/after": 30.0, "short_lived": 100.0, "rest": 5.0}}
    assert bench_issue42.estimate(seconds, ["managed/after", "short_lived"]) == 160.0  # the older engine's run too


@pytest.mark.slow  # runs git
def test_the_older_package_is_that_commits_alone(tmp_path: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    package = export_package(head.stdout.strip(), tmp_path)
    assert sorted(path.name for path in package.iterdir()) == ["airflow_provider_lance"]
    committed = subprocess.run(
        ["git", "show", "HEAD:airflow_provider_lance/namespace/manifest.py"], cwd=REPO, capture_output=True, check=True
    )
    assert (package / "airflow_provider_lance" / "namespace" / "manifest.py").read_bytes() == committed.stdout
    assert export_package(head.stdout.strip(), tmp_path) == package  # extracted once
