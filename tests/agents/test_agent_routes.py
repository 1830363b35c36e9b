"""The A2A carrier routes from a per-process cache (agents/cache.py) and decides who sees an agent in
memory (agents/policies.py `agent_seen_by`): the same answers as the one visibility rule every listing
uses (`Agent.objects.visible_to`), for every kind of caller and agent, and a change of an agent or of
its groups is seen at once."""

import pytest
from django.contrib.auth.models import Group

from accounts.choices import AuthMethod
from accounts.principal import ANONYMOUS, principal_for_user
from agents.cache import ROUTES
from agents.models import Agent
from agents.policies import agent_seen_by
from agents.selectors import agent_routes
from agents.services import agent_update
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def agents(member):
    owner = member("owen", "owners")
    member("gail", "agent-group")
    member("otto", "owners")
    member("stan")
    shared = AgentFactory(path="/internal/by-group", visibility="internal", is_enabled=True)
    shared.groups.set([Group.objects.get(name="agent-group")])
    return [
        AgentFactory(path="/public/on", visibility="public", is_enabled=True),
        AgentFactory(path="/public/off", visibility="public", is_enabled=False),
        AgentFactory(path="/private/owned", visibility="private", is_enabled=True, owner=owner),
        AgentFactory(path="/internal/by-owner", visibility="internal", is_enabled=True, owner=owner),
        shared,
    ]


@pytest.mark.parametrize("who", ["admin", "anonymous", "owen", "gail", "otto", "stan"])
def test_the_cached_rule_sees_what_the_listings_rule_sees(agents, admin_user, who):
    from accounts.models import User

    if who == "anonymous":
        principal = ANONYMOUS
    else:
        user = admin_user if who == "admin" else User.objects.get(username=who)
        principal = principal_for_user(user, auth_method=AuthMethod.SESSION)

    listed = set(Agent.objects.visible_to(principal).values_list("path", flat=True))
    routed = {
        route.agent.path
        for agent in agents
        for route in agent_routes((agent.path,), ROUTES.epoch())
        if agent_seen_by(principal, route)
    }

    assert routed == listed
    assert listed  # every caller sees some agent: the comparison is never of two empty sets


def test_a_change_of_an_agent_or_its_groups_moves_the_routes_epoch(agents):
    before = ROUTES.epoch()
    agent_update(actor=None, agent=agents[0], description="changed")
    after_update = ROUTES.epoch()
    agents[4].groups.clear()
    after_groups = ROUTES.epoch()

    assert len({before, after_update, after_groups}) == 3
