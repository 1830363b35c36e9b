"""The agent API (/api/agents, bearer tokens): register, list, read, replace, delete and toggle, with
every refusal (no token, not visible, not allowed, invalid card) leaving the registry unchanged, and
private and internal agents never showing to callers who may not see them."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts.models import AuditEvent
from agents.models import Agent
from agents.selectors import LIST_LIMIT
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

CARD = {
    "name": "Summarizer",
    "description": "Summarizes long documents",
    "path": "/summarizer",
    "url": "https://agents.example.test/summarizer",
    "version": "1.2.0",
    "provider": "Anthropic",
    "security_schemes": {"token": {"type": "bearer", "description": "A registry token"}},
    "skills": [
        {
            "name": "summarize",
            "description": "Summarize a document",
            "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }
    ],
    "tags": "nlp, summaries",
    "visibility": "private",
    "license": "MIT",
}


# -- callers and agents ------------------------------------------------------------------------------


@pytest.fixture
def olivia(member, scope_factory):
    """Owner of the agents below: may publish anywhere and modify (her own) agents."""
    scope_factory("builders", group="builders", ui={"publish_agent": ["all"], "modify_service": ["all"]})
    return member("olivia", "builders", "team-a")


@pytest.fixture
def gina(member):
    """Shares the group team-a with olivia, so she sees olivia's internal agents."""
    return member("gina", "team-a")


@pytest.fixture
def sam(member, scope_factory):
    """A stranger who may modify, delete and publish nothing of olivia's."""
    scope_factory("others", group="others", ui={"list_agents": ["all"], "publish_agent": ["/sam"]})
    return member("sam", "others")


@pytest.fixture
def ada(member):
    return member("ada", "mcp-registry-admin")


@pytest.fixture
def tokens(token_for, olivia, gina, sam, ada):
    return {user.username: token_for(user) for user in (olivia, gina, sam, ada)}


@pytest.fixture
def agents(olivia):
    """One agent of each visibility, all enabled, plus a disabled public one."""
    return {
        path: AgentFactory(path=path, name=path[1:], visibility=visibility, is_enabled=enabled, owner=olivia)
        for path, visibility, enabled in (
            ("/pub", "public", True),
            ("/pub-off", "public", False),
            ("/priv", "private", True),
            ("/int", "internal", True),
        )
    }


def bearer(token):
    return {"Authorization": f"Bearer {token}"} if token else {}


def url(name, agent_path=None):
    return reverse(f"agents-api:{name}", kwargs={"agent_path": agent_path} if agent_path else None)


def post(client, name, body=None, token=None, agent_path=None, query=""):
    return client.post(
        url(name, agent_path) + query, body, content_type="application/json", headers=bearer(token)
    )


def put(client, agent_path, body, token=None):
    """PUT a card; fields set to None are left out of it."""
    body = {key: value for key, value in body.items() if value is not None}
    return client.put(url("detail", agent_path), body, content_type="application/json", headers=bearer(token))


def error_body(response, detail, code):
    return {"detail": detail, "error_code": code, "request_id": response["X-Request-ID"]}


def invalid_body(response, errors):
    return {
        "detail": "Invalid input.",
        "error_code": "validation_error",
        "request_id": response["X-Request-ID"],
        "errors": errors,
    }


def agent_audit():
    """The audit rows of agent writes (issuing the tests' tokens is audited too)."""
    return AuditEvent.objects.filter(action__startswith="agent.").order_by("id")


def snapshot():
    """Everything a refused request must leave alone."""
    return list(Agent.objects.order_by("path").values()), agent_audit().count()


