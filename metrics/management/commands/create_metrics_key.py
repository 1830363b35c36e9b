"""`manage.py create_metrics_key NAME [--rate-limit N] [--admin]`: make (or replace) the API key of
service NAME and print it once; only its SHA-256 is stored."""

from django.core.management.base import BaseCommand, CommandError

from metrics.services import api_key_create


class Command(BaseCommand):
    help = "Create or replace the metrics API key of a service and print it (shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the sending service, e.g. registry or auth-server")
        parser.add_argument("--rate-limit", type=int, default=None, help="requests per minute for this key")
        parser.add_argument("--admin", action="store_true", help="may read and apply retention policies")

    def handle(self, *args, name, rate_limit, admin, **options):
        if rate_limit is not None and rate_limit < 1:
            raise CommandError("--rate-limit must be at least 1 request per minute.")
        try:
            key, raw = api_key_create(actor=None, service=name, rate_limit=rate_limit, is_admin=admin)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(
            f"Key for service {key.service!r} (admin: {'yes' if key.is_admin else 'no'}, "
            f"rate limit: {key.rate_limit or 'default'}/min). It is shown only now; store it safely:"
        )
        self.stdout.write(raw)
