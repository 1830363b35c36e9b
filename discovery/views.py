"""`GET /.well-known/ai-catalog.json` (discovery/ai_catalog.py) and ARD's registry API under `/ard`
(discovery/ard.py): read with a bearer token, the console's session, or anonymously (what
PUBLIC_LISTING's public group grants, and public agents). The catalog has `ETag` and 304, cached publicly
for DISCOVERY_CACHE_TTL when anonymous, privately otherwise."""

import json

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ParseError
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from accounts.authentication import (
    BearerAuthentication,
    PublicListingAuthentication,
    RegistrySessionAuthentication,
    principal_of,
)
from core.etags import etag_of, unchanged
from discovery import ard
from discovery.ai_catalog import MEDIA_TYPE, catalog_of
from search.selectors import search_rate_limit
from servers.clients import gateway_base_url


class AiCatalogView(APIView):
    permission_classes = [AllowAny]
    authentication_classes = [
        BearerAuthentication,
        RegistrySessionAuthentication,
        PublicListingAuthentication,
    ]

    def get(self, request):
        principal = principal_of(request)
        body = json.dumps(catalog_of(principal, gateway_base_url(request)), separators=(",", ":")).encode()
        etag = etag_of(body)
        public = not principal.is_authenticated or isinstance(
            request.successful_authenticator, PublicListingAuthentication
        )
        headers = {
            "ETag": etag,
            "Cache-Control": f"{'public' if public else 'private'}, max-age={settings.DISCOVERY_CACHE_TTL}",
            "Vary": "Authorization, Cookie",
            "Access-Control-Allow-Origin": "*",
        }
        if unchanged(request.headers.get("If-None-Match", ""), etag):
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(body, content_type=MEDIA_TYPE, headers=headers)


# ARD's operations are ARD's OpenAPI (ards-project/ard-spec: spec/schemas/ard.openapi.yaml), whose shapes and
# statuses (501 for explore) are not the registry's own API's: they stay out of /api/schema/.
ARD_OPERATION = extend_schema(exclude=True)


class ArdView(APIView):
    """ARD's registry API (discovery/ard.py): the same callers as the AI Catalog; the search rate limit of
    every other search surface (429 with Retry-After)."""

    permission_classes = [AllowAny]
    authentication_classes = [
        BearerAuthentication,
        RegistrySessionAuthentication,
        PublicListingAuthentication,
    ]

    def handle_exception(self, exc):
        if isinstance(exc, ard.ArdError):
            return JsonResponse(exc.body(), status=exc.status)
        if isinstance(exc, ParseError):
            return JsonResponse({"errorCode": "INVALID_ARGUMENT", "message": str(exc.detail)}, status=400)
        return super().handle_exception(exc)


class ArdSearchView(ArdView):
    @ARD_OPERATION
    def post(self, request):
        principal = principal_of(request)
        wanted = ard.read_search(request.data)
        decision = search_rate_limit(principal, request.META.get("REMOTE_ADDR", ""))
        if not decision.allowed:
            too_many = {"errorCode": "RESOURCE_EXHAUSTED", "message": "Too many searches; try again later."}
            return JsonResponse(too_many, status=429, headers={"Retry-After": str(decision.retry_after)})
        return JsonResponse(ard.search(principal, gateway_base_url(request), wanted))


class ArdEntryView(ArdView):
    @ARD_OPERATION
    def get(self, request, identifier: str):
        return JsonResponse(ard.entry_of(principal_of(request), gateway_base_url(request), identifier))


class ArdExploreView(ArdView):
    @ARD_OPERATION
    def post(self, request):
        unsupported = {"errorCode": "UNIMPLEMENTED", "message": "This registry does not offer explore."}
        return JsonResponse(unsupported, status=501)
