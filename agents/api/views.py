"""The agent API (/api/agents...): bearer tokens, the one error format. Each view parses its input,
checks the caller's permission, calls one service or selector and shapes the answer.

Agents the caller may not see answer 404 exactly like missing ones; refusals change nothing."""

from dataclasses import asdict

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from rest_framework import serializers, status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from accounts.api.permissions import IsAuthenticatedPrincipal
from accounts.authentication import BearerAuthentication, RegistrySessionAuthentication, principal_of
from agents import policies, services
from agents.api.serializers import (
    AgentCardOutSerializer,
    AgentCardQuerySerializer,
    AgentCardSerializer,
    AgentListItemSerializer,
    AgentListQuerySerializer,
    AgentRegisteredSerializer,
    DiscoverQuerySerializer,
    DiscoverSerializer,
    ToggleQuerySerializer,
    a2a_card,
)
from agents.models import Agent
from agents.policies import agent_visible
from agents.selectors import agents_discovered, agents_listed
from core.errors import ApiError, ErrorCode
from core.openapi import documented, path_parameter
from core.public_url import base_url
from core.validators import normalize_path

AGENT_PATH = path_parameter("agent_path", "the agent path, e.g. summarizer")


class InvalidCard(serializers.ValidationError):
    """A card that fails validation: 422, as the interface asks, with `errors` keyed by field."""

    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY


class _WithoutFormatOverride:
    """DRF's settings, except that `?format=` does not pick a renderer: here it picks the card's shape."""

    URL_FORMAT_OVERRIDE = None

    def __getattr__(self, name):
        return getattr(api_settings, name)


class CardNegotiation(DefaultContentNegotiation):
    settings = _WithoutFormatOverride()


def _valid(serializer_class, data) -> dict:
    """Query strings and small bodies: 400 with `errors` when they do not fit.

    A query string is passed as a plain dict: DRF reads a QueryDict as an HTML form, where a missing
    boolean means false, and `toggle` without `enabled` must be an error, not a disable."""
    if hasattr(data, "dict"):
        data = data.dict()
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _valid_card(request, agent: Agent | None = None) -> AgentCardSerializer:
    context = {"agent_path": agent.path} if agent is not None else {}
    context["may_set_headers"] = principal_of(request).is_admin
    serializer = AgentCardSerializer(data=request.data, context=context)
    if not serializer.is_valid():
        raise InvalidCard(serializer.errors)
    return serializer


def _model_errors(exc: DjangoValidationError) -> InvalidCard:
    """What the model's full_clean() refused, in the same 422 shape."""
    return InvalidCard(exc.message_dict if hasattr(exc, "error_dict") else {"card": exc.messages})


def _denied(detail: str) -> ApiError:
    return ApiError(403, ErrorCode.PERMISSION_DENIED, detail)


def _agent_or_404(request, agent_path: str) -> Agent:
    path = normalize_path(agent_path)
    agent = agent_visible(principal_of(request), path)
    if agent is None:
        raise ApiError(404, ErrorCode.NOT_FOUND, f"No agent is registered at {path}.")
    return agent


class AgentView(APIView):
    """The agent API: bearer tokens, or the console's session (CSRF on writes) for the browsable API; a
    request with neither answers 401 with a Bearer challenge."""

    authentication_classes = [BearerAuthentication, RegistrySessionAuthentication]
    permission_classes = [IsAuthenticatedPrincipal]
    content_negotiation_class = CardNegotiation


class AgentListView(AgentView):
    """GET /api/agents: the agents the caller may see (anonymous callers: public, enabled ones)."""

    permission_classes = [AllowAny]

    @documented(parameters=[AgentListQuerySerializer], errors=(400, 401))
    def get(self, request):
        params = _valid(AgentListQuerySerializer, request.query_params)
        principal = principal_of(request)
        rows, total = agents_listed(
            principal,
            query=params["query"],
            enabled_only=params["enabled_only"],
            visibility=params.get("visibility") or None,
        )
        context = {"show_owner": principal.is_authenticated, "base_url": base_url(request)}
        agents = AgentListItemSerializer(rows, many=True, context=context).data
        return Response({"agents": agents, "total_count": total})


