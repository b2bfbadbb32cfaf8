"""Draw the scaling curve of bench_cluster_day.py's results (results.csv) as an SVG, for docs/benchmarks.md.

    ../.venv/bin/python plot_scaling.py            # writes ../docs/scaling.svg

Wall time against device samples, both axes logarithmic, one line per contender: the whole night, bare DuckDB SQL
and pandas (where it ran), the newest measurement of each size at the newest commit that measured it. Plain SVG
written by hand: nothing to install.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.csv"
OUT = HERE.parent / "docs" / "scaling.svg"
SERIES = (("night", "the whole night", "#1f77b4"), ("bare", "bare DuckDB SQL", "#2ca02c"))
SERIES += (("pandas", "pandas", "#d62728"),)
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 720, 420, 70, 200, 30, 50


def newest_by_size(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """The last measurement of each sample count (results.csv is appended in time order)."""
    by_size = {int(row["samples"]): row for row in rows}
    return [by_size[size] for size in sorted(by_size)]


def _scale(low: float, high: float, start: float, end: float):
    low, high = math.log10(low), math.log10(high)
    return lambda value: start + (math.log10(value) - low) / (high - low) * (end - start)


def _decades(low: float, high: float) -> list[float]:
    return [10.0**power for power in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)]


def svg(rows: list[dict[str, str]]) -> str:
    points = {
        key: [(int(r["samples"]), float(r[f"{key}_wall_s"])) for r in rows if r[f"{key}_wall_s"]]
        for key, _, _ in SERIES
    }
    xs = [x for series in points.values() for x, _ in series]
    ys = [y for series in points.values() for _, y in series]
    x_ticks, y_ticks = _decades(min(xs), max(xs)), _decades(min(ys), max(ys))
    x = _scale(x_ticks[0], x_ticks[-1], LEFT, WIDTH - RIGHT)
    y = _scale(y_ticks[0], y_ticks[-1], HEIGHT - BOTTOM, TOP)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
    ]
    for tick in x_ticks:
        out.append(f'<line x1="{x(tick):.1f}" y1="{TOP}" x2="{x(tick):.1f}" y2="{HEIGHT - BOTTOM}" stroke="#ddd"/>')
        label = f"{tick / 1e6:g} M" if tick >= 1e6 else f"{tick:g}"
        out.append(f'<text x="{x(tick):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{label}</text>')
    for tick in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{y(tick):.1f}" x2="{WIDTH - RIGHT}" y2="{y(tick):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:g} s</text>')
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 10}" text-anchor="middle">device samples in the night '
        "(log)</text>"
    )
    out.append(f'<text x="14" y="{TOP - 10}">wall time (log)</text>')
    for number, (key, label, colour) in enumerate(SERIES):
        series = points[key]
        if not series:
            continue
        path = " ".join(f"{x(a):.1f},{y(b):.1f}" for a, b in series)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out += [f'<circle cx="{x(a):.1f}" cy="{y(b):.1f}" r="3.5" fill="{colour}"/>' for a, b in series]
        legend_y = TOP + 20 * number + 10
        out.append(f'<line x1="{WIDTH - RIGHT + 15}" y1="{legend_y}" x2="{WIDTH - RIGHT + 40}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="2"/>')  # fmt: skip
        out.append(f'<text x="{WIDTH - RIGHT + 46}" y="{legend_y + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    with RESULTS.open(newline="", encoding="utf-8") as results:
        rows = newest_by_size(list(csv.DictReader(results)))
    OUT.write_text(svg(rows), encoding="utf-8")
    print(f"wrote {OUT} ({len(rows)} sizes)")


if __name__ == "__main__":
    main()
