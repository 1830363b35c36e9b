"""The health entry every live surface shows (websockets, their HTTP fallback, published changes)."""

from datetime import datetime


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
