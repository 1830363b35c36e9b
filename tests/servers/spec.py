"""Validators for the official MCP Registry documents (verbatim copies in tests/data/spec)."""

from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT7, DRAFT202012

SPEC_DIR = Path(__file__).resolve().parents[1] / "data" / "spec"
SHARED_SPEC_DIR = Path(__file__).resolve().parents[3] / "shared" / "spec"
OPENAPI_URI = "urn:mcp-registry:openapi"


@lru_cache(maxsize=1)
def _registry() -> Registry:
    openapi = yaml.safe_load((SPEC_DIR / "openapi.yaml").read_text())
    return Registry().with_resource(
        OPENAPI_URI, Resource.from_contents(openapi, default_specification=DRAFT202012)
    )


@lru_cache(maxsize=1)
def _server_schema() -> dict:
    import json

    return json.loads((SPEC_DIR / "server.schema.json").read_text())


def validate_openapi(instance, schema: str) -> None:
    """Validate against components/schemas/<schema> of openapi.yaml (JSON Schema 2020-12)."""
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"{OPENAPI_URI}#/components/schemas/{schema}"},
        registry=_registry(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    validator.validate(instance)


def validate_server_json(server_detail: dict) -> None:
    """Validate a ServerDetail against the released server.schema.json (draft-07)."""
    schema = _server_schema()
    registry = Registry().with_resource(
        schema["$id"], Resource.from_contents(schema, default_specification=DRAFT7)
    )
    jsonschema.Draft7Validator(
        schema, registry=registry, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
    ).validate(server_detail)


def validate_server_list(body: dict) -> None:
    validate_openapi(body, "ServerList")
    for entry in body["servers"]:
        validate_openapi(entry, "ServerResponse")
        validate_server_json(entry["server"])


def validate_server_response(body: dict) -> None:
    validate_openapi(body, "ServerResponse")
    validate_server_json(body["server"])
