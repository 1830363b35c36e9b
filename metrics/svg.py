"""Small server-rendered line charts (SVG) for the metrics page: no JavaScript, no charting library."""

from django.utils.html import format_html, format_html_join

WIDTH, HEIGHT = 480, 140
LEFT, RIGHT, TOP, BOTTOM = 44, 8, 10, 22


def _nice_max(value: float) -> float:
    """A round upper bound for the y axis (1, 2 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1) if value >= 1 else 1
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(10 * magnitude)


def line_chart(
    lines: list[tuple[str, str, list]], *, unit: str, x_labels: tuple[str, str], title: str
) -> str:
    """An SVG chart of `lines` (label, CSS colour, values with None for no data) over the same buckets,
    with a y axis from 0 to a round maximum and the first and last time under the x axis."""
    values = [v for _, _, series in lines for v in series if v is not None]
    top = _nice_max(max(values, default=0))
    count = max((len(series) for _, _, series in lines), default=1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(index: int) -> float:
        return LEFT + (plot_w * index / max(count - 1, 1))

    def y(value: float) -> float:
        return TOP + plot_h * (1 - value / top)

    paths = []
    for label, colour, series in lines:
        segments, current = [], []
        for index, value in enumerate(series):
            if value is None:
                if current:
                    segments.append(current)
                current = []
                continue
            current.append(f"{x(index):.1f},{y(value):.1f}")
        if current:
            segments.append(current)
        for segment in segments:
            points = " ".join(segment) if len(segment) > 1 else f"{segment[0]} {segment[0]}"
            paths.append((colour, points, label))
    polylines = format_html_join(
        "",
        '<polyline fill="none" stroke="{}" stroke-width="1.6" points="{}"><title>{}</title></polyline>',
        paths,
    )
    legend = format_html_join(
        "",
        '<tspan fill="{}" dx="10">■ {}</tspan>',
        ((colour, label) for label, colour, _ in lines),
    )
    return format_html(
        '<svg viewBox="0 0 {w} {h}" role="img" aria-label="{title}" xmlns="http://www.w3.org/2000/svg" '
        'font-family="sans-serif" font-size="10">'
        '<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#999"/>'
        '<line x1="{l}" y1="{t}" x2="{l}" y2="{b}" stroke="#999"/>'
        '<line x1="{l}" y1="{t}" x2="{r}" y2="{t}" stroke="#eee"/>'
        '<text x="{lt}" y="{ty}" text-anchor="end">{top}</text>'
        '<text x="{lt}" y="{b}" text-anchor="end">0</text>'
        '<text x="{l}" y="{xl}">{first}</text><text x="{r}" y="{xl}" text-anchor="end">{last}</text>'
        '<text x="{r}" y="{ty}" text-anchor="end">{unit}{legend}</text>'
        "{polylines}</svg>",
        w=WIDTH,
        h=HEIGHT,
        title=title,
        l=LEFT,
        r=WIDTH - RIGHT,
        t=TOP,
        b=TOP + plot_h,
        lt=LEFT - 4,
        ty=TOP + 8,
        top=f"{top:g}",
        xl=HEIGHT - 6,
        first=x_labels[0],
        last=x_labels[1],
        unit=unit,
        legend=legend,
        polylines=polylines,
    )
