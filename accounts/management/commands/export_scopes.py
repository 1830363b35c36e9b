"""`manage.py export_scopes [FILE.yml]`: write scopes in the reference implementation's layout."""

import yaml
from django.core.management.base import BaseCommand

from accounts.selectors import scopes_document


class Command(BaseCommand):
    help = "Export scopes, groups and their scopes as a scopes.yml document (to stdout or a file)."

    def add_arguments(self, parser):
        parser.add_argument("file", nargs="?", help="write here instead of stdout")

    def handle(self, *args, **options):
        text = yaml.safe_dump(scopes_document(), sort_keys=False, allow_unicode=True)
        if options["file"]:
            with open(options["file"], "w") as handle:
                handle.write(text)
            self.stdout.write(self.style.SUCCESS(f"wrote {options['file']}"))
        else:
            self.stdout.write(text, ending="")
