"""The well-known discovery of skills (skills/well_known.py): `GET` and `HEAD` of the index, of a skill's
SKILL.md and of its archive, for the skills the caller may see (a bearer token, the session, or anonymously
with PUBLIC_LISTING: public skills only); 404 for any other. Cached publicly when anonymous, privately
otherwise; CORS open, since no cookie is needed."""

import json

from django.conf import settings
from django.http import HttpResponse
from rest_framework.permissions import AllowAny
from rest_framework.views import APIView

from accounts.authentication import BearerAuthentication, RegistrySessionAuthentication, principal_of
from core.errors import ApiError, ErrorCode
from skills import well_known
from skills.selectors import approved_file, published, skill_seen, verified

CACHE_SECONDS = 300


class WellKnownView(APIView):
    permission_classes = [AllowAny]
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]

    def principal(self, request):
        principal = principal_of(request)
        if not principal.is_authenticated and not settings.PUBLIC_LISTING:
            raise ApiError(401, ErrorCode.NOT_AUTHENTICATED, "Skills are listed to signed-in callers here.")
        return principal

    def answer(self, request, body: bytes, content_type: str) -> HttpResponse:
        response = HttpResponse(b"" if request.method == "HEAD" else body, content_type=content_type)
        response["Content-Length"] = str(len(body))
        anonymous = not principal_of(request).is_authenticated
        response["Cache-Control"] = f"{'public' if anonymous else 'private'}, max-age={CACHE_SECONDS}"
        response["Vary"] = "Authorization, Cookie"
        response["Access-Control-Allow-Origin"] = "*"
        return response

    def head(self, request, *args, **kwargs):
        return self.get(request, *args, **kwargs)


class IndexView(WellKnownView):
    def get(self, request):
        shown = well_known.index(published(self.principal(request)))
        return self.answer(request, json.dumps(shown, indent=2).encode(), "application/json")


class OldIndexView(WellKnownView):
    def get(self, request):
        shown = well_known.old_index(published(self.principal(request)))
        return self.answer(request, json.dumps(shown, indent=2).encode(), "application/json")


class SkillFileView(WellKnownView):
    """`<base>/<name>/<path>`: a file of the approved version (the v0.2 index names SKILL.md only)."""

    def get(self, request, skill_name, file_path):
        stored = approved_file(skill_seen(self.principal(request), skill_name), file_path)
        kind = "text/markdown; charset=utf-8" if stored.path.endswith(".md") else "application/octet-stream"
        return self.answer(request, bytes(stored.content), kind)


class ArchiveView(WellKnownView):
    def get(self, request, skill_name):
        skill = skill_seen(self.principal(request), skill_name)
        data = well_known.archive_of(skill)
        if data is None:
            raise ApiError(404, ErrorCode.NOT_FOUND, f"No approved version of {skill.path} is served.")
        return self.answer(request, verified(data, skill.approved.archive_sha256), "application/gzip")
