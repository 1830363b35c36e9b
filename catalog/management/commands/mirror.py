"""`manage.py mirror URL [--name NAME] [--include GLOB …] [--exclude GLOB …]`: add (or change) an
upstream registry and sync it once now, with progress and a summary. Later syncs run on the Celery
beat, every `--interval` minutes."""

import sys
import time

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from catalog.services.mirroring import PAGE_LIMIT, SyncRunning, UpstreamError, upstream_sync
from catalog.services.upstreams import upstream_default_name, upstream_save


class Command(BaseCommand):
    help = "Mirror another registry's /v0.1 API: add it as an upstream and sync it once now."

    def add_arguments(self, parser):
        parser.add_argument(
            "url", help="the upstream's base URL, before /v0.1 (https://registry.example.com)"
        )
        parser.add_argument("--name", help="a short name for it (default: from its host)")
        parser.add_argument(
            "--include", action="append", default=[], metavar="GLOB", help="mirror only these names"
        )
        parser.add_argument(
            "--exclude", action="append", default=[], metavar="GLOB", help="leave out these names"
        )
        parser.add_argument("--auth-header", default=None, help="sent as Authorization (Bearer …)")
        parser.add_argument(
            "--interval", type=int, default=None, metavar="MINUTES", help="later syncs (default 60)"
        )
        parser.add_argument("--no-sync", action="store_true", help="only add the upstream; the beat syncs it")
        parser.add_argument(
            "--page-size",
            type=int,
            default=PAGE_LIMIT,
            metavar="N",
            help=f"entries a page, 1-100 (default {PAGE_LIMIT})",
        )

    def handle(
        self, *args, url, name, include, exclude, auth_header, interval, no_sync, page_size, **options
    ):
        if not 1 <= page_size <= PAGE_LIMIT:
            raise CommandError(f"--page-size must be from 1 to {PAGE_LIMIT}.")
        name = name or upstream_default_name(url)
        fields = {"url": url, "include": include, "exclude": exclude}
        if auth_header is not None:
            fields["auth_header"] = auth_header
        if interval is not None:
            fields["interval_minutes"] = interval
        try:
            upstream, created = upstream_save(actor=None, name=name, **fields)
        except ValidationError as invalid:
            raise CommandError(
                "; ".join(f"{k}: {' '.join(v)}" for k, v in invalid.message_dict.items())
            ) from None
        self.stdout.write(f"{'Added' if created else 'Using'} upstream {upstream.name} ({upstream.url}).")
        if no_sync:
            return
        started = time.monotonic()
        try:
            report = upstream_sync(upstream, progress=self._progress(started), page_limit=page_size)
        except SyncRunning as running:
            raise CommandError(str(running)) from None
        except UpstreamError as error:
            self.stderr.write("")
            raise CommandError(
                f"The sync failed: {error} (it resumes where it stopped on the next run)."
            ) from None
        self.stderr.write("")
        seconds = time.monotonic() - started
        self.stdout.write(
            self.style.SUCCESS(
                f"Synced {upstream.name} in {seconds:.1f} s: {report.seen} seen, {report.added} added, "
                f"{report.updated} updated, {report.unchanged} unchanged, {report.skipped} left out by "
                f"the filters, {report.failed} failed."
            )
        )
        for failure in report.failures[:20]:
            self.stdout.write(f"  failed {failure['name']} {failure['version']}: {failure['reason']}")
        if report.failed > 20:
            self.stdout.write(f"  … and {report.failed - 20} more (the admin shows up to 50).")

    def _progress(self, started: float):
        interactive = self.stderr.isatty() if hasattr(self.stderr, "isatty") else sys.stderr.isatty()

        def show(report) -> None:
            rate = report.seen / max(time.monotonic() - started, 1e-6)
            line = (
                f"page {report.pages}: {report.seen} seen ({rate:.0f}/s), {report.added} added, "
                f"{report.updated} updated, {report.failed} failed"
            )
            if interactive:
                self.stderr.write("\r" + line, ending="")
                self.stderr.flush()
            else:
                self.stderr.write(line)

        return show
