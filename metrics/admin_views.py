"""The operators' metrics page in the admin (/admin/metrics/plots/): requests, errors and latency per
server and per tool over the last hours, as server-rendered SVG plots. Superusers only: metric rows
name every server and tool."""

from dataclasses import dataclass

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import SafeString

from metrics.plots import BUCKETS, DEFAULT_HOURS, WINDOWS_HOURS, Series, metric_plots
from metrics.svg import line_chart

REQUESTS_COLOUR, ERRORS_COLOUR, LATENCY_COLOUR = "#2b6cb0", "#c53030", "#6b46c1"


@dataclass(frozen=True)
class Plotted:
    series: Series
    traffic: SafeString  # requests and errors per bucket
    latency: SafeString  # mean duration per bucket


def _plotted(series: Series, x_labels: tuple[str, str]) -> Plotted:
    traffic = line_chart(
        [
            ("requests", REQUESTS_COLOUR, series.requests_per_bucket),
            ("errors", ERRORS_COLOUR, series.errors_per_bucket),
        ],
        unit="calls per interval",
        x_labels=x_labels,
        title=f"Requests and errors of {series.name}",
    )
    latency = line_chart(
        [("mean", LATENCY_COLOUR, series.latency_per_bucket)],
        unit="ms",
        x_labels=x_labels,
        title=f"Latency of {series.name}",
    )
    return Plotted(series, traffic, latency)


def metrics_plots(request):
    if not admin.site.principal_of(request).is_admin:  # registry administrators
        raise PermissionDenied
    try:
        hours = int(request.GET.get("hours", DEFAULT_HOURS))
    except ValueError:
        hours = DEFAULT_HOURS
    hours = hours if hours in WINDOWS_HOURS else DEFAULT_HOURS
    plots = metric_plots(hours)
    win = plots["window"]
    local = timezone.localtime
    x_labels = (local(win.start).strftime("%H:%M"), local(win.start + win.bucket * BUCKETS).strftime("%H:%M"))
    context = {
        **admin.site.each_context(request),
        "title": "Metrics: requests, errors and latency",
        "hours": hours,
        "windows": WINDOWS_HOURS,
        "bucket_minutes": round(win.bucket.total_seconds() / 60, 1),
        "servers": [_plotted(series, x_labels) for series in plots["servers"]],
        "tools": [_plotted(series, x_labels) for series in plots["tools"]],
        "reporting_off": not settings.METRICS_API_KEY,
    }
    return render(request, "admin/metrics/plots.html", context)