@pytest.fixture
def embed_queue(django_capture_on_commit_callbacks, settings):
    """Embedding tasks this process really published to the (embedded) Redis broker, read from Celery's
    `after_task_publish` signal: other test runs share that Redis, so its queue is not ours to read.
    Every embedding goes through the worker here, whether or not this process has loaded the model."""
    settings.EMBEDDINGS_IN_REQUEST = False
    from celery.signals import after_task_publish

    published = []

    def record(sender=None, body=None, **kwargs):
        args, _, _ = body
        published.append((sender, args[0]))

    after_task_publish.connect(record, weak=False)

    class Queue:
        def capture(self):
            return django_capture_on_commit_callbacks(execute=True)

        def ids(self):
            assert {task for task, _ in published} <= {"search.embed_agents_task"}
            return [agent_ids for _, agent_ids in published]

    yield Queue()
    after_task_publish.disconnect(record)


# -- no token ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "name", "agent_path"),
    [
        ("post", "register", None),
        ("get", "detail", "pub"),
        ("put", "detail", "pub"),
        ("delete", "detail", "pub"),
        ("post", "toggle", "pub"),
    ],
)
def test_bearer_endpoints_answer_401_without_a_token_and_change_nothing(
    client, agents, method, name, agent_path
):
    before = snapshot()

    response = getattr(client, method)(url(name, agent_path), CARD, content_type="application/json")

    assert response.status_code == 401
    assert response.json() == error_body(
        response, "Authentication credentials were not provided.", "not_authenticated"
    )
    assert response["WWW-Authenticate"] == 'Bearer realm="mcp-gateway-registry"'
    assert snapshot() == before


@pytest.mark.parametrize(("method", "name"), [("get", "list"), ("post", "discover")])
def test_optional_auth_endpoints_still_refuse_a_bad_token(client, method, name):
    response = getattr(client, method)(url(name), headers=bearer("not-a-token"))

    assert response.status_code == 401
    assert response.json() == error_body(response, "The token is malformed.", "token_malformed")


# -- register ----------------------------------------------------------------------------------------


def test_register_publishes_a_disabled_agent_owned_by_the_caller_and_queues_its_embedding(
    client, tokens, olivia, embed_queue
):
    with embed_queue.capture():
        response = post(client, "register", CARD, tokens["olivia"])

    assert response.status_code == 201
    agent = Agent.objects.get()
    assert response.json() == {
        "message": "Agent /summarizer registered.",
        "agent": {
            "name": "Summarizer",
            "path": "/summarizer",
            "url": "https://agents.example.test/summarizer",
            "num_skills": 1,
            "registered_at": agent.registered_at.isoformat().replace("+00:00", "Z"),
            "is_enabled": False,
        },
    }
    assert (agent.owner, agent.provider, agent.tags, agent.visibility, agent.embedding_dirty) == (
        olivia,
        "anthropic",
        ["nlp", "summaries"],
        "private",
        True,
    )
    assert agent.skills == CARD["skills"]
    assert list(agent_audit().values_list("actor_name", "action", "target")) == [
        ("olivia", "agent.create", "agent:/summarizer")
    ]
    assert embed_queue.ids() == [[agent.pk]]


def test_register_normalizes_the_path_and_fills_the_defaults(client, tokens):
    card = {key: CARD[key] for key in ("name", "description", "url", "version")} | {
        "path": "Team/Summarizer/"
    }

    response = post(client, "register", card, tokens["olivia"])

    assert response.status_code == 201
    agent = Agent.objects.get()
    assert (agent.path, agent.visibility, agent.license, agent.provider, agent.skills, agent.tags) == (
        "/team/summarizer",
        "public",
        "N/A",
        "",
        [],
        [],
    )


def test_register_without_publish_agent_is_403_and_writes_nothing(client, member, token_for, embed_queue):
    token = token_for(member("nobody"))

    with embed_queue.capture():
        response = post(client, "register", CARD, token)

    assert response.status_code == 403
    assert response.json() == error_body(
        response, "Publishing agents needs the publish_agent permission.", "permission_denied"
    )
    assert snapshot() == ([], 0)
    assert embed_queue.ids() == []


