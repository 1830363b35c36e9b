"""Server paths and their MCP Registry names: `/team/weather` ↔ `io.<namespace>/team.weather`."""

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
