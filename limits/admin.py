"""Limits and quarantines in the operator console (administrators only), checked by the one rule
(limits/rules.py) in the form and saved through the services, so the console validates and audits
exactly like the internal API."""

import json

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError

from core.admin import ConsoleModelAdmin
from limits.models import Limit, Quarantine
from limits.rules import limit_problems, quarantine_problems
from limits.services import limit_remove, limit_set, quarantine_lift, quarantine_set


class LimitForm(forms.ModelForm):
    windows = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text='A JSON list: [{"per": "minute", "limit": 60}, {"per": "day", "limit": 5000}] '
        "(second, minute, hour, day; docs/limits.md).",
    )
    counts = forms.CharField(
        initial='["tools", "prompts", "resources", "a2a"]',
        help_text='A JSON list of what counts: "tools", "prompts", "resources", "a2a".',
    )

    class Meta:
        model = Limit
        fields = ("caller_kind", "caller", "target_kind", "target", "fail_open", "note")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["windows"].initial = json.dumps(self.instance.windows)
            self.fields["counts"].initial = json.dumps(self.instance.counts)

    def clean_windows(self):
        return _json(self.cleaned_data["windows"])

    def clean_counts(self):
        return _json(self.cleaned_data["counts"])

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        data = self.cleaned_data
        problems = limit_problems(
            caller_kind=data.get("caller_kind", ""),
            caller=data.get("caller", ""),
            target_kind=data.get("target_kind", ""),
            target=data.get("target", ""),
            windows=data.get("windows"),
            counts=data.get("counts"),
        )
        for field, problem in problems.items():
            self.add_error(field if field in self.fields else None, problem)


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError as invalid:
        raise ValidationError(f"Not JSON: {invalid}.") from None


@admin.register(Limit)
class LimitAdmin(ConsoleModelAdmin):
    """How much anyone may call anything through the gateway (docs/limits.md)."""

    form = LimitForm
    list_display = ("__str__", "windows", "counts", "fail_open", "note", "created_by")
    list_filter = ("caller_kind", "target_kind", "fail_open")
    search_fields = ("caller", "target", "note")
    list_select_related = ("created_by",)

    def service_save(self, request, obj, form, change):
        data = form.cleaned_data
        return limit_set(
            actor=request.user,
            limit=Limit.objects.get(pk=obj.pk) if change else None,
            caller_kind=data["caller_kind"],
            caller=data["caller"],
            target_kind=data["target_kind"],
            target=data["target"],
            windows=data["windows"],
            counts=data["counts"],
            fail_open=data["fail_open"],
            note=data["note"],
        )

    def service_delete(self, request, instance):
        limit_remove(actor=request.user, limit=instance)


class QuarantineForm(forms.ModelForm):
    class Meta:
        model = Quarantine
        fields = ("kind", "name", "reason")

    def __init__(self, *args, actor=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.actor = actor

    def validate_unique(self):
        return None  # quarantining again replaces the reason

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        data = self.cleaned_data
        problems = quarantine_problems(
            kind=data["kind"], name=data["name"], reason=data["reason"], actor=self.actor
        )
        for field, problem in problems.items():
            self.add_error(field if field in self.fields else None, problem)


@admin.register(Quarantine)
class QuarantineAdmin(ConsoleModelAdmin):
    """Callers and targets stopped at once; deleting a quarantine lifts it."""

    form = QuarantineForm
    list_display = ("kind", "name", "reason", "created_by", "created_at")
    list_filter = ("kind",)
    search_fields = ("name", "reason")
    list_select_related = ("created_by",)
    readonly_fields = ("created_by", "created_at")

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)

        class WithActor(form):
            def __init__(self, *args, **inner):
                super().__init__(*args, actor=request.user, **inner)

        return WithActor

    def service_save(self, request, obj, form, change):
        data = form.cleaned_data
        return quarantine_set(actor=request.user, kind=data["kind"], name=data["name"], reason=data["reason"])

    def service_delete(self, request, instance):
        quarantine_lift(actor=request.user, quarantine=instance)
