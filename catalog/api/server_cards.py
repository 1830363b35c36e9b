"""`GET <gateway MCP URL>/server-card`: the MCP Server Card of a server or virtual server the caller may
see (catalog/server_cards.py), 404 otherwise, with or without credentials (a card never tells an
anonymous caller which servers exist). The card is served whatever the `Accept` header asks (its own
media type, JSON, anything). `ETag` and 304 on `If-None-Match`; cached publicly for an hour when the
caller is anonymous (what the public listing shows), privately for five minutes otherwise; CORS open to
any origin, as the extension asks, for `GET` with a bearer token (cookies are never sent with `*`), and
its preflight answered before any credential is asked."""

from django.http import HttpResponse
from rest_framework.permissions import AllowAny
from rest_framework.response import Response

from accounts.authentication import principal_of
from catalog import server_cards
from catalog.api.v01 import V01View
from core.errors import ApiError, ErrorCode
from core.etags import unchanged
from servers.clients import gateway_base_url
from servers.policies import server_seen
from servers.v01_responses import server_response
from virtual_servers.listing import registry_entry, visible_to

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, If-None-Match",
    "Access-Control-Expose-Headers": "ETag",
}
PREFLIGHT_MAX_AGE = "3600"


class ServerCardView(V01View):
    permission_classes = [AllowAny]  # what the caller may not see is 404, anonymous or not

    def perform_content_negotiation(self, request, force=False):
        """The card is the card whatever `Accept` names; errors are JSON."""
        return super().perform_content_negotiation(request, force=True)

    def options(self, request, *args, **kwargs) -> HttpResponse:
        """The CORS preflight: no credential is sent with one, so none is asked for."""
        return HttpResponse(status=204, headers={**CORS, "Access-Control-Max-Age": PREFLIGHT_MAX_AGE})

    def get(self, request, path: str) -> HttpResponse | Response:
        path = "/" + path.strip("/")
        principal = principal_of(request)
        base_url = gateway_base_url(request)
        server = server_seen(principal, path)
        if server is not None:
            entry = server_response(server, base_url=base_url)
        else:
            virtual = visible_to(principal).filter(path=path).first()
            if virtual is None:
                raise ApiError(404, ErrorCode.NOT_FOUND, f"No MCP server at {path}.")
            entry = registry_entry(virtual, list(virtual.members.all()), base_url=base_url)
        body, etag = server_cards.body_and_etag(server_cards.card_of(entry))
        public = not principal.is_authenticated
        headers = {
            **CORS,
            "ETag": etag,
            "Cache-Control": "public, max-age=3600" if public else "private, max-age=300",
            "Vary": "Authorization, Cookie",
        }
        if unchanged(request.headers.get("If-None-Match", ""), etag):
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(body, content_type=server_cards.MEDIA_TYPE, headers=headers)
