"""The health entry every live surface shows (websockets, their HTTP fallback, published changes)."""

from datetime import datetime

# What anyone may see of a server's health (the public socket and its HTTP fallback, /status): why a check
# failed can name internal hosts and ports, so the reason (and the state) stay with logged-in sessions.
# An agent's entry (agents/live.py) also says its kind and its number of skills.
PUBLIC_FIELDS = ("status", "last_checked_iso", "num_tools", "kind", "num_skills")


def public_entry(entry: dict | None) -> dict | None:
    return None if entry is None else {name: entry[name] for name in PUBLIC_FIELDS if name in entry}


def health_entry(
    status: str, last_checked_at: datetime | None, num_tools: int, detail: str = "", enabled: bool = True
) -> dict:
    """`detail` says why a server is unhealthy; `enabled` lets a page show the server's state and buttons."""
    return {
        "status": status,
        "last_checked_iso": last_checked_at.isoformat() if last_checked_at else None,
        "num_tools": num_tools,
        "detail": detail,
        "enabled": enabled,
    }
