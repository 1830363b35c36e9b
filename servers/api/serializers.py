"""Input and output shapes of servers. Input serializers validate shape only (services own the rules)
and are shared by the dashboard forms and the internal API, so both accept exactly the same input."""

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.openapi import TEXT_OR_LIST
from core.untrusted import InputRejected, json_loads
from core.validators import (
    PATH_MAX_LENGTH,
    registry_path_field,
    validate_http_url,
)
from servers.choices import AuthType, Transport, UpstreamAuth
from servers.models import Server
from servers.services.registry import EDITABLE_FIELDS, WRITE_ONLY_FIELDS

MAX_TAGS = 50
MAX_TOOLS = 1000


@extend_schema_field(TEXT_OR_LIST)
class CommaListField(serializers.Field):
    """A list given as a comma-separated string (forms) or a JSON list; items trimmed, empties dropped."""

    def __init__(self, *, item_max_length=64, choices=None, max_items=MAX_TAGS, **kwargs):
        self.item_max_length = item_max_length
        self.choices = set(choices) if choices else None
        self.max_items = max_items
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        items = data.split(",") if isinstance(data, str) else data
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise serializers.ValidationError("Must be a comma-separated string or a list of strings.")
        items = list(dict.fromkeys(i.strip() for i in items if i.strip()))
        if len(items) > self.max_items:
            raise serializers.ValidationError(f"At most {self.max_items} items.")
        for item in items:
            if len(item) > self.item_max_length:
                raise serializers.ValidationError(
                    f"'{item[:20]}…' is longer than {self.item_max_length} characters."
                )
            if self.choices is not None and item not in self.choices:
                raise serializers.ValidationError(
                    f"'{item}' is not one of: {', '.join(sorted(self.choices))}."
                )
        return items

    def to_representation(self, value):
        return list(value)


