"""The tools a server offers, as the last successful `tools/list` (or an operator's tool list) gave them."""

import logging

from servers.models import Server, Tool
from servers.services.embeddings import server_embedding_refresh
from servers.services.pins import tools_pin

logger = logging.getLogger(__name__)

TOOL_NAME_MAX_LENGTH = Tool._meta.get_field("name").max_length


def tools_store(server: Server, tools: list[dict], *, discovered: bool = False) -> bool:
    """Make the server's Tool rows exactly `tools` ({name, description, input_schema, definition?}) but
    the tools an operator blocked (servers/services/tool_blocks.py) and those held until an operator
    approves them (servers/services/pins.py; `discovered`: the list is what the server answered, not
    what an operator gave), and set `num_tools` on the instance; returns whether anything changed (the
    caller saves the server).

    An unchanged list (the usual case, every sweep) writes no Tool rows, so their ids stay stable."""
    blocked = set(server.tool_blocks.values_list("name", flat=True))
    wanted = {name: fields for name, fields in _tool_fields(server, tools).items() if name not in blocked}
    if discovered:
        offered = tools_pin(server, tools)
        wanted = {name: fields for name, fields in wanted.items() if name in offered}
    replaced = _tools_replace_if_changed(server, wanted)
    if replaced:  # new Tool rows start dirty; the server's text names its tools, so it is dirty too
        Server.objects.filter(pk=server.pk).update(embedding_dirty=True)
        server.embedding_dirty = True
        server_embedding_refresh(server)
    changed = replaced or server.num_tools != len(wanted)
    server.num_tools = len(wanted)
    return changed


def _tool_fields(server: Server, tools: list[dict]) -> dict[str, tuple[str, dict]]:
    """name -> (description, input_schema) for the tools a Tool row can hold; first name wins."""
    wanted: dict[str, tuple[str, dict]] = {}
    for tool in tools:
        if len(tool["name"]) > TOOL_NAME_MAX_LENGTH:
            logger.warning(
                "%s lists a tool name over %d characters; skipped", server.path, TOOL_NAME_MAX_LENGTH
            )
            continue
        wanted.setdefault(tool["name"], (tool.get("description") or "", tool.get("input_schema") or {}))
    return wanted


def _tools_replace_if_changed(server: Server, wanted: dict[str, tuple[str, dict]]) -> bool:
    """Make the server's Tool rows exactly `wanted`; returns whether anything changed.

    An unchanged listing (the usual case, every sweep) writes nothing, so Tool ids stay stable."""
    stored = {tool.name: (tool.description, tool.input_schema) for tool in server.tools.all()}
    if stored == wanted:
        return False
    server.tools.all().delete()
    Tool.objects.bulk_create(
        Tool(server=server, name=name, description=description, input_schema=schema)
        for name, (description, schema) in wanted.items()
    )
    return True
