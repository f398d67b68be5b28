"""Inline SVG line charts (bandwidth against message size), drawn without any library."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Optional

Point = tuple[float, float]
Series = tuple[str, Sequence[Point]]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22")
WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 150, 28, 44


def human_bytes(size: float) -> str:
    """8 -> '8', 1024 -> '1K', 1048576 -> '1M', 2**30 -> '1G' (binary prefixes, as nccl-tests sizes are)."""
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale:
            value = size / scale
            return f"{value:g}{unit}" if value >= 10 or value == int(value) else f"{value:.1f}{unit}"
    return f"{size:g}"


def line_chart(title: str, series: list[Series], y_label: str, floor: Optional[float] = None) -> str:
    """An SVG chart: log2 x axis (bytes), linear y axis from 0, one polyline per series, legend on the right,
    and an optional dashed floor line. Points with x <= 0 or a None y are dropped."""
    clean = [(name, sorted((x, y) for x, y in pts if x and x > 0 and y is not None)) for name, pts in series]
    clean = [(name, pts) for name, pts in clean if pts]
    if not clean:
        return f'<p class="noplot">{escape(title)}: no data points</p>'
    xs = [x for _n, pts in clean for x, _y in pts]
    ys = [y for _n, pts in clean for _x, y in pts] + ([floor] if floor is not None else [])
    lo, hi = math.log2(min(xs)), math.log2(max(xs))
    if hi - lo < 1:
        lo, hi = lo - 0.5, hi + 0.5
    y_max = _nice_ceiling(max(ys) if max(ys) > 0 else 1.0)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (math.log2(x) - lo) / (hi - lo) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y / y_max) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(title)}">',
           f'<text x="{LEFT}" y="16" class="title">{escape(title)}</text>',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" class="frame"/>']
    for i in range(5):
        value = y_max * i / 4
        y = py(value)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="ytick">{value:g}</text>')
    for exp in _x_ticks(lo, hi):
        x = px(2.0 ** exp)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" y2="{TOP + plot_h + 4}" class="axis"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" class="xtick">{human_bytes(2.0 ** exp)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" class="xlabel">message size (bytes)</text>')
    out.append(f'<text x="14" y="{TOP + plot_h / 2:.1f}" class="ylabel" '
               f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_label)}</text>')
    if floor is not None:
        out.append(f'<line x1="{LEFT}" y1="{py(floor):.1f}" x2="{LEFT + plot_w}" y2="{py(floor):.1f}" '
                   f'class="floor"><title>floor {floor:g}</title></line>')
    for index, (name, pts) in enumerate(clean):
        color = PALETTE[index % len(PALETTE)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="1.8"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.2" fill="{color}">'
                       f'<title>{escape(name)}: {human_bytes(x)}B {y:g}</title></circle>')
        ly = TOP + 12 + index * 16
        out.append(f'<rect x="{WIDTH - RIGHT + 12}" y="{ly - 8}" width="10" height="10" fill="{color}"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 28}" y="{ly + 1}" class="legend">{escape(name[:20])}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _x_ticks(lo: float, hi: float) -> list[int]:
    first, last = math.ceil(lo), math.floor(hi)
    step = max(1, math.ceil((last - first + 1) / 8))
    return list(range(first, last + 1, step))


def _nice_ceiling(value: float) -> float:
    exponent = math.floor(math.log10(value))
    for factor in (1, 2, 2.5, 5, 10):
        candidate = factor * 10 ** exponent
        if candidate >= value:
            return float(candidate)
    return float(10 ** (exponent + 1))
