"""Fields of the agent API's serializers: strict strings, http(s) URLs, card readers and tags."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.a2a import Invalid
from core.openapi import TEXT_OR_LIST
from core.validators import validate_http_url

MAX_TAGS = 50


class StrictCharField(serializers.CharField):
    """A JSON string and only that: numbers, booleans and lists are refused, not coerced."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class HttpUrlField(StrictCharField):
    def __init__(self, **kwargs):
        super().__init__(max_length=2048, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value:
            try:
                validate_http_url(value)
            except DjangoValidationError as exc:
                raise serializers.ValidationError(exc.messages) from None
        return value


@extend_schema_field(OpenApiTypes.ANY)
class ReaderField(serializers.Field):
    """A JSON value read by one of the card readers (agents.a2a); an `Invalid` becomes the field's message."""

    def __init__(self, read, **kwargs):
        self.read = read
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        try:
            return self.read(data)
        except Invalid as exc:
            raise serializers.ValidationError(str(exc)[:1].upper() + str(exc)[1:]) from None

    def to_representation(self, value):
        return value


@extend_schema_field(TEXT_OR_LIST)
class TagsField(serializers.Field):
    """Comma-separated text in and out (the interface's card shape), a list in the database."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            raise serializers.ValidationError('Must be a comma-separated string, e.g. "nlp, summaries".')
        tags = list(dict.fromkeys(tag.strip() for tag in data.split(",") if tag.strip()))
        if len(tags) > MAX_TAGS:
            raise serializers.ValidationError(f"At most {MAX_TAGS} tags.")
        if any(len(tag) > 64 for tag in tags):
            raise serializers.ValidationError("Each tag must be at most 64 characters.")
        return tags

    def to_representation(self, value):
        return ", ".join(value)
