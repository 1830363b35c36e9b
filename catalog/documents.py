"""What a server.json document must be to be stored here: valid against the released schema
(2025-12-11) or the draft (catalog/schemas/, verbatim copies of the official files), storable text
(the shared input rule), and free of the `_meta` keys the registries themselves write."""

import json
from functools import cache
from pathlib import Path

from django.conf import settings
from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

from registry_site.untrusted import InputRejected, check_tree

SCHEMAS = Path(__file__).parent / "schemas"
SCHEMA_FILES = ("2025-12-11.json", "draft.json")
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_DEPTH = 32
OFFICIAL_META = "io.modelcontextprotocol.registry/official"


class InvalidDocument(ValueError):
    """Why a document is refused; `str()` is a sentence for the publisher."""


@cache
def _validators() -> tuple[Draft7Validator, ...]:
    validators = []
    for name in SCHEMA_FILES:
        schema = json.loads((SCHEMAS / name).read_text())
        Draft7Validator.check_schema(schema)
        validators.append(Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER))
    return tuple(validators)


def _where(error) -> str:
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.absolute_path)
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
    errors = []
    for validator in _validators():
        error = best_match(validator.iter_errors(document))
        if error is None:
            break
        errors.append(error)
    else:
        error = errors[0]
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
