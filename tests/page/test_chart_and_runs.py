"""The chart's geometry and the run parsed from version metadata (no browser)."""

from __future__ import annotations

from airflow_provider_lance.page.chart import HEIGHT, MAX_POINTS, PAD, WIDTH, growth_chart
from airflow_provider_lance.page.models import Run


def test_chart_spans_the_frame_and_samples_long_histories() -> None:
    chart = growth_chart([(v, v * 10, None if v % 2 else v * 100) for v in range(1, 1001)])
    assert chart is not None and (chart.first, chart.last) == (1, 1000)
    rows, size = chart.lines
    points = [tuple(map(float, p.split(","))) for p in rows.points.split()]
    assert len(points) == MAX_POINTS
    assert points[0] == (PAD, round(HEIGHT - PAD - 10 * (HEIGHT - 2 * PAD) / 10_000, 1))  # one decimal
    assert points[-1] == (WIDTH - PAD, PAD)  # the largest value at the top right
    assert rows.maximum == 10_000 and size.maximum == 100_000
    assert len(size.points.split()) == MAX_POINTS // 2  # unknown sizes are left out, not drawn as 0
    assert not chart.markers


def test_chart_of_nothing() -> None:
    assert growth_chart([]) is None
    assert growth_chart([(1, None, None)]) is None


def test_run_from_metadata() -> None:
    run = Run.from_metadata(
        {
            "airflow_run_id": "etl/manual__2026-01-01T00:00:00+00:00",
            "airflow_run_key": "etl/manual__2026-01-01T00:00:00+00:00/commit/3",
        }
    )
    assert run == Run("etl/manual__2026-01-01T00:00:00+00:00", "etl", "manual__2026-01-01T00:00:00+00:00", "commit")
    assert Run.from_metadata({"airflow_run_id": "etl/r"}) == Run("etl/r", "etl", "r", None)
    assert Run.from_metadata({"other": "x"}) is None
    assert Run.from_metadata(None) is None
