"""Semantic search endpoints: `POST /api/agents/discover/semantic` (agents, interface section B) and
`POST /api/search/semantic` (servers, tools, agents and catalog entries together).

Authentication is optional: anonymous callers find public enabled agents (and no servers or tools, since
no scope lets them see one); a bearer token or a session finds what its principal may see. A bearer token
that fails verification is a 401, never a silent downgrade to anonymous.
"""

import logging

from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import BearerAuthentication, RegistrySessionAuthentication, principal_of
from core.embeddings import EmbeddingError
from core.errors import ApiError, ErrorCode
from core.openapi import documented
from core.parsers import JSONParser
from search.selectors import (
    CATALOG_ENTRY,
    ENTITY_TYPES,
    MAX_RESULTS,
    QUERY_MAX_LENGTH,
    TOOL,
    VIRTUAL,
    Match,
    agents_semantic,
    registry_semantic,
    search_rate_limit,
)

logger = logging.getLogger(__name__)

DEFAULT_RESULTS = 10


class SemanticQuerySerializer(serializers.Serializer):
    query = serializers.CharField(max_length=QUERY_MAX_LENGTH)  # trimmed; blank is "may not be blank"
    max_results = serializers.IntegerField(min_value=1, max_value=MAX_RESULTS, default=DEFAULT_RESULTS)


class RegistrySemanticQuerySerializer(SemanticQuerySerializer):
    entity_types = serializers.ListField(
        child=serializers.ChoiceField(choices=ENTITY_TYPES),
        allow_empty=False,
        default=lambda: list(ENTITY_TYPES),
    )


class AgentMatchSerializer(serializers.Serializer):
    path = serializers.CharField(source="row.path")
    name = serializers.CharField(source="row.name")
    relevance_score = serializers.FloatField()
    description = serializers.CharField(source="row.description")


def registry_match(match: Match) -> dict:
    """One unified result. A tool's `path` is its server's (the MCP endpoint that serves it), and it names
    that server; servers and agents carry their tags; a catalog entry (a server published or mirrored
    here) has no path: its server.json name and latest version say where to read it in /v0.1."""
    row = match.row
    common = {"entity_type": match.entity_type, "relevance_score": match.relevance_score}
    if match.entity_type == CATALOG_ENTRY:
        return {
            **common,
            "name": row.name,
            "title": row.document.get("title", ""),
            "description": row.description,
            "version": row.version,
            "status": row.status,
        }
    if match.entity_type == TOOL:
        return {
            **common,
            "path": row.server.path,
            "name": row.name,
            "description": row.description,
            "server_path": row.server.path,
            "server_name": row.server.name,
        }
    if match.entity_type == VIRTUAL:
        return {
            **common,
            "path": row.path,
            "name": row.name,
            "description": row.description,
            "members": [member.server.path for member in row.members.all()],
        }
    return {
        **common,
        "path": row.path,
        "name": row.name,
        "description": row.description,
        "tags": list(row.tags),
    }


class SemanticSearchView(APIView):
    """Authentication optional; an embedding failure is a 500 `SEARCH_ERROR` with the request id.

    Searches are rate-limited per caller (`search_rate_limit`); answers carry `X-RateLimit-*`, refusals
    are 429."""

    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [AllowAny]

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.rate_limit = search_rate_limit(principal_of(request), request.META.get("REMOTE_ADDR", ""))
        if not self.rate_limit.allowed:
            raise ApiError(
                429, ErrorCode.THROTTLED, "Too many searches; try again later.", self.rate_limit.headers()
            )

    def finalize_response(self, request, response, *args, **kwargs):
        limit = getattr(self, "rate_limit", None)
        if limit is not None and limit.allowed:
            for name, value in limit.headers().items():
                response[name] = value
        return super().finalize_response(request, response, *args, **kwargs)

    def search(self, run, *args):
        try:
            return run(*args)
        except EmbeddingError:
            logger.exception("semantic search failed (request %s)", getattr(self.request, "request_id", ""))
            raise ApiError(
                500,
                ErrorCode.SEARCH_ERROR,
                "Semantic search is unavailable: the query could not be embedded. Try again later.",
            ) from None


class AgentSemanticSearchView(SemanticSearchView):
    """POST /api/agents/discover/semantic?query=...&max_results=...: the nearest agents the caller may see."""

    @documented(parameters=[SemanticQuerySerializer], request=None, errors=(400, 401, 429, 500))
    def post(self, request):
        params = SemanticQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        matches = self.search(
            agents_semantic,
            principal_of(request),
            params.validated_data["query"],
            params.validated_data["max_results"],
        )
        return Response({"agents": AgentMatchSerializer(matches, many=True).data})


class RegistrySemanticSearchView(SemanticSearchView):
    """POST /api/search/semantic with JSON {query, entity_types, max_results}: servers, tools and agents."""

    parser_classes = [JSONParser]

    @documented(request=RegistrySemanticQuerySerializer, errors=(400, 401, 413, 415, 429, 500))
    def post(self, request):
        params = RegistrySemanticQuerySerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        matches = self.search(
            registry_semantic, principal_of(request), data["query"], data["entity_types"], data["max_results"]
        )
        return Response({"results": [registry_match(match) for match in matches]})