def test_publish_agent_for_one_path_does_not_allow_another(client, tokens):
    allowed = post(client, "register", CARD | {"path": "/sam"}, tokens["sam"])
    refused = post(client, "register", CARD | {"path": "/summarizer"}, tokens["sam"])

    assert allowed.status_code == 201
    assert refused.status_code == 403
    assert refused.json() == error_body(
        refused, "You may not publish an agent at /summarizer.", "permission_denied"
    )
    assert list(Agent.objects.values_list("path", flat=True)) == ["/sam"]


def test_register_at_a_used_path_is_409_and_changes_nothing(client, tokens, agents, embed_queue):
    before = snapshot()

    with embed_queue.capture():
        response = post(client, "register", CARD | {"path": "/priv"}, tokens["olivia"])

    assert response.status_code == 409
    assert response.json() == error_body(response, "An agent is already registered at /priv.", "conflict")
    assert snapshot() == before
    assert embed_queue.ids() == []


REQUIRED = ["This field is required."]
PATH_RULE = (
    "Path must be '/' and segments of lower-case letters, digits, '-' or '_' separated by '/' "
    "(no empty segments, no '..', no query or fragment)."
)


@pytest.mark.parametrize(
    ("change", "errors"),
    [
        ({"name": None}, {"name": REQUIRED}),
        ({"description": None}, {"description": REQUIRED}),
        ({"path": None}, {"path": REQUIRED}),
        ({"url": None}, {"url": REQUIRED}),
        ({"version": None}, {"version": REQUIRED}),
        ({"name": ""}, {"name": ["This field may not be blank."]}),
        ({"name": 42}, {"name": ["Not a valid string."]}),
        ({"url": "ftp://files.example.test/agent"}, {"url": ["Enter an absolute http:// or https:// URL."]}),
        ({"url": "/relative/agent"}, {"url": ["Enter an absolute http:// or https:// URL."]}),
        ({"url": "not a url"}, {"url": ["Enter an absolute http:// or https:// URL."]}),
        ({"visibility": "everyone"}, {"visibility": ['"everyone" is not a valid choice.']}),
        (
            {"provider": "acme"},
            {
                "provider": [
                    "'acme' is not a known provider; use one of: anthropic, openai, google, microsoft, aws, "
                    "meta, mistral, cohere, ibm, salesforce, custom, other."
                ]
            },
        ),
        (
            {"tags": ["nlp", "summaries"]},
            {"tags": ['Must be a comma-separated string, e.g. "nlp, summaries".']},
        ),
        ({"skills": "summarize"}, {"skills": ["Must be a list of skill objects."]}),
        (
            {"skills": ["summarize"]},
            {"skills": ["Skill 0: a skill {name, description, input_schema} must be an object."]},
        ),
        (
            {
                "skills": [
                    {"description": "no name"},
                    {"name": "x", "description": "d", "input_schema": "text"},
                ]
            },
            {
                "skills": [
                    "Skill 0: 'name' must be a non-empty string.",
                    "Skill 1: 'input_schema' must be an object.",
                ]
            },
        ),
        ({"skills": [{"name": "x"}]}, {"skills": ["Skill 0: 'description' must be a non-empty string."]}),
        (
            {"security_schemes": ["bearer"]},
            {"security_schemes": ["Must be an object mapping scheme names to {type, description}."]},
        ),
        ({"path": "/a/../b"}, {"path": [PATH_RULE]}),
    ],
    ids=lambda value: json.dumps(value)[:60] if isinstance(value, dict) else None,
)
def test_each_invalid_field_is_one_422_entry_and_nothing_is_written(client, tokens, change, errors):
    card = {key: value for key, value in (CARD | change).items() if value is not None}

    response = post(client, "register", card, tokens["olivia"])

    assert response.status_code == 422
    assert response.json() == invalid_body(response, errors)
    assert snapshot() == ([], 0)


