"""The A2A card mapping, free of requests and views so the API and a future dashboard share it.

An agent card arrives in the registry's own shape (snake_case, the interface's card table), as an A2A
v1.0 card or as an A2A v0.3 card; the readers here turn the nested parts of all three into one internal
shape (agents.api.serializers.card validates the card as a whole). `a2a_card` turns a stored card back
into an A2A v1.0 AgentCard. docs/agents.md describes every field and the mapping.
"""

from collections.abc import Mapping

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from rest_framework import serializers

from agents.choices import DEFAULT_TRANSPORT, Provider
from agents.models import Agent
from core.validators import validate_http_url

# The methods that send an agent a message (v1.0's and v0.3's): a caller allowed one of them may use the
# agent, and each is counted as one A2A message against the limits.
MESSAGE_METHODS = frozenset({"SendMessage", "SendStreamingMessage", "message/send", "message/stream"})
MAX_ITEMS = 50  # interfaces, modes, schemes, requirements, extensions, skill tags and examples

# A2A (camelCase) names of card fields and the registry name each one stands for.
CARD_ALIASES = {
    "supportedInterfaces": "interfaces",  # v1.0
    "additionalInterfaces": "interfaces",  # v0.3
    "preferredTransport": "preferred_transport",
    "protocolVersion": "protocol_version",
    "defaultInputModes": "default_input_modes",
    "defaultOutputModes": "default_output_modes",
    "documentationUrl": "documentation_url",
    "iconUrl": "icon_url",
    "securitySchemes": "security_schemes",
    "security": "security_requirements",  # v0.3
    "securityRequirements": "security_requirements",  # v1.0
    "supportsAuthenticatedExtendedCard": "supports_authenticated_extended_card",  # v0.3
}
# A2A v1.0 names a security scheme's kind by its one key; v0.3 (and the registry) by `type`.
SCHEME_KINDS = {
    "apiKeySecurityScheme": "api_key",
    "httpAuthSecurityScheme": "http",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openid_connect",
    "mtlsSecurityScheme": "mtls",
}
SCHEME_TYPES = {
    "apikey": "api_key",
    "api_key": "api_key",
    "http": "http",
    "bearer": "bearer",
    "basic": "basic",
    "oauth2": "oauth2",
    "openidconnect": "openid_connect",
    "openid_connect": "openid_connect",
    "mutualtls": "mtls",
    "mtls": "mtls",
}
OAUTH_FLOWS = ("authorizationCode", "clientCredentials", "deviceCode", "implicit", "password")
OAUTH_FLOW_KEYS = {
    "authorizationUrl",
    "tokenUrl",
    "refreshUrl",
    "deviceAuthorizationUrl",
    "scopes",
    "pkceRequired",
}
SCRIPT_SCHEMES = ("javascript:", "vbscript:", "data:")  # what a browser would run if a page linked it
validate_interface_url = URLValidator(schemes=["http", "https", "grpc", "grpcs", "ws", "wss"])


class Invalid(Exception):
    """One problem in a nested value; the field's validator prefixes where it was found."""


# -- small readers of nested JSON ------------------------------------------------------------------


def _first(raw: Mapping, *names: str):
    """The value under the first of `names` present (snake_case and camelCase spellings)."""
    return next(((name, raw[name]) for name in names if name in raw), (None, None))


