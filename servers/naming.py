"""Server paths and their MCP Registry names: `/team/weather` ↔ `io.<namespace>/team.weather`.

A namespace is compared as a reverse-DNS name is: case-insensitively, and without the empty labels that
leading, trailing or doubled dots make (`IO.MCPGATEWAY./x` is in `io.mcpgateway`). Every check of the
registry's own namespace, or of a reserved `_meta` key, goes through `namespace_of`."""

from django.conf import settings


def name_prefix() -> str:
    return f"io.{settings.REGISTRY_NAMESPACE}/"


def server_name(path: str) -> str:
    return name_prefix() + path.lstrip("/").replace("/", ".")


def path_from_name(name: str) -> str | None:
    """The path a name stands for, or None when the name is outside `io.<namespace>/`."""
    prefix = name_prefix()
    if not name.startswith(prefix) or len(name) == len(prefix):
        return None
    return "/" + name[len(prefix) :].replace(".", "/")


def namespace_of(name: str) -> str:
    """The namespace of `name` (the part before its first `/`) in the form two namespaces compare in."""
    namespace = name.partition("/")[0]
    return ".".join(label for label in namespace.casefold().split(".") if label)


def in_gateway_namespace(name: str) -> bool:
    """`name` is under `io.<namespace>/`, whatever its case or stray dots: the gateway's servers' names."""
    return "/" in name and namespace_of(name) == namespace_of(name_prefix())
