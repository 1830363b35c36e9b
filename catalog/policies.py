"""Who may write which catalog entry: the catalog's one set of decisions, asked by its services whatever
the surface (`/v0.1`, `/v0`, the admin), so each answers a caller the same way. Each function returns why
the write is refused, or None when it may go ahead; the services turn a reason into a 403.

- Publishing a version of a name, and changing the status of its versions, need a scope whose
  `publish_server` names the name (a glob such as `io.github.acme/*`), or an administrator.
- Names under `io.<namespace>/` (in any case, servers/naming.py) are the gateway's own servers, written
  by the server APIs only.
- Putting a catalog entry behind the gateway (a server with outbound credentials) is for administrators.
"""

from accounts.principal import Principal
from servers.naming import in_gateway_namespace, name_prefix


def publish_refusal(principal: Principal, name: str) -> str | None:
    """Why `principal` may not publish `name` or change its versions' status."""
    if principal.may_publish(name):
        return None
    return f"You may not publish or change {name}: no scope of yours names it."


def gateway_name_refusal(name: str) -> str | None:
    """Why `name` cannot be written through the catalog: it names one of the gateway's servers."""
    if not in_gateway_namespace(name):
        return None
    return (
        f"Names under {name_prefix()} are the servers of this registry's gateway; register or change "
        "them with the server APIs (POST /api/register)."
    )


def gateway_binding_refusal(principal: Principal) -> str | None:
    """Why `principal` may not put a catalog entry behind the gateway."""
    if principal.is_admin:
        return None
    return "Only registry administrators may put servers behind the gateway."