class AgentRegisterView(AgentView):
    """POST /api/agents/register: publish a card (disabled until toggled on); the caller owns it."""

    @documented(
        request=AgentCardSerializer,
        responses={201: OpenApiTypes.OBJECT},
        errors=(400, 401, 403, 409, 413, 422),
    )
    def post(self, request):
        principal = principal_of(request)
        if not policies.agent_may_publish(principal):
            raise _denied("Publishing agents needs the publish_agent permission.")
        serializer = _valid_card(request)
        path = serializer.validated_data["path"]
        if not policies.agent_may_publish(principal, path):
            raise _denied(f"You may not publish an agent at {path}.")
        try:
            agent = services.agent_register(actor=principal, path=path, **serializer.service_fields())
        except services.AgentConflict as exc:
            raise ApiError(409, ErrorCode.CONFLICT, str(exc)) from None
        except DjangoValidationError as exc:
            raise _model_errors(exc) from None
        body = {"message": f"Agent {path} registered.", "agent": AgentRegisteredSerializer(agent).data}
        return Response(body, status=status.HTTP_201_CREATED)


class AgentDetailView(AgentView):
    """GET (the card; `?format=a2a` for an A2A v1.0 AgentCard), PUT (replace) and DELETE
    /api/agents/{path}."""

    @documented(parameters=[AGENT_PATH, AgentCardQuerySerializer])
    def get(self, request, agent_path: str):
        params = _valid(AgentCardQuerySerializer, request.query_params)
        agent = _agent_or_404(request, agent_path)
        if params.get("format") == "a2a":  # as published; the gateway serves it with its URL (gateway_url)
            return Response(a2a_card(agent))
        return Response(AgentCardOutSerializer(agent, context={"base_url": base_url(request)}).data)

    @documented(parameters=[AGENT_PATH], request=AgentCardSerializer, errors=(400, 401, 403, 404, 413, 422))
    def put(self, request, agent_path: str):
        principal = principal_of(request)
        agent = _agent_or_404(request, agent_path)
        if not policies.agent_may_modify(principal, agent):
            raise _denied(f"You may not modify {agent.path}: it needs modify_agent and ownership.")
        serializer = _valid_card(request, agent)
        try:
            agent = services.agent_replace(actor=principal, agent=agent, **serializer.service_fields())
        except DjangoValidationError as exc:
            raise _model_errors(exc) from None
        return Response(AgentCardOutSerializer(agent, context={"base_url": base_url(request)}).data)

    @documented(parameters=[AGENT_PATH], responses={204: None})
    def delete(self, request, agent_path: str):
        principal = principal_of(request)
        agent = _agent_or_404(request, agent_path)
        if not policies.agent_may_delete(principal, agent):
            raise _denied(f"You may not delete {agent.path}: only its owner or an administrator may.")
        services.agent_delete(actor=principal, agent=agent)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AgentToggleView(AgentView):
    """POST /api/agents/{path}/toggle?enabled=true|false."""

    @documented(parameters=[AGENT_PATH, ToggleQuerySerializer], request=None)
    def post(self, request, agent_path: str):
        principal = principal_of(request)
        agent = _agent_or_404(request, agent_path)
        if not policies.agent_may_toggle(principal, agent):
            raise _denied(f"You may not enable or disable {agent.path}: it needs toggle_agent.")
        enabled = _valid(ToggleQuerySerializer, request.query_params)["enabled"]
        agent = services.agent_toggle(actor=principal, agent=agent, enabled=enabled)
        state = "enabled" if agent.is_enabled else "disabled"
        return Response({"path": agent.path, "is_enabled": agent.is_enabled, "message": f"Agent {state}."})


class AgentDiscoverView(AgentView):
    """POST /api/agents/discover: agents offering the requested skills, best first."""

    permission_classes = [AllowAny]

    @documented(parameters=[DiscoverQuerySerializer], request=DiscoverSerializer)
    def post(self, request):
        limit = _valid(DiscoverQuerySerializer, request.query_params)["max_results"]
        body = _valid(DiscoverSerializer, request.data)
        matches = agents_discovered(
            principal_of(request), skills=body["skills"], tags=body["tags"], limit=limit
        )
        return Response({"agents": [asdict(match) for match in matches]})
