from django.core.management.base import BaseCommand

from connections.services import credentials_reseal


class Command(BaseCommand):
    help = (
        "Seal every stored upstream credential again under the first key of CREDENTIAL_KEYS (after a new "
        "key was put first); the old keys can then be removed."
    )

    def handle(self, *args, **options):
        def progress(done: int, total: int) -> None:
            if done == total or done % 100 == 0:
                self.stdout.write(f"{done}/{total}")

        resealed, unopenable = credentials_reseal(progress=progress)
        self.stdout.write(self.style.SUCCESS(f"{resealed} credentials sealed under the newest key."))
        if unopenable:
            self.stdout.write(
                self.style.WARNING(
                    f"{unopenable} credentials open under no configured key (or no longer fit their server); "
                    "they are never used and are left as they are."
                )
            )
