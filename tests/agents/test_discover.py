"""POST /api/agents/discover: agents offering the requested skills, scored and ordered exactly, filtered
by visibility before the `max_results` cut."""

import pytest
from django.urls import reverse

from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db

URL = reverse("agents-api:discover")


def skill(name, *, skill_id=None, tags=None):
    entry = {"name": name, "description": f"Does {name}"}
    if skill_id is not None:
        entry["id"] = skill_id
    if tags is not None:
        entry["tags"] = tags
    return entry


def discover(client, body, *, token=None, query=""):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(URL + query, body, content_type="application/json", headers=headers)


def ranked(response):
    assert response.status_code == 200, response.json()
    return [(entry["path"], entry["relevance_score"]) for entry in response.json()["agents"]]


@pytest.fixture
def catalogue(db):
    """Enabled public agents with overlapping skills and tags, and two that must never match."""
    AgentFactory(
        path="/alpha",
        name="Alpha",
        skills=[skill("summarize", tags=["nlp"]), skill("translate")],
        tags=["docs"],
        is_enabled=True,
    )
    AgentFactory(path="/beta", name="Beta", skills=[skill("Summarize")], tags=["nlp"], is_enabled=True)
    AgentFactory(
        path="/gamma", name="Gamma", skills=[skill("Translation", skill_id="xlate")], is_enabled=True
    )
    AgentFactory(path="/zeta", name="Zeta", skills=[skill("translate")], tags=["NLP"], is_enabled=True)
    AgentFactory(path="/delta", skills=[skill("classify")], tags=["nlp", "docs"], is_enabled=True)
    AgentFactory(path="/epsilon", skills=[skill("summarize")], is_enabled=False)


def test_scores_weigh_skills_and_tags_and_order_best_first_then_by_path(client, catalogue):
    response = discover(client, {"skills": ["summarize", "translate", "xlate"], "tags": ["nlp", "docs"]})

    assert response.json() == {
        "agents": [
            # 0.8 × 2/3 + 0.2 × 2/2 (docs is the agent's tag, nlp its summarize skill's)
            {
                "path": "/alpha",
                "name": "Alpha",
                "relevance_score": 0.7333,
                "matching_skills": ["summarize", "translate"],
            },
            # 0.8 × 1/3 + 0.2 × 1/2 twice: a tie, broken by path
            {"path": "/beta", "name": "Beta", "relevance_score": 0.3667, "matching_skills": ["Summarize"]},
            {"path": "/zeta", "name": "Zeta", "relevance_score": 0.3667, "matching_skills": ["translate"]},
            # 0.8 × 1/3, matched by the skill's id
            {
                "path": "/gamma",
                "name": "Gamma",
                "relevance_score": 0.2667,
                "matching_skills": ["Translation"],
            },
        ]
    }


def test_without_tags_the_score_is_the_share_of_skills_matched(client, catalogue):
    response = discover(client, {"skills": ["SUMMARIZE", "translate"]})

    assert ranked(response) == [("/alpha", 1.0), ("/beta", 0.5), ("/zeta", 0.5)]


def test_tags_alone_never_make_a_match(client, catalogue):
    response = discover(client, {"skills": ["nothing-offers-this"], "tags": ["nlp", "docs"]})

    assert ranked(response) == []


def test_a_skill_matching_by_name_and_id_counts_once(client):
    AgentFactory(
        path="/both", name="Both", skills=[skill("Summarize", skill_id="summarize")], is_enabled=True
    )

    response = discover(client, {"skills": ["summarize", "translate"]})

    assert response.json()["agents"] == [
        {"path": "/both", "name": "Both", "relevance_score": 0.5, "matching_skills": ["Summarize"]}
    ]