def test_several_invalid_fields_are_reported_together(client, tokens):
    card = {
        "description": "no name, no version",
        "path": "/several",
        "url": "mailto:agent@example.test",
        "visibility": "everyone",
        "provider": "acme",
        "tags": 7,
        "skills": {"name": "summarize"},
    }

    response = post(client, "register", card, tokens["olivia"])

    assert response.status_code == 422
    errors = response.json()["errors"]
    assert sorted(errors) == ["name", "provider", "skills", "tags", "url", "version", "visibility"]
    assert all(isinstance(messages, list) and messages for messages in errors.values())
    assert snapshot() == ([], 0)


@pytest.mark.parametrize("path", ["/register", "/discover", "/discover/semantic", "/tools/toggle"])
def test_paths_the_api_routes_use_are_reserved(client, tokens, path):
    response = post(client, "register", CARD | {"path": path}, tokens["olivia"])

    assert response.status_code == 422
    assert response.json()["errors"] == {
        "path": ["This path is reserved by the agent API's own routes (/register, /discover, .../toggle)."]
    }


# -- list --------------------------------------------------------------------------------------------


def test_list_entries_have_exactly_the_documented_shape(client, tokens, agents):
    agent = agents["/pub"]
    Agent.objects.filter(pk=agent.pk).update(tags=["nlp", "fast"], description="Public one")
    agent.refresh_from_db()

    response = client.get(url("list"), {"query": "public one"}, headers=bearer(tokens["gina"]))

    assert response.status_code == 200
    assert response.json() == {
        "agents": [
            {
                "name": "pub",
                "path": "/pub",
                "description": "Public one",
                "url": agent.url,
                "gateway_url": "http://testserver/pub/a2a",
                "version": "1.0.0",
                "visibility": "public",
                "is_enabled": True,
                "num_skills": 1,
                "tags": "nlp, fast",
                "owner": "olivia",
                "registered_at": agent.registered_at.isoformat().replace("+00:00", "Z"),
                "health_status": "unknown",
                "last_checked_at": None,
            }
        ],
        "total_count": 1,
    }


def test_anonymous_callers_see_public_enabled_agents_without_owner_names(client, agents):
    response = client.get(url("list"))

    assert response.status_code == 200
    assert [(entry["path"], entry["owner"]) for entry in response.json()["agents"]] == [("/pub", None)]
    assert response.json()["total_count"] == 1


def test_query_matches_name_description_tags_and_skill_names_case_insensitively(client, tokens, olivia):
    AgentFactory(path="/by-name", name="Weather Oracle", owner=olivia)
    AgentFactory(path="/by-description", description="Knows the WEATHER", owner=olivia)
    AgentFactory(path="/by-tag", tags=["weather-data"], owner=olivia)
    AgentFactory(path="/by-skill", skills=[{"name": "get_weather", "description": "x"}], owner=olivia)
    AgentFactory(path="/by-skill-description", skills=[{"name": "x", "description": "weather"}], owner=olivia)
    AgentFactory(path="/across-tags", tags=["wea", "ther"], owner=olivia)

    response = client.get(url("list"), {"query": "weather"}, headers=bearer(tokens["olivia"]))

    assert [entry["path"] for entry in response.json()["agents"]] == [
        "/by-description",
        "/by-name",
        "/by-skill",
        "/by-tag",
    ]
    assert response.json()["total_count"] == 4


def test_enabled_only_and_visibility_filter_the_list(client, tokens, agents):
    def paths(**params):
        response = client.get(url("list"), params, headers=bearer(tokens["olivia"]))
        assert response.status_code == 200
        return [entry["path"] for entry in response.json()["agents"]]

    assert paths() == ["/int", "/priv", "/pub", "/pub-off"]
    assert paths(enabled_only="true") == ["/int", "/priv", "/pub"]
    assert paths(visibility="public") == ["/pub", "/pub-off"]
    assert paths(visibility="internal", enabled_only="false") == ["/int"]


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        ({"visibility": "everyone"}, {"visibility": ['"everyone" is not a valid choice.']}),
        ({"enabled_only": "sometimes"}, {"enabled_only": ["Must be a valid boolean."]}),
    ],
)
def test_unknown_filter_values_are_400(client, tokens, params, errors):
    response = client.get(url("list"), params, headers=bearer(tokens["olivia"]))

    assert response.status_code == 400
    assert response.json() == invalid_body(response, errors)


