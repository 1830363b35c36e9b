"""`manage.py create_service_account NAME --groups a,b`: a machine identity with client credentials."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.services import service_account_create


class Command(BaseCommand):
    help = "Create a service account in the given groups and print its client id and secret (shown once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--groups", default="", help="comma-separated group names (created when missing)")
        parser.add_argument("--description", default="")

    def handle(self, *args, **options):
        groups = [name.strip() for name in options["groups"].split(",") if name.strip()]
        try:
            new = service_account_create(
                actor=None,
                username=options["username"],
                group_names=groups,
                description=options["description"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        self.stdout.write(f"client_id={new.credential.client_id}")
        self.stdout.write(f"client_secret={new.client_secret}")
        self.stderr.write("The secret is shown only now; store it safely.")
