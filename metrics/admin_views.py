"""The operators' metrics page in the admin (/admin/metrics/plots/): requests, errors and latency per
server and per tool over the last hours, and the calls refused by limits and quarantine per target, as
server-rendered SVG plots. Superusers only: metric rows
name every server and tool."""

import logging
from dataclasses import dataclass

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import SafeString
from redis.exceptions import RedisError

from core.metrics_client import reporting_on
from core.redis_clients import sync_client
from metrics.plots import BUCKETS, DEFAULT_HOURS, WINDOWS_HOURS, Series, metric_plots
from metrics.refusals import RefusalSeries, refusal_series
from metrics.svg import line_chart

logger = logging.getLogger(__name__)
REQUESTS_COLOUR, ERRORS_COLOUR, LATENCY_COLOUR = "#2b6cb0", "#c53030", "#6b46c1"
REFUSAL_LINES = (
    ("rate_limited", "rate limited", "#dd6b20"),
    ("quarantined", "quarantined", "#1a202c"),
    ("limits_unavailable", "limits unavailable", "#718096"),
)


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


@dataclass(frozen=True)
class PlottedRefusals:
    series: RefusalSeries
    refusals: SafeString  # refused calls per bucket, by reason


def _plotted_refusals(series: RefusalSeries, x_labels: tuple[str, str]) -> PlottedRefusals:
    chart = line_chart(
        [(label, colour, series.per_bucket[reason]) for reason, label, colour in REFUSAL_LINES],
        unit="refused calls per interval",
        x_labels=x_labels,
        title=f"Calls to {series.name} refused by limits and quarantine",
    )
    return PlottedRefusals(series, chart)


def _refused(win, x_labels) -> list[PlottedRefusals] | None:
    """The refusals' plots, or None when Redis cannot be read (the rest of the page stands)."""
    try:
        found = refusal_series(sync_client(), win)
    except (RedisError, OSError):
        logger.warning("The metrics page could not read the refusals from Redis.", exc_info=True)
        return None
    return [_plotted_refusals(series, x_labels) for series in found]


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
        "refused": _refused(win, x_labels),
        "reporting_off": not reporting_on(),
    }
    return render(request, "admin/metrics/plots.html", context)
