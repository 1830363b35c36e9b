"""Limits and quarantines in the operator console (administrators only), checked by the one rule
(limits/rules.py) in the form and saved through the services, so the console validates and audits
exactly like the internal API."""

from django import forms
from django.contrib import admin

from core.admin import ConsoleModelAdmin
from limits.choices import WINDOWS, Counted
from limits.models import Limit, Quarantine
from limits.rules import limit_problems, quarantine_problems
from limits.selectors import limit_in_words
from limits.services import limit_remove, limit_set, quarantine_lift, quarantine_set


def _window_field(per: str) -> forms.IntegerField:
    return forms.IntegerField(
        required=False, min_value=1, label=f"Calls a {per}", help_text="Empty: no such window."
    )


class LimitForm(forms.ModelForm):
    """A limit in plain fields: how many calls per second, minute, hour and day (any of them), and what
    counts, ticked; the one rule (limits/rules.py) judges the result as it judges the internal API's."""

    counts = forms.MultipleChoiceField(
        choices=Counted.choices,
        initial=list(Counted.values),
        widget=forms.CheckboxSelectMultiple,
        help_text="What each window counts (listing and session upkeep never count).",
    )

    per_second = _window_field("second")
    per_minute = _window_field("minute")
    per_hour = _window_field("hour")
    per_day = _window_field("day")

    class Meta:
        model = Limit
        fields = ("caller_kind", "caller", "target_kind", "target", "fail_open", "note")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            for window in self.instance.windows or []:
                if f"per_{window.get('per')}" in self.fields:
                    self.fields[f"per_{window['per']}"].initial = window.get("limit")
            self.fields["counts"].initial = list(self.instance.counts)

    def _post_clean(self):
        super()._post_clean()
        if self.errors:
            return
        data = self.cleaned_data
        data["windows"] = [
            {"per": per, "limit": data[f"per_{per}"]} for per in WINDOWS if data.get(f"per_{per}") is not None
        ]
        problems = limit_problems(
            caller_kind=data.get("caller_kind", ""),
            caller=data.get("caller", ""),
            target_kind=data.get("target_kind", ""),
            target=data.get("target", ""),
            windows=data["windows"],
            counts=data.get("counts"),
        )
        if "windows" in problems and not data["windows"]:
            problems["windows"] = "Give at least one window: how many calls a second, minute, hour or day."
        for field, problem in problems.items():
            target = "per_minute" if field == "windows" else field
            self.add_error(target if target in self.fields else None, problem)


@admin.register(Limit)
class LimitAdmin(ConsoleModelAdmin):
    """How much anyone may call anything through the gateway (docs/limits.md)."""

    form = LimitForm
    fields = (
        "caller_kind",
        "caller",
        "target_kind",
        "target",
        *(f"per_{per}" for per in WINDOWS),
        "counts",
        "fail_open",
        "note",
    )
    list_display = ("__str__", "in_words", "fail_open", "note", "created_by")
    list_filter = ("caller_kind", "target_kind", "fail_open")
    search_fields = ("caller", "target", "note")
    list_select_related = ("created_by",)

    @admin.display(description="limit")
    def in_words(self, obj: Limit) -> str:
        return limit_in_words(obj)

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