def test_the_list_is_bounded_but_counts_every_match(client, tokens, olivia):
    Agent.objects.bulk_create(
        Agent(path=f"/bulk{n:04d}", name=f"Bulk {n}", description="d", url="http://127.0.0.1/", version="1")
        for n in range(LIST_LIMIT + 5)
    )

    body = client.get(url("list"), headers=bearer(tokens["olivia"])).json()

    assert len(body["agents"]) == LIST_LIMIT == 500
    assert body["agents"][-1]["path"] == "/bulk0499"
    assert body["total_count"] == LIST_LIMIT + 5


def test_the_list_takes_the_same_number_of_queries_for_one_or_many_agents(client, tokens, olivia):
    def queries():
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url("list"), headers=bearer(tokens["olivia"])).status_code == 200
        return len(captured)

    AgentFactory(owner=olivia)
    queries()  # the token is verified once, then served from the principal cache
    one = queries()
    for _ in range(20):
        AgentFactory()  # each with an owner of its own

    assert queries() == one


# -- read --------------------------------------------------------------------------------------------


def test_get_returns_the_full_card(client, tokens, olivia):
    post(client, "register", CARD, tokens["olivia"])
    agent = Agent.objects.get()

    response = client.get(url("detail", "summarizer"), headers=bearer(tokens["olivia"]))

    assert response.status_code == 200
    assert response.json() == {
        "name": "Summarizer",
        "description": "Summarizes long documents",
        "path": "/summarizer",
        "url": "https://agents.example.test/summarizer",
        "gateway_url": "http://testserver/summarizer/a2a",
        "version": "1.2.0",
        "provider": "anthropic",
        "provider_organization": "",
        "provider_url": "",
        "protocol_version": "",
        "preferred_transport": "",
        "interfaces": [],
        "capabilities": {},
        "default_input_modes": [],
        "default_output_modes": [],
        "documentation_url": "",
        "icon_url": "",
        "security_schemes": {"token": {"type": "bearer", "description": "A registry token"}},
        "security_requirements": [],
        "skills": CARD["skills"],
        "num_skills": 1,
        "tags": "nlp, summaries",
        "visibility": "private",
        "license": "MIT",
        "is_enabled": False,
        "owner": "olivia",
        "registered_at": agent.registered_at.isoformat().replace("+00:00", "Z"),
        "updated_at": agent.updated_at.isoformat().replace("+00:00", "Z"),
        "signed": False,
        "health_status": "disabled",
        "health_detail": "",
        "last_checked_at": None,
    }


def test_a_hidden_agent_is_404_exactly_like_a_missing_one(client, tokens, agents):
    hidden = client.get(url("detail", "priv"), headers=bearer(tokens["sam"]))
    missing = client.get(url("detail", "nothing-here"), headers=bearer(tokens["sam"]))

    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == error_body(hidden, "No agent is registered at /priv.", "not_found")
    assert missing.json() == error_body(missing, "No agent is registered at /nothing-here.", "not_found")


def test_an_unknown_format_is_400(client, tokens, agents):
    response = client.get(url("detail", "pub"), {"format": "yaml"}, headers=bearer(tokens["olivia"]))

    assert response.status_code == 400
    assert response.json() == invalid_body(response, {"format": ['"yaml" is not a valid choice.']})


def test_nested_paths_are_read_through_the_path_converter(client, tokens, olivia):
    AgentFactory(path="/team/summarizer", owner=olivia)

    response = client.get("/api/agents/team/summarizer", headers=bearer(tokens["olivia"]))

    assert response.status_code == 200
    assert response.json()["path"] == "/team/summarizer"


