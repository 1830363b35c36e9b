"""`GET /.well-known/ai-catalog.json` (discovery/ai_catalog.py): read with a bearer token, the console's
session, or anonymously (what PUBLIC_LISTING's public group grants, and public agents). `ETag` and 304;
cached publicly for DISCOVERY_CACHE_TTL when anonymous, privately otherwise."""

import hashlib
import json

from django.conf import settings
from django.http import HttpResponse
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from accounts.authentication import (
    BearerAuthentication,
    PublicListingAuthentication,
    RegistrySessionAuthentication,
    principal_of,
)
from discovery.ai_catalog import MEDIA_TYPE, catalog_of
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
        etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        public = not principal.is_authenticated or isinstance(
            request.successful_authenticator, PublicListingAuthentication
        )
        headers = {
            "ETag": etag,
            "Cache-Control": f"{'public' if public else 'private'}, max-age={settings.DISCOVERY_CACHE_TTL}",
            "Vary": "Authorization, Cookie",
            "Access-Control-Allow-Origin": "*",
        }
        if etag in {
            tag.strip().removeprefix("W/") for tag in request.headers.get("If-None-Match", "").split(",")
        }:
            return HttpResponse(status=304, headers=headers)
        return HttpResponse(body, content_type=MEDIA_TYPE, headers=headers)