@extend_schema_field(OpenApiTypes.ANY)
class JSONTextField(serializers.Field):
    """A JSON value given as text (forms) or already parsed (JSON bodies)."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            if not data.strip():
                return None
            try:  # the one input rule: storable text, bounded depth (core/untrusted.py)
                return json_loads(data)
            except InputRejected as rejected:
                if rejected.unparsable:
                    message = "Must be valid JSON."
                elif rejected.field in ("", "body"):
                    message = rejected.message  # the value as a whole
                else:
                    message = str(rejected)  # a place inside it, named
                raise serializers.ValidationError(message) from None
        return data

    def to_representation(self, value):
        return value


def validated_headers(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise serializers.ValidationError(
            'Must be a JSON object of header names to string values, e.g. {"X-Api-Key": "..."}.'
        )
    for name in value:
        if not name or any(c in name for c in " :\r\n") or len(name) > 100:
            raise serializers.ValidationError(f"'{name[:40]}' is not a valid header name.")
    if any("\r" in v or "\n" in v for v in value.values()):
        raise serializers.ValidationError("Header values cannot contain line breaks.")
    return value


def _validated_tools(value) -> list[dict] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise serializers.ValidationError("Must be a JSON list of tools.")
    if len(value) > MAX_TOOLS:
        raise serializers.ValidationError(f"At most {MAX_TOOLS} tools.")
    tools, seen = [], set()
    for index, tool in enumerate(value):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"].strip():
            raise serializers.ValidationError(f"Tool {index} needs a non-empty string 'name'.")
        schema = tool.get("inputSchema", tool.get("input_schema", {}))
        description = tool.get("description") or ""
        if not isinstance(schema, dict) or not isinstance(description, str):
            raise serializers.ValidationError(
                f"Tool {index}: 'inputSchema' must be an object, 'description' a string."
            )
        if tool["name"] in seen:
            raise serializers.ValidationError(f"Tool name '{tool['name']}' appears twice.")
        seen.add(tool["name"])
        tools.append({"name": tool["name"].strip()[:200], "description": description, "input_schema": schema})
    return tools


class ServerInputSerializer(serializers.Serializer):
    """A server as registered through the dashboard form or the internal API."""

    name = serializers.CharField(max_length=200)
    description = serializers.CharField()
    path = serializers.CharField(max_length=PATH_MAX_LENGTH + 10)
    proxy_pass_url = serializers.CharField(max_length=2048)
    tags = CommaListField(required=False)
    num_tools = serializers.IntegerField(required=False, min_value=0, max_value=100_000)
    num_stars = serializers.IntegerField(required=False, min_value=0, max_value=10_000_000)
    is_python = serializers.BooleanField(required=False)
    license = serializers.CharField(required=False, allow_blank=True, max_length=100)
    auth_type = serializers.ChoiceField(choices=AuthType.choices, required=False)
    auth_provider = serializers.CharField(required=False, allow_blank=True, max_length=100)
    supported_transports = CommaListField(required=False, choices=Transport.values, max_items=3)
    headers = JSONTextField(required=False)
    upstream_auth = serializers.ChoiceField(choices=UpstreamAuth.choices, required=False)
    user_secret_header = serializers.CharField(required=False, allow_blank=True, max_length=300)
    tool_list_json = JSONTextField(required=False)
    version = serializers.CharField(required=False, max_length=100)

    def validate_path(self, value):
        return registry_path_field(value)

    def validate_proxy_pass_url(self, value):
        try:
            validate_http_url(value.strip())
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None
        return value.strip()

    def validate_headers(self, value):
        return validated_headers(value)

    def validate_tool_list_json(self, value):
        return _validated_tools(value)

    def validate_version(self, value):
        if value.strip().lower() == "latest" or not value.strip():
            raise serializers.ValidationError("Must be a specific version, not 'latest'.")
        return value.strip()

    def service_fields(self) -> dict:
        """validated_data as keyword arguments of the server services (tools apart)."""
        data = dict(self.validated_data)
        data.pop("path", None)
        tools = data.pop("tool_list_json", None)
        if tools is not None:
            data["tools"] = tools
            data.setdefault("num_tools", len(tools))
        return data


HEADERS_ADMIN_ONLY = "Only administrators set outbound headers."
CREDENTIALS_ADMIN_ONLY = "Only administrators choose where the server's credentials come from."


class AdministeredCredentials:
    """Where a target's credential comes from (`upstream_auth`, `user_secret_header`) is set by
    administrators only (`context["may_set_headers"]`): a server's forms and an agent's card alike."""

    credentials_admin_only = CREDENTIALS_ADMIN_ONLY

    def validate_upstream_auth(self, value):
        return self._administered(value)

    def validate_user_secret_header(self, value):
        return self._administered(value)

    def _administered(self, value):
        if not self.context.get("may_set_headers"):
            raise serializers.ValidationError(self.credentials_admin_only)
        return value


class DashboardServerSerializer(AdministeredCredentials, ServerInputSerializer):
    """The dashboard's register form (and `/api/register`). The page asks for no tool count or stars:
    the health check discovers the tools; the contract's form fields are still accepted. Outbound
    headers are write-only and set by administrators only (`context["may_set_headers"]`); a blank
    headers box means "leave them"."""

    def to_internal_value(self, data):
        if hasattr(data, "copy") and "headers" in data and not str(data.get("headers") or "").strip():
            data = data.copy()
            data.pop("headers")
        return super().to_internal_value(data)

    def validate_headers(self, value):
        if not self.context.get("may_set_headers"):
            raise serializers.ValidationError(HEADERS_ADMIN_ONLY)
        return super().validate_headers(value)


class ServerEditSerializer(DashboardServerSerializer):
    """The dashboard's edit form: the path stays; `name` and `proxy_pass_url` are required, the rest
    optional."""

    path = None
    description = serializers.CharField(required=False, allow_blank=True)


class InternalServerSerializer(serializers.ModelSerializer):
    """A server as the internal administration API lists it: everything but outbound headers."""

    class Meta:
        model = Server
        fields = [
            "path",
            *(name for name in EDITABLE_FIELDS if name not in WRITE_ONLY_FIELDS),
            "is_enabled",
            "health_status",
            "health_detail",
            "last_checked_at",
        ]
