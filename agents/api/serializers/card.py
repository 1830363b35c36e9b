"""Input validation of the agent card (register and PUT). Serializers validate shape only; services
own the rules. The A2A spellings are read by agents.a2a and folded into the registry's shape here."""

from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.settings import api_settings

from agents.a2a import (
    CARD_ALIASES,
    MAX_ITEMS,
    Invalid,
    _each,
    _read_provider,
    _text,
    _texts,
    read_capabilities,
    read_interface,
    read_requirement,
    read_scheme,
    read_skill,
)
from agents.api.serializers.fields import HttpUrlField, ReaderField, StrictCharField, TagsField
from agents.choices import Visibility
from agents.signed_cards import read_signature, signed_card_of
from core.validators import PATH_MAX_LENGTH, registry_path_field
from servers.api.serializers import AdministeredCredentials, validated_headers
from servers.choices import UpstreamAuth

MAX_SKILLS = 200
MAX_SIGNATURES = 10
HEADERS_ADMIN_ONLY = "Only administrators set an agent's outbound headers."
CREDENTIALS_ADMIN_ONLY = "Only administrators choose where the agent's credentials come from."
REQUIRED = "This field is required."
# Paths the API's own routes use: an agent there could not be read back through /api/agents/{path}.
RESERVED_PATHS = ("/register", "/discover")
RESERVED_LAST_SEGMENT = "toggle"


def _read_skills(value) -> list[dict]:
    skills = _each(value, "skill", read_skill, max_items=MAX_SKILLS)
    ids = [skill["id"] for skill in skills if "id" in skill]
    if len(ids) != len(set(ids)):
        raise serializers.ValidationError("Skill ids must be unique.")
    return skills


def _read_schemes(value) -> dict:
    if not isinstance(value, Mapping):
        raise serializers.ValidationError("Must be an object mapping scheme names to {type, description}.")
    if len(value) > MAX_ITEMS:
        raise serializers.ValidationError(f"At most {MAX_ITEMS} schemes.")
    schemes, problems = {}, []
    for name, raw in value.items():
        try:
            schemes[_text(name, "scheme name", required=True)] = read_scheme(raw)
        except Invalid as exc:
            problems.append(f"Scheme '{name}': {exc}")
    if problems:
        raise serializers.ValidationError(problems)
    return schemes


def _read_modes(value) -> list[str]:
    try:
        return _texts(value, "modes")
    except Invalid:
        raise serializers.ValidationError(
            f'Must be a list of at most {MAX_ITEMS} media types, e.g. ["text/plain"].'
        ) from None


def _flat(detail) -> list[str]:
    """A field's errors as a flat list of messages, however deeply DRF nested them."""
    if isinstance(detail, Mapping):
        return [f"{key}: {message}" for key, value in detail.items() for message in _flat(value)]
    if isinstance(detail, list):
        return [message for item in detail for message in _flat(item)]
    return [str(detail)]


