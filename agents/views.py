"""The agents page: the agents the caller may see with their skills, and enable/disable for those
allowed. A plain page; no JavaScript needed. Searching agents, servers and tools by meaning is the
/search page's (search/views.py)."""

from dataclasses import dataclass

from django.contrib import messages
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.views import back_to, session_page
from agents import policies, services
from agents.models import Agent
from agents.policies import agent_visible
from agents.selectors import agents_listed
from core.errors import ApiError, ErrorCode
from core.metrics_client import reporting_on
from core.validators import normalize_path
from metrics.plots import method_usage
from servers.choices import DETAILED, HealthStatus
from servers.views import problem_page


@dataclass(frozen=True)
class AgentRow:
    agent: Agent
    skills: list[str]  # skill names
    can_toggle: bool
    shows_detail: bool  # why it is not healthy
    usage: list  # its calls through the gateway of the last 24 hours, by A2A method (metrics/plots.py)


@require_GET
@session_page
def agents_page(request, principal):
    """GET /agents: the caller's agents. `?q=` was the search's address before /search had a page of its
    own; it is sent there."""
    if "q" in request.GET:
        return HttpResponseRedirect(f"{reverse('search:page')}?{request.GET.urlencode()}")
    agents, total = agents_listed(principal)
    usage = method_usage([agent.path for agent in agents], 24) if reporting_on() else {}
    rows = [
        AgentRow(
            agent=agent,
            skills=[
                str(skill.get("name") or skill.get("id")) for skill in agent.skills if isinstance(skill, dict)
            ],
            can_toggle=policies.agent_may_toggle(principal, agent),
            shows_detail=agent.health_status in DETAILED,
            usage=usage.get(agent.path, []),
        )
        for agent in agents
    ]
    labels = dict(HealthStatus.choices)
    return render(request, "agents/agents.html", {"rows": rows, "total": total, "status_labels": labels})


@require_POST
@session_page
def agent_toggle_form(request, principal, agent_path):
    """POST /agents/<path>/toggle with `enabled=on|off`: the page's enable/disable button."""
    agent = agent_visible(principal, normalize_path(agent_path))
    if agent is None:
        error = ApiError(404, ErrorCode.NOT_FOUND, f"No agent is registered at {normalize_path(agent_path)}.")
        return problem_page(request, error)
    if not policies.agent_may_toggle(principal, agent):
        message = f"You may not enable or disable {agent.path}: it needs toggle_agent."
        return problem_page(request, ApiError(403, ErrorCode.PERMISSION_DENIED, message))
    agent = services.agent_toggle(actor=principal, agent=agent, enabled=request.POST.get("enabled") == "on")
    messages.success(request, f"Agent {agent.path} {'enabled' if agent.is_enabled else 'disabled'}.")
    response = HttpResponseRedirect(back_to(request, reverse("agents:page")))
    response.status_code = 303
    return response