# -- visibility matrix ---------------------------------------------------------------------------------

VISIBLE = {
    "anonymous": {"/pub"},
    "olivia": {"/pub", "/pub-off", "/priv", "/int"},
    "gina": {"/pub", "/pub-off", "/int"},
    "sam": {"/pub", "/pub-off"},
    "ada": {"/pub", "/pub-off", "/priv", "/int"},
}


@pytest.mark.parametrize("caller", list(VISIBLE))
def test_private_and_internal_agents_never_leak(client, tokens, agents, caller):
    token = tokens.get(caller)
    expected = VISIBLE[caller]

    listed = client.get(url("list"), headers=bearer(token)).json()
    found = client.get(url("list"), {"query": "A test A2A agent"}, headers=bearer(token)).json()
    discovered = post(client, "discover", {"skills": ["summarize"]}, token, query="?max_results=100").json()
    reads = {path: client.get(url("detail", path[1:]), headers=bearer(token)).status_code for path in agents}

    assert {entry["path"] for entry in listed["agents"]} == expected
    assert listed["total_count"] == len(expected)
    assert {entry["path"] for entry in found["agents"]} == expected
    assert {entry["path"] for entry in discovered["agents"]} == expected - {"/pub-off"}
    if caller == "anonymous":
        assert set(reads.values()) == {401}
    else:
        assert reads == {path: 200 if path in expected else 404 for path in agents}


def test_members_of_an_agents_own_groups_see_it_when_internal(client, member, token_for, olivia, agents):
    from django.contrib.auth.models import Group

    agents["/int"].groups.add(Group.objects.get_or_create(name="reviewers")[0])
    reviewer = token_for(member("rita", "reviewers"))

    assert client.get(url("detail", "int"), headers=bearer(reviewer)).status_code == 200
    assert client.get(url("detail", "priv"), headers=bearer(reviewer)).status_code == 404


# -- replace (PUT) -----------------------------------------------------------------------------------


@pytest.fixture
def registered(client, tokens):
    assert post(client, "register", CARD, tokens["olivia"]).status_code == 201
    return Agent.objects.get(path="/summarizer")


def test_the_owner_replaces_the_card_and_gets_it_back(client, tokens, registered, embed_queue):
    new_card = CARD | {"description": "Summarizes and translates", "tags": "nlp", "path": "/summarizer"}
    del new_card["skills"], new_card["visibility"], new_card["security_schemes"]

    with embed_queue.capture():
        response = put(client, "summarizer", new_card, tokens["olivia"])

    assert response.status_code == 200
    body = response.json()
    assert (body["description"], body["tags"], body["skills"], body["num_skills"]) == (
        "Summarizes and translates",
        "nlp",
        [],
        0,
    )
    assert body["security_schemes"] == {}
    assert body["visibility"] == "private"  # omitted: kept, never widened
    assert agent_audit().last().detail == {"fields": ["description", "security_schemes", "skills", "tags"]}
    assert embed_queue.ids() == [[registered.pk]]


def test_a_card_read_with_get_can_be_put_back_unchanged(client, tokens, registered, embed_queue):
    card = client.get(url("detail", "summarizer"), headers=bearer(tokens["olivia"])).json()
    before = snapshot()

    with embed_queue.capture():
        response = put(client, "summarizer", card, tokens["olivia"])

    assert response.status_code == 200
    assert response.json() == card
    assert snapshot() == before
    assert embed_queue.ids() == []


def test_changing_only_non_text_fields_does_not_queue_an_embedding(client, tokens, registered, embed_queue):
    with embed_queue.capture():
        response = put(client, "summarizer", CARD | {"license": "Apache-2.0", "path": None}, tokens["olivia"])

    assert response.status_code == 200
    assert agent_audit().last().detail == {"fields": ["license"]}
    assert embed_queue.ids() == []


