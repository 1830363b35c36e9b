"""Push-notification URLs a caller gives an agent through the gateway are checked like any URL the
registry would reach on a party's word (core/outbound.py): http or https, and every address public unless
the host is on A2A_PUSH_ALLOWED_HOSTS. The agent would otherwise call a private or loopback address
(the registry's own network) for whoever asked."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from django.conf import settings

from core.outbound import AddressRefused, addresses_to_reach


async def problem(urls: list) -> str | None:
    """Why one of a request's push-notification URLs (gateway/a2a/params.py) is refused, or None."""
    for url in urls:
        if not isinstance(url, str):
            return "A push-notification URL must be a string."
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return "A push-notification URL must be an http or https URL."
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
            await asyncio.to_thread(
                addresses_to_reach, parts.hostname, port, allowed_hosts=settings.A2A_PUSH_ALLOWED_HOSTS
            )
        except (AddressRefused, ValueError) as refused:
            return f"The push-notification URL is refused: {refused}."
    return None
