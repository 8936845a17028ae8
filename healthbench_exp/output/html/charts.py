"""The building blocks of the HTML reports: page frame, tables, inline SVG charts with their
legends, and the context header every report opens with. Everything inline: no fetches."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.output.run_context import Banner, RunContext

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1150px;color:#1d2430;
padding:0 16px}h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #d5dae1}
table{border-collapse:collapse;margin:8px 0;max-width:100%}td,th{border:1px solid #d5dae1;
padding:3px 7px;text-align:left;vertical-align:top;overflow-wrap:break-word}th{background:#f1f3f6}
table.categories td:first-child{overflow-wrap:anywhere;min-width:180px}
.wide{overflow-x:auto;max-width:100%}
td.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
.muted{color:#68707d}.bad{color:#a4161a}.good{color:#1b6e3a}.failed{background:#fde8e8}
details{border:1px solid #d5dae1;border-radius:4px;margin:6px 0;padding:4px 8px}
summary{cursor:pointer}pre{white-space:pre-wrap;background:#f7f8fa;padding:6px;margin:4px 0}
.verdict{font-weight:600;white-space:nowrap}svg text{font:12px system-ui,sans-serif}
svg{max-width:100%;height:auto}
.banner{font-weight:600;padding:6px 10px;margin:6px 0;border-radius:4px;border:1px solid}
.banner.DEMO{background:#fff4d6;border-color:#d9a400}
.banner.other{background:#fde8e8;border-color:#a4161a;color:#7a1013}
table.runs{font-size:13px}table.runs td{overflow-wrap:anywhere}table.runs td.num{min-width:48px}
table.context th{width:90px}.legend{margin:2px 0 10px}.pager button{margin:0 4px}
"""
HEAT_LOW, HEAT_HIGH = "score 0", "score 1"


def page_parts(title: str) -> tuple[str, str]:
    """The markup before and after a page's body."""
    return (
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{escape(title)}"
        f"</title><style>{STYLE}</style></head><body>",
        "</body></html>\n",
    )


def page(title: str, body: str) -> str:
    before, after = page_parts(title)
    return before + body + after


def text(row: Mapping[str, object], key: str) -> str:
    """`row[key]` of decoded JSON as text ("" when missing or null)."""
    value = row.get(key)
    return "" if value is None else str(value)


def number(row: Mapping[str, object], key: str) -> float | None:
    """`row[key]` of decoded JSON as a number (None when missing, null or not a number)."""
    value = row.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def records(value: object) -> list[Mapping[str, object]]:
    """The objects of a decoded JSON list (nothing when `value` is not a list)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def listed(row: Mapping[str, object], key: str) -> list[object]:
    """`row[key]` of decoded JSON as a list (empty when missing or not a list)."""
    value = row.get(key)
    return value if isinstance(value, list) else []


def context_parts(
    data: Mapping[str, object],
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(fields, banners) of a comparison's `context` (`sweep.jobs.sweep_context`): (name, value)
    and (label, reason) pairs."""
    context = data.get("context")
    if not isinstance(context, dict):
        return [], []
    fields, banners = context.get("fields"), context.get("banners")
    return (
        [(str(k), str(v)) for k, v in fields] if isinstance(fields, list) else [],
        [(str(k), str(v)) for k, v in banners] if isinstance(banners, list) else [],
    )