class AgentCardSerializer(AdministeredCredentials, serializers.Serializer):
    """The body of register and of PUT: the registry's card shape, an A2A v1.0 card or a v0.3 card.

    Errors are keyed by the name the caller used (`defaultInputModes` or `default_input_modes`), one
    entry per invalid field, each a list of messages. With `context={"agent_path": ...}` (PUT) `path`
    may be omitted but must otherwise name that agent."""

    name = StrictCharField(max_length=200)
    description = StrictCharField(max_length=10_000)
    path = StrictCharField(max_length=PATH_MAX_LENGTH + 10)
    url = HttpUrlField(required=False)
    version = StrictCharField(max_length=100)
    provider = ReaderField(_read_provider, required=False)
    provider_organization = StrictCharField(max_length=200, required=False, allow_blank=True)
    provider_url = HttpUrlField(required=False, allow_blank=True)
    protocol_version = StrictCharField(max_length=20, required=False, allow_blank=True)
    preferred_transport = StrictCharField(max_length=32, required=False, allow_blank=True)
    interfaces = ReaderField(lambda value: _each(value, "interface", read_interface), required=False)
    capabilities = ReaderField(read_capabilities, required=False)
    supports_authenticated_extended_card = serializers.BooleanField(required=False)
    default_input_modes = ReaderField(_read_modes, required=False)
    default_output_modes = ReaderField(_read_modes, required=False)
    documentation_url = HttpUrlField(required=False, allow_blank=True)
    icon_url = HttpUrlField(required=False, allow_blank=True)
    security_schemes = ReaderField(_read_schemes, required=False)
    security_requirements = ReaderField(
        lambda value: _each(value, "requirement", read_requirement), required=False
    )
    skills = ReaderField(_read_skills, required=False)
    tags = TagsField(required=False)
    visibility = serializers.ChoiceField(choices=Visibility.choices, required=False)
    license = StrictCharField(max_length=100, required=False, allow_blank=True)
    signatures = ReaderField(
        lambda value: _each(value, "signature", read_signature, max_items=MAX_SIGNATURES), required=False
    )
    # The registry's, not the card's: whose credential the gateway sends the agent, and the operator's
    # shared headers (also the health check's). Write-only, and set by administrators only
    # (`context["may_set_headers"]`), as a server's are.
    headers = serializers.JSONField(required=False)
    credentials_admin_only = CREDENTIALS_ADMIN_ONLY
    upstream_auth = serializers.ChoiceField(choices=UpstreamAuth.choices, required=False)
    user_secret_header = serializers.CharField(required=False, allow_blank=True, max_length=300)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.context.get("agent_path"):
            self.fields["path"].required = False

    def validate_path(self, value):
        path = registry_path_field(value)
        existing = self.context.get("agent_path")
        if existing:
            if path != existing:
                raise serializers.ValidationError(f"Must be {existing} or omitted: a path cannot change.")
            return path
        if path in RESERVED_PATHS or path.startswith("/discover/") or path.rsplit("/", 1)[-1] == "toggle":
            raise serializers.ValidationError(
                "This path is reserved by the agent API's own routes (/register, /discover, .../toggle)."
            )
        return path

    def validate_headers(self, value):
        if not self.context.get("may_set_headers"):
            raise serializers.ValidationError(HEADERS_ADMIN_ONLY)
        return validated_headers(value)

    def to_internal_value(self, data):
        if not isinstance(data, Mapping):
            raise serializers.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: ["Expected a JSON object: the agent card."]}
            )
        original = data
        data, sent_as, errors = self._canonical(data)
        try:
            attrs = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            attrs, errors = {}, {**exc.detail, **errors}
        if "url" not in data and not data.get("interfaces"):
            errors.setdefault("url", [REQUIRED])
        if isinstance(data.get("provider"), Mapping) and {"provider_organization", "provider_url"} & set(
            data
        ):
            errors["provider"] = ["Give the organization either as a provider object or as fields, not both."]
        if errors:
            raise serializers.ValidationError(
                {sent_as.get(key, key): _flat(value) for key, value in errors.items()}
            )
        if attrs.pop("signatures", None):
            attrs["signed_card"] = signed_card_of(original)
        return self._derived(attrs)

    @staticmethod
    def _canonical(data: Mapping) -> tuple[dict, dict, dict]:
        """The body with A2A names replaced by the registry's, which name each field was sent as, and
        errors for fields given twice."""
        canonical, sent_as, errors = {}, {}, {}
        for key, value in data.items():
            name = CARD_ALIASES.get(key, key)
            if name in canonical:
                errors[name] = [f"Given twice, as '{sent_as[name]}' and as '{key}'."]
                continue
            canonical[name], sent_as[name] = value, key
        return canonical, sent_as, errors

    @staticmethod
    def _derived(attrs: dict) -> dict:
        """Fold the A2A spellings into the stored card: provider objects, v0.3's extended-card flag,
        and a v1.0 card's main url (its first interface)."""
        provider = attrs.pop("provider", None)
        if provider is not None:
            attrs.update(provider)
        extended = attrs.pop("supports_authenticated_extended_card", None)
        if extended is not None:
            attrs["capabilities"] = {"extended_agent_card": extended, **attrs.get("capabilities", {})}
        interfaces = attrs.get("interfaces") or []
        if "url" not in attrs and interfaces:
            first = interfaces[0]
            attrs["url"] = first["url"]
            attrs.setdefault("preferred_transport", first["protocol_binding"])
            attrs.setdefault("protocol_version", first.get("protocol_version", ""))
        return attrs

    def service_fields(self) -> dict:
        """validated_data as keyword arguments of the agent services (the path apart)."""
        return {name: value for name, value in self.validated_data.items() if name != "path"}