def test_the_default_is_ten_results_and_max_results_raises_it_to_at_most_100(client):
    for n in range(12):
        AgentFactory(path=f"/a{n:02d}", skills=[skill("summarize")], is_enabled=True)

    default = discover(client, {"skills": ["summarize"]})
    three = discover(client, {"skills": ["summarize"]}, query="?max_results=3")
    hundred = discover(client, {"skills": ["summarize"]}, query="?max_results=100")

    assert [path for path, _ in ranked(default)] == [f"/a{n:02d}" for n in range(10)]
    assert [path for path, _ in ranked(three)] == ["/a00", "/a01", "/a02"]
    assert len(ranked(hundred)) == 12


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "Ensure this value is greater than or equal to 1."),
        ("101", "Ensure this value is less than or equal to 100."),
        ("-5", "Ensure this value is greater than or equal to 1."),
        ("ten", "A valid integer is required."),
    ],
)
def test_max_results_out_of_bounds_is_400(client, value, message):
    response = discover(client, {"skills": ["summarize"]}, query=f"?max_results={value}")

    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "error_code": "validation_error",
        "request_id": response["X-Request-ID"],
        "errors": {"max_results": [message]},
    }


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({}, {"skills": ["This field is required."]}),
        ({"tags": ["nlp"]}, {"skills": ["This field is required."]}),
        ({"skills": []}, {"skills": ["This list may not be empty."]}),
        ({"skills": "summarize"}, {"skills": ['Expected a list of items but got type "str".']}),
        ({"skills": [7, "summarize"]}, {"skills": {"0": ["Not a valid string."]}}),
        (
            {"skills": ["summarize"], "tags": "nlp"},
            {"tags": ['Expected a list of items but got type "str".']},
        ),
        (["summarize"], {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}),
    ],
)
def test_a_missing_empty_or_malformed_skills_list_is_400(client, body, errors):
    response = discover(client, body)

    assert response.status_code == 400
    assert response.json() == {
        "detail": "Invalid input.",
        "error_code": "validation_error",
        "request_id": response["X-Request-ID"],
        "errors": errors,
    }


def test_visibility_is_filtered_before_the_limit(client, member, token_for):
    """The 10 best matches are private agents of someone else: a stranger asking for 10 still gets every
    one of the 5 visible matches, and an admin asking for 10 gets the 10 best."""
    owner = member("olivia")
    for n in range(10):
        AgentFactory(
            path=f"/hidden{n:02d}",
            skills=[skill("summarize"), skill("translate")],
            visibility="private",
            owner=owner,
            is_enabled=True,
        )
    for n in range(5):
        AgentFactory(path=f"/visible{n}", skills=[skill("summarize")], is_enabled=True)
    stranger = token_for(member("sam"))
    admin = token_for(member("ada", "mcp-registry-admin"))
    body = {"skills": ["summarize", "translate"]}

    as_stranger = discover(client, body, token=stranger, query="?max_results=10")
    as_admin = discover(client, body, token=admin, query="?max_results=10")
    as_owner = discover(client, body, token=token_for(owner), query="?max_results=12")

    assert ranked(as_stranger) == [(f"/visible{n}", 0.5) for n in range(5)]
    assert ranked(as_admin) == [(f"/hidden{n:02d}", 1.0) for n in range(10)]
    assert ranked(as_owner) == [(f"/hidden{n:02d}", 1.0) for n in range(10)] + [
        ("/visible0", 0.5),
        ("/visible1", 0.5),
    ]


def test_disabled_agents_are_never_discovered_even_by_their_owner(client, member, token_for):
    owner = member("olivia")
    AgentFactory(path="/off", skills=[skill("summarize")], owner=owner, is_enabled=False)

    response = discover(client, {"skills": ["summarize"]}, token=token_for(owner))

    assert ranked(response) == []


def test_agents_with_malformed_stored_skills_are_skipped_not_fatal(client):
    AgentFactory(path="/odd", skills=[{"name": "summarize"}, "not-a-skill", {"id": 7}], is_enabled=True)
    AgentFactory(path="/not-a-list", skills={"name": "summarize"}, is_enabled=True)

    response = discover(client, {"skills": ["summarize"]})

    assert ranked(response) == [("/odd", 1.0)]
