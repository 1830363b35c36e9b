"""The shapes of the limits API, for its schema (`/api/schema/`): what a client sends and gets back. The
rule itself (limits/rules.py) judges every write; these describe it so a generated client can make each
request."""

from rest_framework import serializers

from limits.choices import WINDOWS, CallerKind, Counted, TargetKind
from limits.rules import LIMIT_MAX, NAME_MAX, REASON_MAX


class WindowSerializer(serializers.Serializer):
    per = serializers.ChoiceField(
        choices=list(WINDOWS), help_text="the window: a second, minute, hour or day"
    )
    limit = serializers.IntegerField(min_value=1, max_value=LIMIT_MAX, help_text="calls allowed in it")


class LimitWriteSerializer(serializers.Serializer):
    """A limit as it is set (POST) or replaced whole (PUT)."""

    caller_kind = serializers.ChoiceField(
        choices=["", *CallerKind.values], required=False, default="", help_text="empty: every caller together"
    )
    caller = serializers.CharField(
        max_length=NAME_MAX,
        required=False,
        allow_blank=True,
        default="",
        help_text="username, group or client id",
    )
    target_kind = serializers.ChoiceField(
        choices=["", *TargetKind.values], required=False, default="", help_text="empty: every target"
    )
    target = serializers.CharField(
        max_length=NAME_MAX, required=False, allow_blank=True, default="", help_text="a path, or a tag"
    )
    windows = WindowSerializer(many=True, min_length=1, max_length=len(WINDOWS))
    counts = serializers.ListField(
        child=serializers.ChoiceField(choices=Counted.values),
        min_length=1,
        required=False,
        help_text="what counts; every kind of call when left out",
    )
    fail_open = serializers.BooleanField(
        required=False, default=False, help_text="let calls through when Redis cannot count (else 503)"
    )
    note = serializers.CharField(required=False, allow_blank=True, default="")


class LimitSerializer(LimitWriteSerializer):
    id = serializers.IntegerField()


class LimitListSerializer(serializers.Serializer):
    limits = LimitSerializer(many=True)


class QuarantineWriteSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[*CallerKind.values, *TargetKind.values])
    name = serializers.CharField(max_length=NAME_MAX, help_text="a username, group, client id or path")
    reason = serializers.CharField(max_length=REASON_MAX, help_text="what every refused request is told")


class QuarantineSerializer(QuarantineWriteSerializer):
    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class QuarantineListSerializer(serializers.Serializer):
    quarantines = QuarantineSerializer(many=True)