def test_modify_agent_is_honoured_like_modify_service(client, member, scope_factory, token_for):
    scope_factory("agent-editors", group="agent-editors", ui={"modify_agent": ["/mine"]})
    editor = member("eddie", "agent-editors")
    AgentFactory(path="/mine", owner=editor)

    response = put(client, "mine", CARD | {"path": "/mine"}, token_for(editor))

    assert response.status_code == 200
    assert Agent.objects.get(path="/mine").name == "Summarizer"


@pytest.mark.parametrize(
    ("caller", "reason"),
    [
        ("sam", "a stranger: sees the public agent, may not modify it"),
        ("gina", "a group member: sees it, has no modify permission"),
    ],
)
def test_put_without_modify_permission_and_ownership_is_403_and_changes_nothing(
    client, tokens, agents, caller, reason, embed_queue
):
    before = snapshot()

    with embed_queue.capture():
        response = put(client, "pub", CARD | {"path": "/pub"}, tokens[caller])

    assert response.status_code == 403, reason
    assert response.json() == error_body(
        response, "You may not modify /pub: it needs modify_agent and ownership.", "permission_denied"
    )
    assert snapshot() == before
    assert embed_queue.ids() == []


def test_modify_service_without_ownership_is_403(client, member, scope_factory, token_for, agents):
    scope_factory("editors", group="editors", ui={"modify_service": ["all"]})
    before = snapshot()

    response = put(client, "pub", CARD | {"path": "/pub"}, token_for(member("ed", "editors")))

    assert response.status_code == 403
    assert snapshot() == before


def test_an_admin_may_replace_any_card(client, tokens, agents):
    response = put(client, "priv", CARD | {"path": None}, tokens["ada"])

    assert response.status_code == 200
    assert Agent.objects.get(path="/priv").name == "Summarizer"


def test_put_on_a_hidden_agent_is_404(client, tokens, agents):
    before = snapshot()

    response = put(client, "priv", CARD | {"path": "/priv"}, tokens["sam"])

    assert response.status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize(
    ("change", "errors"),
    [
        ({"path": "/elsewhere"}, {"path": ["Must be /summarizer or omitted: a path cannot change."]}),
        ({"url": "nope"}, {"url": ["Enter an absolute http:// or https:// URL."]}),
        ({"version": None}, {"version": REQUIRED}),
        (
            {"tags": ["a"], "visibility": "world"},
            {
                "tags": ['Must be a comma-separated string, e.g. "nlp, summaries".'],
                "visibility": ['"world" is not a valid choice.'],
            },
        ),
    ],
)
def test_an_invalid_replacement_is_422_and_changes_nothing(client, tokens, registered, change, errors):
    before = snapshot()
    card = {key: value for key, value in (CARD | change).items() if value is not None}

    response = put(client, "summarizer", card, tokens["olivia"])

    assert response.status_code == 422
    assert response.json() == invalid_body(response, errors)
    assert snapshot() == before


# -- delete ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("caller", ["olivia", "ada"])
def test_the_owner_or_an_admin_deletes(client, tokens, agents, caller):
    response = client.delete(url("detail", "priv"), headers=bearer(tokens[caller]))

    assert response.status_code == 204
    assert response.content == b""
    assert not Agent.objects.filter(path="/priv").exists()
    assert agent_audit().get().action == "agent.delete"


def test_delete_agent_lets_a_non_owner_delete(client, member, scope_factory, token_for, agents):
    scope_factory("cleaners", group="cleaners", ui={"delete_agent": ["/pub"]})

    response = client.delete(url("detail", "pub"), headers=bearer(token_for(member("carl", "cleaners"))))

    assert response.status_code == 204
    assert not Agent.objects.filter(path="/pub").exists()