def _text(value, what: str, *, max_length: int = 200, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise Invalid(f"'{what}' must be a non-empty string." if required else f"'{what}' must be a string.")
    if len(value) > max_length:
        raise Invalid(f"'{what}' must be at most {max_length} characters.")
    return value.strip()


def _texts(value, what: str, *, max_length: int = 100, max_items: int = MAX_ITEMS) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Invalid(f"'{what}' must be a list of strings.")
    if len(value) > max_items:
        raise Invalid(f"'{what}' may hold at most {max_items} items.")
    if any(len(item) > max_length for item in value):
        raise Invalid(f"each of '{what}' must be at most {max_length} characters.")
    return [item.strip() for item in value]


def _url(value, what: str, validator=validate_http_url) -> str:
    try:
        validator(_text(value, what, max_length=2048, required=True))
    except DjangoValidationError:
        raise Invalid(f"'{what}' must be an absolute URL ({', '.join(validator.schemes)}).") from None
    return value.strip()


def _object(value, what: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise Invalid(f"{what} must be an object.")
    return value


def _each(value, what: str, read, *, max_items: int = MAX_ITEMS) -> list:
    """Apply `read` to every item of a list, collecting one message per bad item."""
    if not isinstance(value, list):
        raise serializers.ValidationError(f"Must be a list of {what} objects.")
    if len(value) > max_items:
        raise serializers.ValidationError(f"At most {max_items} {what} objects.")
    items, problems = [], []
    for index, raw in enumerate(value):
        try:
            items.append(read(raw))
        except Invalid as exc:
            problems.append(f"{what.capitalize()} {index}: {exc}")
    if problems:
        raise serializers.ValidationError(problems)
    return items


# -- nested parts of a card ------------------------------------------------------------------------


def read_interface(raw) -> dict:
    raw = _object(raw, "an interface")
    interface = {"url": _url(raw.get("url"), "url", validate_interface_url)}
    _, binding = _first(raw, "protocol_binding", "protocolBinding", "transport")
    interface["protocol_binding"] = _text(binding, "protocolBinding", max_length=32, required=True)
    _, version = _first(raw, "protocol_version", "protocolVersion")
    if version:
        interface["protocol_version"] = _text(version, "protocolVersion", max_length=20)
    if raw.get("tenant"):
        interface["tenant"] = _text(raw["tenant"], "tenant")
    return interface


def read_requirement(raw) -> dict[str, list[str]]:
    """{scheme: [scopes]} (v0.3 and the registry) or {"schemes": {scheme: {"list": [scopes]}}} (v1.0)."""
    raw = _object(raw, "a security requirement")
    if set(raw) == {"schemes"} and isinstance(raw["schemes"], Mapping):
        if not all(isinstance(value, Mapping) for value in raw["schemes"].values()):
            raise Invalid("'schemes' must map scheme names to {list: [scopes]}.")
        raw = {name: value.get("list", []) for name, value in raw["schemes"].items()}
    return {_text(name, "scheme name", required=True): _texts(scopes, name) for name, scopes in raw.items()}


def read_skill(raw) -> dict:
    raw = _object(raw, "a skill {name, description, input_schema}")
    skill = {}
    if "id" in raw:
        skill["id"] = _text(raw["id"], "id", required=True)
    skill["name"] = _text(raw.get("name"), "name", required=True)
    skill["description"] = _text(raw.get("description"), "description", max_length=10_000, required=True)
    _, schema = _first(raw, "input_schema", "inputSchema")
    if schema is not None:
        skill["input_schema"] = dict(_object(schema, "'input_schema'"))
    for name, aliases, max_length in (
        ("tags", ("tags",), 64),
        ("examples", ("examples",), 2000),
        ("input_modes", ("input_modes", "inputModes"), 100),
        ("output_modes", ("output_modes", "outputModes"), 100),
    ):
        key, value = _first(raw, *aliases)
        if key is not None:
            skill[name] = _texts(value, key, max_length=max_length)
    key, value = _first(raw, "security_requirements", "security", "securityRequirements")
    if key is not None:
        if not isinstance(value, list):
            raise Invalid(f"'{key}' must be a list of security requirements.")
        skill["security_requirements"] = [read_requirement(item) for item in value]
    return skill


def _read_flows(raw) -> dict:
    flows = dict(_object(raw, "'flows'"))
    for name, flow in flows.items():
        if name not in OAUTH_FLOWS:
            raise Invalid(f"unknown OAuth flow '{name}' (known: {', '.join(OAUTH_FLOWS)}).")
        unknown = set(_object(flow, f"flow '{name}'")) - OAUTH_FLOW_KEYS
        scopes = flow.get("scopes", {})
        urls = [value for key, value in flow.items() if key.endswith("Url")]
        if (
            unknown
            or not all(isinstance(url, str) for url in urls)
            or not isinstance(flow.get("pkceRequired", False), bool)
            or not isinstance(scopes, Mapping)
            or not all(isinstance(text, str) for text in scopes.values())
        ):
            raise Invalid(
                f"flow '{name}' may hold only {', '.join(sorted(OAUTH_FLOW_KEYS))} "
                "(URLs as strings, scopes as name → description, pkceRequired as true or false)."
            )
        for key in (key for key in flow if key.endswith("Url")):  # never javascript: or data: links
            _url(flow[key], f"{name}.{key}")
    return flows


def read_scheme(raw) -> dict:
    """One security scheme, from any of the three shapes, as {type, description?, ...details}."""
    raw = _object(raw, "a security scheme {type, description}")
    kinds = [key for key in raw if key in SCHEME_KINDS]
    if kinds:
        if len(raw) != 1:
            raise Invalid(f"an A2A v1.0 scheme holds exactly one of {', '.join(SCHEME_KINDS)}.")
        kind, raw = SCHEME_KINDS[kinds[0]], _object(raw[kinds[0]], f"'{kinds[0]}'")
    else:
        given = _text(raw.get("type"), "type", max_length=50, required=True)
        kind = SCHEME_TYPES.get(given.lower(), given.lower())
    scheme = {"type": kind}
    if raw.get("description"):
        scheme["description"] = _text(raw["description"], "description", max_length=2000)
    if kind == "http":
        scheme["scheme"] = _text(raw.get("scheme"), "scheme", max_length=50, required=True)
    if kind in ("http", "bearer"):
        key, value = _first(raw, "bearer_format", "bearerFormat")
        if value:
            scheme["bearer_format"] = _text(value, key, max_length=50)
    elif kind == "api_key":
        _, location = _first(raw, "location", "in")
        if location is not None:
            if location not in ("header", "query", "cookie"):
                raise Invalid("'location' must be header, query or cookie.")
            scheme["location"] = location
        if raw.get("name"):
            scheme["name"] = _text(raw["name"], "name")
    elif kind == "oauth2":
        if raw.get("flows"):
            scheme["flows"] = _read_flows(raw["flows"])
        key, value = _first(raw, "oauth2_metadata_url", "oauth2MetadataUrl")
        if value:
            scheme["oauth2_metadata_url"] = _url(value, key)
    elif kind == "openid_connect":
        key, value = _first(raw, "open_id_connect_url", "openIdConnectUrl")
        if value:
            scheme["open_id_connect_url"] = _url(value, key)
    return scheme


def read_capabilities(raw) -> dict:
    """v0.3's `stateTransitionHistory` has no v1.0 counterpart and is dropped; unknown keys too."""
    raw = _object(raw, "'capabilities'")
    capabilities = {}
    for name, camel in (
        ("streaming", "streaming"),
        ("push_notifications", "pushNotifications"),
        ("extended_agent_card", "extendedAgentCard"),
    ):
        key, value = _first(raw, name, camel)
        if key is not None:
            if not isinstance(value, bool):
                raise Invalid(f"'{key}' must be true or false.")
            capabilities[name] = value
    if "extensions" in raw:
        capabilities["extensions"] = _each(raw["extensions"], "extension", _read_extension)
    return capabilities


def _read_extension(raw) -> dict:
    raw = _object(raw, "an extension {uri, description, required, params}")
    extension = {"uri": _text(raw.get("uri"), "uri", max_length=2048, required=True)}
    if extension["uri"].strip().lower().startswith(SCRIPT_SCHEMES):
        raise Invalid("an extension 'uri' may not be a javascript:, vbscript: or data: link.")
    if raw.get("description"):
        extension["description"] = _text(raw["description"], "description", max_length=2000)
    if "required" in raw:
        if not isinstance(raw["required"], bool):
            raise Invalid("'required' must be true or false.")
        extension["required"] = raw["required"]
    if raw.get("params") is not None:
        extension["params"] = dict(_object(raw["params"], "'params'"))
    return extension


def _read_provider(value) -> dict:
    """A vendor key (case-insensitive), or an A2A provider {organization, url}."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key and key not in Provider.values:
            raise Invalid(f"'{value}' is not a known provider; use one of: {', '.join(Provider.values)}.")
        return {"provider": key}
    raw = _object(value, "'provider' (a provider name or {organization, url})")
    organization = _text(raw.get("organization"), "organization", required=True)
    by_name = {label.lower(): key for key, label in Provider.choices} | {key: key for key in Provider.values}
    provider = {
        "provider": by_name.get(organization.lower(), Provider.OTHER),
        "provider_organization": organization,
    }
    if raw.get("url"):
        provider["provider_url"] = _url(raw["url"], "url")
    return provider


# -- the A2A v1.0 AgentCard -------------------------------------------------------------------------


def _dicts(value) -> list[dict]:
    """The objects of a stored JSON list. The admin edits JSON columns without the API's checks, so the
    A2A view skips what it cannot read rather than failing."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def a2a_interfaces(agent: Agent) -> list[dict]:
    """The main url first (with its transport), then every other interface; the main url's entry in
    `interfaces` (v0.3 cards often repeat it) is not listed twice."""
    binding = agent.preferred_transport or DEFAULT_TRANSPORT
    main, found = {"url": agent.url, "protocol_binding": binding}, False
    others = []
    for interface in _dicts(agent.interfaces):
        if not interface.get("url") or not interface.get("protocol_binding"):
            continue
        if (interface["url"], interface["protocol_binding"]) == (agent.url, binding) and not found:
            main, found = interface, True
        else:  # the same URL and binding again is another protocol version (a2a-sdk serves both at one)
            others.append(interface)
    listed, seen = [], set()
    for interface in [main, *others]:
        same = (interface["url"], interface["protocol_binding"], interface.get("protocol_version"))
        if same in seen:
            continue
        seen.add(same)
        entry = {"url": interface["url"], "protocolBinding": interface["protocol_binding"]}
        version = interface.get("protocol_version") or agent.protocol_version
        if version:
            entry["protocolVersion"] = version
        if interface.get("tenant"):
            entry["tenant"] = interface["tenant"]
        listed.append(entry)
    return listed


def _a2a_requirements(requirements) -> list[dict]:
    return [
        {"schemes": {name: {"list": scopes} for name, scopes in item.items() if isinstance(scopes, list)}}
        for item in _dicts(requirements)
    ]


def _a2a_scheme(scheme) -> dict | None:
    """A stored scheme as an A2A v1.0 SecurityScheme, or None for types A2A cannot express."""
    if not isinstance(scheme, dict):
        return None
    kind, details = scheme.get("type"), {}
    if scheme.get("description"):
        details["description"] = scheme["description"]
    if kind in ("http", "bearer", "basic"):
        details["scheme"] = scheme.get("scheme") or kind.capitalize()
        if scheme.get("bearer_format"):
            details["bearerFormat"] = scheme["bearer_format"]
        return {"httpAuthSecurityScheme": details}
    if kind == "api_key":
        details |= {key: scheme[key] for key in ("location", "name") if scheme.get(key)}
        return {"apiKeySecurityScheme": details}
    if kind == "oauth2":
        if scheme.get("flows"):  # v1.0 carries one flow; v0.3 cards could list several
            name, flow = next(iter(scheme["flows"].items()))
            details["flows"] = {name: flow}
        if scheme.get("oauth2_metadata_url"):
            details["oauth2MetadataUrl"] = scheme["oauth2_metadata_url"]
        return {"oauth2SecurityScheme": details}
    if kind == "openid_connect":
        if scheme.get("open_id_connect_url"):
            details["openIdConnectUrl"] = scheme["open_id_connect_url"]
        return {"openIdConnectSecurityScheme": details}
    if kind == "mtls":
        return {"mtlsSecurityScheme": details}
    return None


def _a2a_skill(skill: dict) -> dict:
    entry = {
        "id": skill.get("id") or skill["name"],  # A2A requires an id; the name stands in
        "name": skill["name"],
        "description": skill.get("description", ""),
        "tags": skill.get("tags", []),
    }
    for name, camel in (
        ("examples", "examples"),
        ("input_modes", "inputModes"),
        ("output_modes", "outputModes"),
    ):
        if skill.get(name):
            entry[camel] = skill[name]
    if skill.get("security_requirements"):
        entry["securityRequirements"] = _a2a_requirements(skill["security_requirements"])
    return entry


def a2a_card(agent: Agent) -> dict:
    """The stored card as an A2A v1.0 AgentCard (JSON, camelCase); a signed card as it was published."""
    if agent.signed_card is not None:
        return agent.signed_card
    stored = agent.capabilities if isinstance(agent.capabilities, dict) else {}
    capabilities = {
        camel: stored[name]
        for name, camel in (
            ("streaming", "streaming"),
            ("push_notifications", "pushNotifications"),
            ("extended_agent_card", "extendedAgentCard"),
            ("extensions", "extensions"),
        )
        if name in stored
    }
    card = {
        "name": agent.name,
        "description": agent.description,
        "version": agent.version,
        "supportedInterfaces": a2a_interfaces(agent),
        "capabilities": capabilities,
        "defaultInputModes": list(agent.default_input_modes),
        "defaultOutputModes": list(agent.default_output_modes),
        "skills": [_a2a_skill(skill) for skill in _dicts(agent.skills) if skill.get("name")],
    }
    vendor = agent.provider not in ("", Provider.CUSTOM, Provider.OTHER)
    organization = agent.provider_organization or (Provider(agent.provider).label if vendor else "")
    if organization:
        card["provider"] = {"organization": organization}
        if agent.provider_url:
            card["provider"]["url"] = agent.provider_url
    if agent.documentation_url:
        card["documentationUrl"] = agent.documentation_url
    if agent.icon_url:
        card["iconUrl"] = agent.icon_url
    stored_schemes = agent.security_schemes if isinstance(agent.security_schemes, dict) else {}
    schemes = {name: _a2a_scheme(scheme) for name, scheme in stored_schemes.items()}
    if any(schemes.values()):
        card["securitySchemes"] = {name: scheme for name, scheme in schemes.items() if scheme}
    if _dicts(agent.security_requirements):
        card["securityRequirements"] = _a2a_requirements(agent.security_requirements)
    return card
