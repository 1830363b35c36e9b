"""Request ids: accepted from a trusted-looking X-Request-ID or generated, echoed on every response."""

import re
import uuid

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


class RequestIdMiddleware:
    """Gives each request an id that error bodies and logs carry, so a report can be traced."""

    header = "X-Request-ID"

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get(self.header, "")
        request.request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex
        response = self.get_response(request)
        response[self.header] = request.request_id
        return response