def test_delete_by_a_stranger_is_403_and_of_a_hidden_agent_404(client, tokens, agents):
    before = snapshot()

    visible = client.delete(url("detail", "pub"), headers=bearer(tokens["sam"]))
    hidden = client.delete(url("detail", "priv"), headers=bearer(tokens["sam"]))

    assert visible.status_code == 403
    assert visible.json() == error_body(
        visible, "You may not delete /pub: only its owner or an administrator may.", "permission_denied"
    )
    assert hidden.status_code == 404
    assert snapshot() == before


# -- toggle ------------------------------------------------------------------------------------------


@pytest.fixture
def operator(member, scope_factory, token_for):
    scope_factory("operators", group="operators", ui={"toggle_agent": ["/pub-off", "/pub"]})
    return token_for(member("otto", "operators"))


def test_toggle_agent_enables_and_disables(client, operator, agents):
    enabled = post(client, "toggle", None, operator, "pub-off", "?enabled=true")
    disabled = post(client, "toggle", None, operator, "pub-off", "?enabled=false")

    assert enabled.status_code == disabled.status_code == 200
    assert enabled.json() == {"path": "/pub-off", "is_enabled": True, "message": "Agent enabled."}
    assert disabled.json() == {"path": "/pub-off", "is_enabled": False, "message": "Agent disabled."}
    assert list(agent_audit().values_list("action", flat=True)) == [
        "agent.enable",
        "agent.disable",
    ]


def test_toggle_without_toggle_agent_is_403_even_for_the_owner(client, tokens, agents):
    before = snapshot()

    response = post(client, "toggle", None, tokens["olivia"], "pub-off", "?enabled=true")

    assert response.status_code == 403
    assert response.json() == error_body(
        response, "You may not enable or disable /pub-off: it needs toggle_agent.", "permission_denied"
    )
    assert snapshot() == before


def test_toggle_of_a_hidden_agent_is_404(client, operator, agents):
    before = snapshot()

    response = post(client, "toggle", None, operator, "priv", "?enabled=false")

    assert response.status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize(
    ("query", "errors"),
    [
        ("", {"enabled": ["This field is required."]}),
        ("?enabled=maybe", {"enabled": ["Must be a valid boolean."]}),
    ],
)
def test_toggle_needs_a_boolean_enabled(client, operator, agents, query, errors):
    before = snapshot()

    response = post(client, "toggle", None, operator, "pub-off", query)

    assert response.status_code == 400
    assert response.json() == invalid_body(response, errors)
    assert snapshot() == before


def test_an_admin_toggles_any_agent(client, tokens, agents):
    response = post(client, "toggle", None, tokens["ada"], "priv", "?enabled=false")

    assert response.json() == {"path": "/priv", "is_enabled": False, "message": "Agent disabled."}


def test_a_server_grant_on_a_path_never_reaches_the_agent_at_that_path(
    client, member, scope_factory, token_for
):
    from servers.models import Server
    from tests.factories import ServerFactory

    scope_factory(
        "alpha-server",
        group="alpha-ops",
        ui={"toggle_service": ["/alpha"], "list_service": ["/alpha"], "list_agents": ["all"]},
    )
    owner = member("ops-owner", "alpha-ops")
    ServerFactory(path="/alpha", is_enabled=False)
    AgentFactory(path="/alpha", owner=owner, visibility="public", is_enabled=False)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(owner)}"}

    agent = client.post("/api/agents/alpha/toggle?enabled=true", **headers)
    client.force_login(owner)
    server = client.post("/api/toggle/alpha", {"enabled": "true"})

    assert agent.status_code == 403
    assert Agent.objects.get(path="/alpha").is_enabled is False
    assert server.status_code == 200
    assert Server.objects.get(path="/alpha").is_enabled is True


def test_a_registry_for_discovery_only_gives_no_gateway_url(client, tokens, settings):
    settings.A2A_GATEWAY_URLS = False
    post(client, "register", CARD, tokens["olivia"])

    detail = client.get(url("detail", "summarizer"), headers=bearer(tokens["olivia"])).json()

    assert (detail["url"], detail["gateway_url"]) == ("https://agents.example.test/summarizer", None)
