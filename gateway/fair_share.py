"""Fair shares of a gateway process's upstream exchanges, so one caller cannot make others wait.

Every exchange the gateway carries (a POST's answer, a GET stream, an SSE-transport stream, an A2A call
or stream) holds one slot of its caller (GATEWAY_MAX_STREAMS_PER_CALLER) and one of its upstream's origin
(GATEWAY_MAX_CONNECTIONS, scheme, host and port) while it lasts. The one over its share is answered
429 with `Retry-After` at once, never queued: the upstream connection pool has no limit of its own
beyond these, so an exchange within its shares never waits behind anyone else's.

The counts are this process's (each web process has its own connection pool), so the bounds are per
process; they bound resources, they decide nothing about who may do what.
"""

from __future__ import annotations

from collections import Counter

from django.conf import settings

from core.errors import ErrorCode
from core.public_url import origin_of
from gateway.routing import Refusal

RETRY_AFTER_SECONDS = 1
_held: Counter = Counter()


class Slot:
    """One slot of a caller and one of an upstream's origin, held from its making until `release()` (or the
    end of a `with` block). `ending(send)` releases it as the exchange's last message goes to the client,
    so a client that sends its next request the moment it has this answer finds the slot free."""

    def __init__(self, caller: str | None, url: str | None):
        keys = (("caller", caller),) if caller is not None else ()
        keys += (("origin", origin_of(url)),) if url is not None else ()
        if caller is not None and _held[keys[0]] >= settings.GATEWAY_MAX_STREAMS_PER_CALLER:
            raise _refusal(
                f"You have {settings.GATEWAY_MAX_STREAMS_PER_CALLER} exchanges open through this gateway "
                "process; close one (a stream, say) before opening another."
            )
        if url is not None and _held[keys[-1]] >= settings.GATEWAY_MAX_CONNECTIONS:
            raise _refusal("This upstream has as many open exchanges as the gateway allows it; try again.")
        for key in keys:
            _held[key] += 1
        self._keys: tuple = keys

    def release(self) -> None:
        for key in self._keys:
            _held[key] -= 1
            if not _held[key]:
                del _held[key]
        self._keys = ()

    def ending(self, send):
        """`send`, releasing the slot just before the answer's last message."""

        async def sending(message):
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                self.release()
            await send(message)

        return sending

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *_) -> None:
        self.release()


def slot(caller: str | None, url: str | None) -> Slot:
    """Hold a slot of `caller` and of the origin of `url` for the exchange (of one alone where the other
    is None: a virtual server's stream is one exchange of its caller and one of each member's origin);
    Refusal(429) when either share is used up."""
    return Slot(caller, url)


def _refusal(detail: str) -> Refusal:
    return Refusal(429, ErrorCode.THROTTLED, detail, {"Retry-After": str(RETRY_AFTER_SECONDS)})


def held() -> dict:
    """The slots held now (for tests and diagnostics)."""
    return dict(_held)
