"""The id of each request, which error bodies and logs carry so a report can be traced: a well-formed
X-Request-ID the client sent is kept, anything else replaced. One rule for Django's middleware and the
ASGI layers ahead of it."""

import re
import uuid

HEADER = "X-Request-ID"
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def request_id_for(incoming: str) -> str:
    """The id of a request that sent `incoming` as its X-Request-ID."""
    return incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
