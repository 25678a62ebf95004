"""The growth chart of a table: rows and size over versions, drawn as SVG polylines (no script, no library)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT, PAD = 640, 160, 28
#: At most this many points per line: a long history is sampled evenly (the first and last versions kept).
MAX_POINTS = 200
#: Markers are drawn on each point up to this many points.
MAX_MARKERS = 60


@dataclass(frozen=True)
class Line:
    """One series of the chart: its label, the SVG ``points`` attribute and its largest value."""

    label: str
    points: str
    maximum: int

    @property
    def dots(self) -> list[tuple[str, str]]:
        """The points as ``(x, y)`` pairs (drawn as markers when there are few)."""
        return [tuple(point.split(",")) for point in self.points.split()]  # type: ignore[misc]


@dataclass(frozen=True)
class Chart:
    """Two series over the same versions axis."""

    width: int
    height: int
    first: int
    last: int
    lines: list[Line]

    @property
    def markers(self) -> bool:
        """Whether the points are few enough to mark each one."""
        return bool(self.lines) and len(self.lines[0].dots) <= MAX_MARKERS


def _sample(values: Sequence[tuple[int, int | None, int | None]]) -> list[tuple[int, int | None, int | None]]:
    if len(values) <= MAX_POINTS:
        return list(values)
    step = (len(values) - 1) / (MAX_POINTS - 1)
    return [values[round(i * step)] for i in range(MAX_POINTS)]


def growth_chart(growth: Sequence[tuple[int, int | None, int | None]]) -> Chart | None:
    """Return the chart of ``(version, rows, size)`` triples, None when there is nothing to draw.

    :param growth: every version with its rows and size in bytes (None when unknown).
    """
    points = _sample(sorted(growth))
    if not points:
        return None
    first, last = points[0][0], points[-1][0]
    span = max(last - first, 1)
    lines = []
    for label, index in (("rows", 1), ("size", 2)):
        known = [(p[0], p[index]) for p in points if p[index] is not None]
        if not known:
            continue
        top = max(value for _, value in known) or 1
        coords = " ".join(
            f"{PAD + (version - first) * (WIDTH - 2 * PAD) / span:.1f},"
            f"{HEIGHT - PAD - value * (HEIGHT - 2 * PAD) / top:.1f}"
            for version, value in known
        )
        lines.append(Line(label, coords, top))
    return Chart(WIDTH, HEIGHT, first, last, lines) if lines else None
