"""What a server.json document must be to be stored here: valid against the released schema
(2025-12-11) or the draft (catalog/schemas/, verbatim copies of the official files), storable text
(the shared input rule), and free of the `_meta` keys the registries themselves write."""

import json
from functools import cache
from pathlib import Path

import jsonschema_rs

from core.untrusted import InputRejected, check_tree, control_character_reason
from servers.naming import name_prefix, namespace_of

SCHEMAS = Path(__file__).parent / "schemas"
SCHEMA_FILES = ("2025-12-11.json", "draft.json")
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_DEPTH = 32
OFFICIAL_META = "io.modelcontextprotocol.registry/official"


class InvalidDocument(ValueError):
    """Why a document is refused; `str()` is a sentence for the publisher."""


# The official registry's own copy of 2025-12-11 bounds package versions, as the draft and openapi.yaml do.
PACKAGE_VERSION_MAX_LENGTH = 255


@cache
def _validators() -> tuple[jsonschema_rs.Draft7Validator, ...]:
    """Compiled once per process (formats such as `uri` checked too): a document costs microseconds."""
    validators = []
    for name in SCHEMA_FILES:
        schema = json.loads((SCHEMAS / name).read_text())
        schema["definitions"]["Package"]["properties"]["version"]["maxLength"] = PACKAGE_VERSION_MAX_LENGTH
        validators.append(jsonschema_rs.Draft7Validator(schema, validate_formats=True))
    return tuple(validators)


def _where(error) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.instance_path)
    return path.lstrip(".") or "the document"


PUBLISHER_META = "io.modelcontextprotocol.registry/publisher-provided"


def meta_key_reserved(key: str) -> bool:
    """A `_meta` key a publisher may not write: what the registries say of an entry, never its author.
    Everything under the official registry's namespace but `publisher-provided`, and everything under
    this registry's; namespaces compared as names are (servers/naming.py), keys case-insensitively."""
    namespace, _, rest = key.partition("/")
    normalized = f"{namespace_of(key)}/{rest.casefold()}"
    if normalized == PUBLISHER_META:
        return False
    return namespace_of(key) in (namespace_of(OFFICIAL_META), namespace_of(name_prefix()))


# Text fields shown as prose, which may run over several lines; every other string of a document is a
# one-line value (a name, an identifier, an argument, a URL) that the catalog may put in a command.
MULTILINE_KEYS = frozenset({"description", "title", "statusMessage"})
# Fields holding an address that the catalog shows or links to: http(s) only (no `javascript:`).
URL_KEYS = frozenset({"url", "websiteUrl", "src"})


def _text_problem(document: dict) -> str | None:
    """The first string (outside `_meta`) holding control characters, or a URL field that is not http(s)."""
    stack = [(value, key, key) for key, value in document.items() if key != "_meta"]
    while stack:
        value, key, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((child, k, f"{where}.{k}") for k, child in value.items())
        elif isinstance(value, list):
            stack.extend((child, key, f"{where}[{i}]") for i, child in enumerate(value))
        elif isinstance(value, str):
            reason = control_character_reason(value, multiline=key in MULTILINE_KEYS)
            if reason is not None:
                return f"{where}: {reason}"
            if key in URL_KEYS and not value.lower().startswith(("https://", "http://")):
                return f"{where}: only http and https URLs are allowed."
    for i, package in enumerate(document.get("packages") or []):
        identifier = package.get("identifier", "") if isinstance(package, dict) else ""
        if package.get("registryType") == "mcpb" and not identifier.lower().startswith("https://"):
            return f"packages[{i}].identifier: an mcpb bundle is downloaded from an https URL."
    return None


def document_problem(document) -> str | None:
    """Why `document` cannot be stored, or None when it can."""
    if not isinstance(document, dict):
        return "The body must be a server.json object."
    try:
        check_tree(document, max_depth=MAX_DEPTH)
    except InputRejected as rejected:
        return f"{rejected.field or 'the document'}: {rejected.message}"
    if len(json.dumps(document, ensure_ascii=False).encode()) > MAX_DOCUMENT_BYTES:
        return f"The document is larger than {MAX_DOCUMENT_BYTES // 1024} KiB."
    validators = _validators()
    if not any(validator.is_valid(document) for validator in validators):
        error = next(iter(validators[0].iter_errors(document)))  # named by the released schema
        return f"Not a valid server.json: {_where(error)}: {error.message[:300]}"
    if (problem := _text_problem(document)) is not None:
        return problem
    meta = document.get("_meta") or {}
    for key in meta:
        if meta_key_reserved(key):
            return f"_meta.{key} is written by the registry, not by publishers."
    return None


def check_document(document) -> dict:
    if (problem := document_problem(document)) is not None:
        raise InvalidDocument(problem)
    return document
