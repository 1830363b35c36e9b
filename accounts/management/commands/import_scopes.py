"""`manage.py import_scopes FILE.yml`: load the reference implementation's scopes.yml."""

from pathlib import Path

import yaml
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.services import ScopesFileError, scopes_import


class Command(BaseCommand):
    help = "Import scopes, groups and identity-provider group mappings from a scopes.yml file."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="path to scopes.yml")

    def handle(self, *args, **options):
        path: Path = options["file"]
        try:
            document = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise CommandError(f"{path} is not valid YAML: {exc}") from exc
        try:
            summary = scopes_import(actor=None, document=document)
        except ScopesFileError as exc:
            raise CommandError(f"{path}: {exc}") from exc
        except ValidationError as invalid:  # a scope's rules are malformed (accounts/scope_rules.py)
            reasons = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in invalid.message_dict.items()
            )
            raise CommandError(f"{path}: nothing imported: {reasons}") from invalid
        self.stdout.write(
            self.style.SUCCESS(f"imported {summary['scopes']} scopes and {summary['groups']} groups")
        )
