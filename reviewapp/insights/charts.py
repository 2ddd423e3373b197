"""Charts drawn on the server as inline SVG: no script, no CDN, no chart library.

Each function returns markup for one `<svg role="img">` with an aria-label and
a `<title>`/`<desc>`; the page puts a plain `<table>` with the same numbers
beside every chart, so nothing is only in the picture. Colours come from the
Okabe–Ito palette (colour-blind safe), and every series is named in a legend
and in the table, never by colour alone.

Everything user-supplied (lens, panel and reviewer names) is escaped here.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import ceil, floor, log10

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH = 720
FONT = 12
MUTED = "#6b7280"
GRID = "#e5e7eb"
AXIS = "#9ca3af"
INK = "#1d2430"

# Okabe–Ito.
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
VERMILLION = "#D55E00"
PURPLE = "#CC79A7"
SKY = "#56B4E9"


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    color: str


@dataclass(frozen=True)
class BarRow:
    label: str
    values: Sequence[float | None]  # one per series; None draws nothing
    texts: Sequence[str] = ()  # what to print beside each bar (default: the value)


def _n(x: float) -> str:
    """A coordinate, short."""
    return f"{x:.1f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def _text(x, y, content, *, anchor="start", size=FONT, fill=MUTED, extra="") -> str:
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" font-size="{size}" fill="{fill}" '
        f'text-anchor="{anchor}"{extra}>{escape(content)}</text>'
    )


def _short(label: str, limit: int = 32) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _middle_short(label: str, limit: int = 32) -> str:
    """Keep both ends: pair labels ("panel: a × b") differ at the end as often as the start."""
    if len(label) <= limit:
        return label
    head = (limit - 1) // 2
    return label[:head] + "…" + label[-(limit - 1 - head) :]


def distinct_labels(labels: Sequence[str], limit: int = 32) -> list[str]:
    """Labels short enough for the label column, never two the same for different rows.

    Cut at the end; rows that would then read alike are cut in the middle
    instead; any still alike are numbered. The full label is in each row's <title>.
    """
    out = [_short(label, limit) for label in labels]
    for shorten in (_middle_short, None):
        seen: dict[str, list[int]] = {}
        for i, text in enumerate(out):
            seen.setdefault(text, []).append(i)
        clashes = [idxs for text, idxs in seen.items() if len(idxs) > 1]
        if not clashes:
            break
        for idxs in clashes:
            if len({labels[i] for i in idxs}) == 1:
                continue  # the same label twice is the caller's business
            for n, i in enumerate(idxs, 1):
                if shorten is not None:
                    out[i] = shorten(labels[i], limit)
                else:
                    number = f"{n}. "
                    out[i] = number + _middle_short(labels[i], limit - len(number))
    return out


def wrapped_labels(labels: Sequence[str], limit: int = 32) -> list[list[str]]:
    """Each label on one or two lines of at most `limit` characters, broken at spaces.

    A lens pair ("panel: first × second") reads whole on two lines where one
    line cut it in the middle. What two lines cannot hold is cut at the end;
    labels that would then read alike fall back to `distinct_labels`, on one line.
    """
    out = [_two_lines(label, limit) for label in labels]
    seen: dict[tuple[str, ...], set[str]] = {}
    for label, lines in zip(labels, out, strict=True):
        seen.setdefault(tuple(lines), set()).add(label)
    if any(len(alike) > 1 for alike in seen.values()):
        return [[line] for line in distinct_labels(labels, limit)]
    return out


def _two_lines(label: str, limit: int) -> list[str]:
    if len(label) <= limit:
        return [label]
    # "panel: first × second" breaks after the panel when both parts fit.
    head, colon, tail = label.partition(": ")
    if colon and len(head) + 1 <= limit and len(tail) <= limit:
        return [head + ":", tail]
    first = ""
    words = label.split(" ")
    for i, word in enumerate(words):
        candidate = f"{first} {word}" if first else word
        if len(candidate) > limit:
            if not first:
                break  # a first word longer than a line
            return [first, _short(" ".join(words[i:]), limit)]
        first = candidate
    return [_short(label, limit)]


def _svg(
    chart_id: str, title: str, desc: str, height: float, body: list[str], width: int = WIDTH
) -> SafeString:
    return mark_safe(
        f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {width} {_n(height)}" '
        f'width="{width}" height="{_n(height)}" role="img" aria-label="{escape(title)}" '
        f'aria-describedby="{escape(chart_id)}-desc" preserveAspectRatio="xMinYMin meet" '
        f'font-family="system-ui, sans-serif" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title>"
        f'<desc id="{escape(chart_id)}-desc">{escape(desc)}</desc>' + "".join(body) + "</svg>"
    )


def _legend(series: Sequence[Series], x: float, y: float) -> list[str]:
    parts = []
    for s in series:
        parts.append(
            f'<rect x="{_n(x)}" y="{_n(y - 10)}" width="12" height="12" rx="2" fill="{s.color}"/>'
        )
        parts.append(_text(x + 17, y, s.label, fill=INK))
        x += 30 + 7 * len(s.label)
    return parts


def empty(
    chart_id: str, title: str, desc: str, message: str = "No data in this range."
) -> SafeString:
    return _svg(chart_id, title, desc, 60, [_text(WIDTH / 2, 35, message, anchor="middle")])


def nice_max(value: float) -> float:
    """A round upper bound for an axis: 1, 2, 5, 10, 20, 50, …"""
    if value <= 0:
        return 1
    exponent = 10 ** floor(log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * exponent:
            return step * exponent
    return 10 * exponent


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def integer(value: float) -> str:
    return f"{value:.0f}"


# --- columns over time ------------------------------------------------------

LEFT, RIGHT, TOP, BOTTOM = 48, 16, 34, 40


def integer_ticks(top: float) -> int:
    """How many steps to divide [0, top] into so that every tick is a whole number."""
    if top <= 5:
        return max(1, int(top))
    return 5 if top % 5 == 0 else 4


def _y_axis(
    top: float, height: float, y_max: float, fmt: Callable[[float], str], ticks: int = 4
) -> list[str]:
    parts = []
    for i in range(ticks + 1):
        value = y_max * i / ticks
        y = top + height - height * i / ticks
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_n(y)}" y2="{_n(y)}" '
            f'stroke="{GRID if i else AXIS}" stroke-width="1"/>'
        )
        parts.append(_text(LEFT - 6, y + 4, fmt(value), anchor="end"))
    return parts


def _x_labels(labels: Sequence[str], x_of: Callable[[int], float], y: float) -> list[str]:
    # At most about eight labels, always the first and the last.
    step = max(1, ceil(len(labels) / 8))
    shown = set(range(0, len(labels), step)) | {len(labels) - 1}
    return [_text(x_of(i), y, labels[i], anchor="middle") for i in sorted(shown)]


def stacked_columns(
    *,
    chart_id: str,
    title: str,
    desc: str,
    labels: Sequence[str],
    series: Sequence[Series],
    rows: Sequence[dict],
) -> SafeString:
    """One column per label, stacked by series (`rows[i][series.key]` counts)."""
    if not labels:
        return empty(chart_id, title, desc)
    height = 260
    plot_h = height - TOP - BOTTOM
    plot_w = WIDTH - LEFT - RIGHT
    totals = [sum(row.get(s.key, 0) for s in series) for row in rows]
    y_max = nice_max(max(totals))
    slot = plot_w / len(labels)
    bar = max(1.0, min(40.0, slot * 0.75))
    parts = _legend(series, LEFT, 16)
    parts += _y_axis(TOP, plot_h, y_max, integer, integer_ticks(y_max))

    def x_of(i: int) -> float:
        return LEFT + slot * i + slot / 2

    for i, (label, row) in enumerate(zip(labels, rows, strict=True)):
        y = TOP + plot_h
        for s in series:
            count = row.get(s.key, 0)
            if not count:
                continue
            h = plot_h * count / y_max
            y -= h
            parts.append(
                f'<rect x="{_n(x_of(i) - bar / 2)}" y="{_n(y)}" width="{_n(bar)}" '
                f'height="{_n(h)}" fill="{s.color}"><title>{escape(label)}: '
                f"{escape(s.label)} {count}</title></rect>"
            )
    parts += _x_labels(labels, x_of, TOP + plot_h + 18)
    return _svg(chart_id, title, desc, height, parts)


def line(
    *,
    chart_id: str,
    title: str,
    desc: str,
    labels: Sequence[str],
    values: Sequence[float | None],
    color: str = BLUE,
    y_max: float = 1.0,
    fmt: Callable[[float], str] = percent,
) -> SafeString:
    """A line over labels; a None value breaks the line (nothing to measure that day)."""
    if not any(v is not None for v in values):
        return empty(chart_id, title, desc)
    height = 230
    plot_h = height - TOP - BOTTOM
    plot_w = WIDTH - LEFT - RIGHT
    slot = plot_w / len(labels)

    def x_of(i: int) -> float:
        return LEFT + slot * i + slot / 2

    def y_of(v: float) -> float:
        return TOP + plot_h - plot_h * min(v, y_max) / y_max

    parts = _y_axis(TOP, plot_h, y_max, fmt)
    segment: list[str] = []
    segments: list[list[str]] = []
    for i, v in enumerate(values):
        if v is None:
            if segment:
                segments.append(segment)
            segment = []
            continue
        segment.append(f"{_n(x_of(i))},{_n(y_of(v))}")
    if segment:
        segments.append(segment)
    for seg in segments:
        parts.append(
            f'<polyline points="{" ".join(seg)}" fill="none" stroke="{color}" '
            f'stroke-width="2" stroke-linejoin="round"/>'
        )
    for i, v in enumerate(values):
        if v is not None:
            parts.append(
                f'<circle cx="{_n(x_of(i))}" cy="{_n(y_of(v))}" r="3.5" fill="{color}">'
                f"<title>{escape(labels[i])}: {escape(fmt(v))}</title></circle>"
            )
    parts += _x_labels(labels, x_of, TOP + plot_h + 18)
    return _svg(chart_id, title, desc, height, parts)


# --- horizontal bars --------------------------------------------------------

LABEL_W = 220
VALUE_W = 70
NARROW_WIDTH, NARROW_LABEL_W = 360, 130


@dataclass(frozen=True)
class _BarLayout:
    """Where a bar chart's pieces go: its plot area, each row's block, the value scale."""

    low: float
    high: float
    stacked: bool
    per_row: float  # the height of a row's bars
    block: float  # the height of a row with its label beside the bars (one or two lines)
    top: float
    rows: int
    plot_x: float = LABEL_W
    plot_w: float = WIDTH - LABEL_W - VALUE_W

    BAR_H = 14

    @property
    def row_h(self) -> float:
        return self.block + 12

    @property
    def axis_y(self) -> float:
        return self.top + self.row_h * self.rows

    def x_of(self, v: float) -> float:
        return self.plot_x + self.plot_w * (v - self.low) / (self.high - self.low)


def bars(
    *,
    chart_id: str,
    title: str,
    desc: str,
    rows: Sequence[BarRow],
    series: Sequence[Series],
    domain: tuple[float, float] = (0.0, 1.0),
    fmt: Callable[[float], str] = percent,
    stacked: bool = False,
    narrow: bool = False,
) -> SafeString:
    """Horizontal bars, one group per row; grouped by series, or stacked.

    A domain below zero (kappa runs from −1 to 1) draws bars out from a zero line.
    `narrow` draws it NARROW_WIDTH wide, to be shown at its own size: scaled down
    to a phone's width, the wide chart's labels shrink to about 5 px.
    """
    if not rows:
        return empty(chart_id, title, desc)
    width, label_w, label_chars = (
        (NARROW_WIDTH, NARROW_LABEL_W, 18) if narrow else (WIDTH, LABEL_W, 32)
    )
    bar_h = _BarLayout.BAR_H
    per_row = bar_h + 4 if stacked else len(series) * (bar_h + 3)
    shown = wrapped_labels([row.label for row in rows], label_chars)
    # Room for a two-line label; the bars are centred beside it.
    block = max(per_row, 30) if any(len(lines) > 1 for lines in shown) else per_row
    legend_h = 26 if len(series) > 1 else 0
    layout = _BarLayout(
        low=domain[0],
        high=domain[1],
        stacked=stacked,
        per_row=per_row,
        block=block,
        top=legend_h + 8,
        rows=len(rows),
        plot_x=label_w,
        plot_w=width - label_w - VALUE_W,
    )
    parts = _legend(series, layout.plot_x, 16) if legend_h else []
    parts += _bar_axis(layout, fmt)
    for r, row in enumerate(rows):
        parts += _bar_row(layout, r, row, shown[r], series, fmt)
    return _svg(chart_id, title, desc, layout.axis_y + 24, parts, width)


def _bar_axis(layout: _BarLayout, fmt: Callable[[float], str]) -> list[str]:
    """Ticks at the domain's ends and zero, and the middle when the domain starts at zero
    (unless the axis counts whole things and the middle is not one)."""
    low, high = layout.low, layout.high
    middle = (low + high) / 2
    whole = fmt is integer
    ticks = sorted(
        {low, high, 0.0} | ({middle} if low == 0 and not (whole and middle % 1) else set())
    )
    parts = []
    for t in ticks:
        parts.append(
            f'<line x1="{_n(layout.x_of(t))}" x2="{_n(layout.x_of(t))}" '
            f'y1="{_n(layout.top - 4)}" y2="{_n(layout.axis_y)}" '
            f'stroke="{AXIS if t == 0 else GRID}" stroke-width="1"/>'
        )
        parts.append(_text(layout.x_of(t), layout.axis_y + 16, fmt(t), anchor="middle"))
    return parts


def _bar_row(
    layout: _BarLayout,
    r: int,
    row: BarRow,
    lines: list[str],
    series: Sequence[Series],
    fmt: Callable[[float], str],
) -> list[str]:
    """Row `r`: its label (one or two lines), its bars with their values, a stack's total."""
    low, bar_h, stacked = layout.low, layout.BAR_H, layout.stacked
    middle_y = layout.top + layout.row_h * r + 6 + layout.block / 2
    y0 = middle_y - layout.per_row / 2
    first_y = middle_y + 4 - 7 * (len(lines) - 1)
    parts = [
        f"<g><title>{escape(row.label)}</title>"
        + "".join(
            _text(layout.plot_x - 8, first_y + 14 * i, line, anchor="end", fill=INK)
            for i, line in enumerate(lines)
        )
        + "</g>"
    ]
    stack_x = layout.x_of(max(low, 0.0))
    for s_i, (s, value) in enumerate(zip(series, row.values, strict=True)):
        text = (
            row.texts[s_i] if s_i < len(row.texts) else (fmt(value) if value is not None else "—")
        )
        y = y0 if stacked else y0 + s_i * (bar_h + 3)
        if value is None:
            if not stacked:
                parts.append(_text(layout.x_of(max(low, 0.0)) + 4, y + bar_h - 3, text))
            continue
        if stacked:
            if not value:
                continue
            w = layout.plot_w * value / (layout.high - low)
            x = stack_x
            stack_x += w
        else:
            start, end = sorted((layout.x_of(0.0 if low < 0 else low), layout.x_of(value)))
            x, w = start, max(end - start, 0.0)
        parts.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(max(w, 0.5))}" height="{bar_h}" '
            f'rx="2" fill="{s.color}"><title>{escape(row.label)}: {escape(s.label)} '
            f"{escape(text)}</title></rect>"
        )
        if not stacked:
            beyond = layout.x_of(value) + 4 if value >= 0 else layout.x_of(0.0) + 4
            parts.append(_text(beyond, y + bar_h - 3, text, fill=INK))
    if stacked:
        total = sum(v or 0 for v in row.values)
        parts.append(_text(stack_x + 4, y0 + bar_h - 3, fmt(total), fill=INK))
    return parts