def fmt(value: object, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return escape(str(value))


def table(header: list[str], rows: list[str], css: str = "") -> str:
    """A table from header labels and ready-made `<tr>` rows, scrolling sideways if too wide."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    attribute = f" class='{css}'" if css else ""
    return f"<div class='wide'><table{attribute}><tr>{head}</tr>{''.join(rows)}</table></div>"


def cells(*values: object, numeric: bool = True) -> str:
    """`<td>` cells: numbers right-aligned and formatted, anything else escaped."""
    out = []
    for v in values:
        right = numeric and isinstance(v, int | float) and not isinstance(v, bool)
        out.append(f"<td class='num'>{fmt(v)}</td>" if right else f"<td>{fmt(v)}</td>")
    return "".join(out)


def banner_html(banners: list[Banner]) -> str:
    """One coloured line per banner (DEMO in amber, anything else in red)."""
    return "".join(
        f"<div class='banner {'DEMO' if b.label == 'DEMO' else 'other'}' "
        f"id='banner-{escape(b.label)}'>{escape(b.label)}: {escape(b.reason)}</div>"
        for b in banners
    )


def context_header(heading: str, context: RunContext) -> str:
    """A report's opening: its title, banners, and model, judge, data, sampling, date, cost,
    protocol."""
    rows = [f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in context.fields()]
    return (
        f"<h1>{escape(heading)}</h1>"
        + banner_html(context.banners)
        + f"<div class='wide'><table class='context' id='context'>{''.join(rows)}</table></div>"
    )


def _swatch(x: float, color: str, label: str, opacity: float = 1.0) -> str:
    return (
        f"<rect x='{x:.0f}' y='3' width='14' height='12' fill='{color}' opacity='{opacity}'/>"
        f"<text x='{x + 18:.0f}' y='14'>{escape(label)}</text>"
    )


def bar_legend() -> str:
    """What a bar chart's bar and whisker mean."""
    return (
        "<svg class='legend' width='520' height='18' viewBox='0 0 520 18' role='img' "
        "aria-label='legend'>"
        + _swatch(0, "#4c78a8", "score (clipped mean)")
        + "<line x1='170' y1='9' x2='200' y2='9' stroke='#000'/>"
        "<text x='206' y='14'>95% CI (mean ± 1.96 bootstrap std)</text></svg>"
    )


def bar_chart(items: list[tuple[str, float, float | None]], width: int = 640) -> str:
    """Horizontal bars on a 0..1 axis; the whisker is +- 1.96 std (clipped to the axis)."""
    label_w, row_h = 230, 22
    plot_w = width - label_w - 70
    height = row_h * len(items) + 24
    parts = [f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img'>"]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        x = label_w + tick * plot_w
        parts.append(
            f"<line x1='{x:.1f}' y1='0' x2='{x:.1f}' y2='{height - 18}' stroke='#e3e6ea'/>"
            f"<text x='{x:.1f}' y='{height - 4}' text-anchor='middle' fill='#68707d'>"
            f"{tick:g}</text>"
        )
    for i, (label, value, std) in enumerate(items):
        y = i * row_h + 3
        mid = y + (row_h - 6) / 2
        width_px = max(0.0, min(1.0, value)) * plot_w
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 14}' text-anchor='end'>{escape(label)}</text>"
            f"<rect x='{label_w}' y='{y}' width='{width_px:.1f}' height='{row_h - 6}' "
            "fill='#4c78a8'/>"
        )
        if std:
            interval = normal_interval(value, std)
            lo, hi = label_w + interval.low * plot_w, label_w + interval.high * plot_w
            parts.append(f"<line x1='{lo:.1f}' y1='{mid}' x2='{hi:.1f}' y2='{mid}' stroke='#000'/>")
        parts.append(f"<text x='{label_w + plot_w + 6}' y='{y + 14}'>{value:.4f}</text>")
    parts.append("</svg>")
    return "".join(parts) + bar_legend()


DIFFERENCE_COLORS = {
    "A higher (CI above 0)": "#1b6e3a",
    "B higher (CI below 0)": "#a4161a",
    "no clear difference (CI includes 0)": "#8a8f98",
}


def difference_legend() -> str:
    """What a paired-difference bar's colour and whisker mean."""
    parts, x = [], 0
    for label, color in DIFFERENCE_COLORS.items():
        parts.append(_swatch(x, color, label, 0.75))
        x += 30 + 7 * len(label)
    parts.append(
        f"<line x1='{x}' y1='9' x2='{x + 30}' y2='9' stroke='#000'/>"
        f"<text x='{x + 36}' y='14'>95% CI</text>"
    )
    return (
        f"<svg class='legend' id='difference-legend' width='{x + 100}' height='18' "
        f"viewBox='0 0 {x + 100} 18' role='img' "
        f"aria-label='legend'>{''.join(parts)}</svg>"
    )


