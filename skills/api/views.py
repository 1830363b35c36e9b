"""The skills API (/api/skills..., and the same under /api/internal/skills for deployment scripts): publish
a skill from an archive (multipart `archive`: a .tar.gz or .zip of its folder), list and read the skills
the caller may see, download each approved file, remove one's own. Refusals in the one error format; a
broken rule of agentskills.io or of the archive reader is a 400 naming it (`rule`)."""

import mimetypes

import jwt
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api.permissions import IsRegistryAdmin
from accounts.authentication import (
    BearerAuthentication,
    InternalBasicAuthentication,
    RegistrySessionAuthentication,
    principal_of,
)
from core import attestations
from core.errors import ApiError, ErrorCode
from core.openapi import documented, path_parameter
from core.parsers import JSONParser
from core.visibility import Visibility
from skills.archives import ArchiveRefused
from skills.git_source import GitRefused
from skills.rules import SkillRefused
from skills.selectors import approved_file, skill_seen, skill_shown, skills_visible
from skills.services import skill_delete, skill_publish, skill_publish_from_git

SKILL_PATH = path_parameter("skill_path", "the skill's path, e.g. pdf-tools")


class SkillsView(APIView):
    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]


class SkillListView(SkillsView):
    """GET: the skills you may see; POST: publish one (or a new version of one you own)."""

    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @documented(errors=(401,))
    def get(self, request):
        principal = principal_of(request)
        return Response({"skills": [skill_shown(skill) for skill in skills_visible(principal)]})

    @documented(
        request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT}, errors=(400, 401, 403, 413)
    )
    def post(self, request):
        principal = principal_of(request)
        if not principal.is_authenticated or (principal.user is None and not principal.is_admin):
            raise ApiError(401, ErrorCode.NOT_AUTHENTICATED, "Publishing a skill needs a signed-in user.")
        if not isinstance(request.data, dict):
            raise ApiError(400, ErrorCode.BAD_REQUEST, "Send a form with `archive`, or a JSON object.")
        upload, git = request.FILES.get("archive"), _git_source(request.data)
        if (upload is None) == (git is None):
            raise ApiError(
                400,
                ErrorCode.BAD_REQUEST,
                "Send the skill's folder as `archive` (.tar.gz or .zip), or name a Git repository as "
                "`git_url` and `ref` (and `folder`, the skill's folder in it): one of the two.",
            )
        visibility = request.data.get("visibility") or Visibility.PUBLIC
        if visibility not in Visibility.values:
            raise ApiError(
                400, ErrorCode.BAD_REQUEST, f"visibility is one of {', '.join(Visibility.values)}."
            )
        try:
            if git is not None:
                skill, version, new = skill_publish_from_git(actor=principal, visibility=visibility, **git)
            else:
                skill, version, new = skill_publish(
                    actor=principal, data=upload.read(), visibility=visibility
                )
        except (ArchiveRefused, SkillRefused, GitRefused) as refused:
            raise ApiError(400, ErrorCode.BAD_REQUEST, f"{refused.rule}: {refused}") from None
        shown = {
            **skill_shown(skill, versions=True),
            "published": {"digest": version.digest, "status": version.status, "findings": version.findings},
        }
        return Response(shown, status=201 if new else 200)


def _git_source(data) -> dict | None:
    """`git_url`, `ref` and `folder` of a publication from Git, when it names a repository."""
    if not data.get("git_url"):
        return None
    fields = {"url": data.get("git_url"), "ref": data.get("ref") or "", "folder": data.get("folder") or ""}
    if not all(isinstance(value, str) and len(value) <= 2048 for value in fields.values()):
        raise ApiError(400, ErrorCode.BAD_REQUEST, "git_url, ref and folder are text.")
    return fields


class SkillDetailView(SkillsView):
    """GET: one skill you may see (its approved version, and its versions); DELETE: remove your own."""

    @documented(parameters=[SKILL_PATH], errors=(401, 404))
    def get(self, request, skill_path):
        return Response(skill_shown(skill_seen(principal_of(request), skill_path), versions=True))

    @documented(parameters=[SKILL_PATH], responses={204: None}, errors=(401, 403, 404))
    def delete(self, request, skill_path):
        principal = principal_of(request)
        skill_delete(actor=principal, skill=skill_seen(principal, skill_path))
        return Response(status=204)


class SkillFileView(SkillsView):
    """GET: one file of a skill's approved version, its bytes as published (`ETag`: its sha256)."""

    @documented(parameters=[SKILL_PATH], responses={200: OpenApiTypes.BINARY}, errors=(401, 404))
    def get(self, request, skill_path, file_path):
        stored = approved_file(skill_seen(principal_of(request), skill_path), file_path)
        kind = mimetypes.guess_type(stored.path)[0] or "application/octet-stream"
        if kind.startswith("text/") or stored.path.endswith(".md"):
            kind = f"{'text/markdown' if stored.path.endswith('.md') else kind}; charset=utf-8"
        response = HttpResponse(bytes(stored.content), content_type=kind)
        response["ETag"] = f'"{stored.sha256}"'
        response["Content-Disposition"] = "inline" if kind.startswith("text/") else "attachment"
        response["X-Content-Type-Options"] = "nosniff"
        return response


class InternalSkillListView(SkillListView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]
    permission_classes = [IsRegistryAdmin]


class InternalSkillDetailView(SkillDetailView):
    """The same, on the internal administration API (HTTP Basic against ADMIN_USER / ADMIN_PASSWORD)."""

    authentication_classes = [InternalBasicAuthentication]
    permission_classes = [IsRegistryAdmin]


class AttestationView(APIView):
    """GET: the registry's signed attestation of the content with this sha256 (a skill version's file set
    or archive, a server's pinned tool set), and what it says; verify it with the keys at
    /api/attestations/keys."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @documented(errors=(404,))
    def get(self, request, sha256):
        digest = sha256.removeprefix("sha256:").lower()
        found = attestations.attested(digest)
        if found is None:
            raise ApiError(404, ErrorCode.NOT_FOUND, f"The registry attested no content of digest {digest}.")
        return Response(
            {"attestation": found, "claims": jwt.decode(found, options={"verify_signature": False})}
        )


class AttestationKeysView(APIView):
    """GET: the attestation keys, a JWK Set (every key still trusted, the newest signing)."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @documented(errors=())
    def get(self, request):
        response = Response(attestations.jwks())
        response["Cache-Control"] = "public, max-age=300"
        response["Access-Control-Allow-Origin"] = "*"
        return response
