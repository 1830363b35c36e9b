from django.conf import settings
from django.db import models

from limits.choices import CallerKind, Counted, TargetKind


def every_count() -> list[str]:
    return list(Counted.values)


class Limit(models.Model):
    """How many calls a caller (or each member of a group) may make, to one target, to every target with a
    tag, or to every target; or how many a target takes from everyone together. `windows` is a list of
    `{"per": "second"|"minute"|"hour"|"day", "limit": n}`; limits/rules.py says what is valid."""

    caller_kind = models.CharField(max_length=16, choices=CallerKind.choices, blank=True)
    caller = models.CharField(max_length=200, blank=True)  # empty with caller_kind: every caller together
    target_kind = models.CharField(max_length=16, choices=TargetKind.choices, blank=True)
    target = models.CharField(max_length=200, blank=True)  # empty with target_kind: every target
    windows = models.JSONField()
    counts = models.JSONField(default=every_count)
    fail_open = models.BooleanField(
        default=False, help_text="let calls through when Redis cannot count them (default: refuse with 503)"
    )
    note = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["caller_kind", "caller", "target_kind", "target", "id"]

    def __str__(self) -> str:
        who = f"{self.caller_kind}:{self.caller}" if self.caller_kind else "everyone"
        what = f"{self.target_kind}:{self.target}" if self.target_kind else "every target"
        return f"{who} → {what}"


class Quarantine(models.Model):
    """A caller or a target stopped at once: everything it sends (or everything sent to it) through the
    gateway is refused until the quarantine is lifted (deleted)."""

    kind = models.CharField(max_length=16, choices=CallerKind.choices + TargetKind.choices)
    name = models.CharField(max_length=200)
    reason = models.CharField(max_length=500, help_text="what the refused caller is told")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="quarantine_once")]

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"