def difference_chart(items: list[tuple[str, float, float, float]], width: int = 860) -> str:
    """Paired differences (label, mean, ci_low, ci_high) around a zero line, with a legend."""
    label_w, row_h = 440, 22
    plot_w = width - label_w - 80
    bound = max([0.05] + [max(abs(lo), abs(hi)) for _, _, lo, hi in items]) * 1.1

    def x(v: float) -> float:
        return label_w + (v + bound) / (2 * bound) * plot_w

    height = row_h * len(items) + 24
    zero = x(0)
    colors = list(DIFFERENCE_COLORS.values())
    parts = [
        f"<svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' role='img'>",
        f"<line x1='{zero:.1f}' y1='0' x2='{zero:.1f}' y2='{height - 18}' stroke='#68707d'/>",
        f"<text x='{zero:.1f}' y='{height - 4}' text-anchor='middle' fill='#68707d'>0</text>",
    ]
    for i, (label, mean, lo, hi) in enumerate(items):
        y = i * row_h + 3
        mid = y + (row_h - 6) / 2
        color = colors[0] if lo > 0 else colors[1] if hi < 0 else colors[2]
        left, right = sorted((zero, x(mean)))
        parts.append(
            f"<text x='{label_w - 6}' y='{y + 14}' text-anchor='end'>{escape(label)}</text>"
            f"<rect x='{left:.1f}' y='{y}' width='{right - left:.1f}' height='{row_h - 6}' "
            f"fill='{color}' opacity='0.75'/>"
            f"<line x1='{x(lo):.1f}' y1='{mid}' x2='{x(hi):.1f}' y2='{mid}' stroke='#000'/>"
            f"<text x='{label_w + plot_w + 6}' y='{y + 14}'>{mean:+.4f}</text>"
        )
    parts.append("</svg>")
    return "".join(parts) + difference_legend()


def heat_color(value: float) -> str:
    """The fill of a heat-map cell: white-blue, darker = higher (value clipped to [0, 1])."""
    shade = int(255 - 120 * max(0.0, min(1.0, value)))
    return f"rgb({shade},{min(255, shade + 20)},255)"


def heat_legend() -> str:
    """The heat maps' colour scale, 0 to 1."""
    stops = [0.0, 0.25, 0.5, 0.75, 1.0]
    boxes = "".join(
        f"<rect x='{60 + 40 * i}' y='2' width='40' height='14' fill='{heat_color(v)}' "
        f"stroke='#d5dae1'/><text x='{80 + 40 * i}' y='30' text-anchor='middle'>{v:g}</text>"
        for i, v in enumerate(stops)
    )
    return (
        "<svg class='legend heat-legend' width='320' height='34' viewBox='0 0 320 34' role='img' "
        "aria-label='legend'>"
        f"<text x='0' y='14'>score</text>{boxes}"
        "<text x='270' y='14'>– none</text></svg>"
    )


def heat_map(
    row_labels: list[str], col_labels: list[str], values: dict[tuple[str, str], float]
) -> str:
    """A table whose cells are shaded by value in [0, 1] (darker blue = higher), and its scale."""
    rows = []
    for r in row_labels:
        row_cells = []
        for c in col_labels:
            v = values.get((r, c))
            if v is None:
                row_cells.append("<td class='num muted'>–</td>")
                continue
            row_cells.append(f"<td class='num' style='background:{heat_color(v)}'>{v:.3f}</td>")
        rows.append(f"<tr><th>{escape(r)}</th>{''.join(row_cells)}</tr>")
    return table(["", *col_labels], rows) + heat_legend()
