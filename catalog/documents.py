"""What a server.json document must be to be stored here: valid against the released schema
(2025-12-11) or the draft (catalog/schemas/, verbatim copies of the official files), storable text
(the shared input rule), and free of the `_meta` keys the registries themselves write."""

import json
from functools import cache
from pathlib import Path

import jsonschema_rs
from django.conf import settings

from core.untrusted import InputRejected, check_tree

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


def reserved_meta_keys() -> tuple[str, ...]:
    """`_meta` keys a publisher may not write: what the registries say of an entry, never its author."""
    return (OFFICIAL_META, f"io.{settings.REGISTRY_NAMESPACE}/")


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
    meta = document.get("_meta") or {}
    reserved = reserved_meta_keys()
    for key in meta:
        if key == reserved[0] or key.startswith(reserved[1]):
            return f"_meta.{key} is written by the registry, not by publishers."
    return None


def check_document(document) -> dict:
    if (problem := document_problem(document)) is not None:
        raise InvalidDocument(problem)
    return document
