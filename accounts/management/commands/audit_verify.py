"""`manage.py audit_verify`: check the audit chain and its signed checkpoints (accounts/audit_verify.py).
Exit 0 when it verifies; 1 naming the first row that does not."""

from django.core.management.base import BaseCommand, CommandError

from accounts.audit_verify import audit_chain_verified


class Command(BaseCommand):
    help = "Check the audit chain: every row's hash, every link, every signed checkpoint."

    def handle(self, *args, **options):
        verdict = audit_chain_verified(progress=lambda rows: self.stderr.write(f"… {rows:,} rows checked"))
        waiting = f"; {verdict.unchained} rows wait to be linked" if verdict.unchained else ""
        if not verdict.ok:
            raise CommandError(f"{verdict.problem} ({verdict.rows:,} rows read{waiting})")
        self.stdout.write(
            f"The audit chain verifies: {verdict.rows:,} rows, "
            f"{verdict.checkpoints} signed checkpoints{waiting}."
        )
