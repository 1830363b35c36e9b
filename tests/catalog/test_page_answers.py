"""A /v0.1 page Django answered once is answered again ahead of Django (catalog/page_answers.py): the same
bytes and headers but its own request id, and never once the caller's rights or the servers changed."""

import pytest

from accounts.services.tokens import token_revoke
from catalog.api import v01
from tests.factories import ServerFactory, UserFactory

PAGE = "/v0.1/servers?limit=100"


@pytest.fixture
def caller(transactional_db, token_for):
    ServerFactory(path="/alpha")
    ServerFactory(path="/beta")
    user = UserFactory(username="reader", is_superuser=True)
    return user, token_for(user)


@pytest.fixture
def django_pages(monkeypatch):
    """How many times Django's view built a /v0.1 page."""
    built = []
    original = v01.registry_page

    def counted(*args, **kwargs):
        built.append(kwargs.get("limit"))
        return original(*args, **kwargs)

    monkeypatch.setattr(v01, "registry_page", counted)
    return built


def names(answer) -> list[str]:
    return [entry["server"]["name"] for entry in answer.json()["servers"]]


def test_the_second_request_is_answered_ahead_of_django_with_the_same_bytes(
    asgi_request, caller, django_pages
):
    _, token = caller
    auth = {"Authorization": f"Bearer {token}"}

    first = asgi_request("registry", "GET", PAGE, headers=auth)
    second = asgi_request("registry", "GET", PAGE, headers={**auth, "X-Request-ID": "trace-0001"})

    assert django_pages == [100]  # once
    assert second.status_code == first.status_code == 200
    assert second.content == first.content
    assert second.headers["X-Request-ID"] == "trace-0001"
    assert first.headers["X-Request-ID"] != "trace-0001"
    same = {name: value for name, value in first.headers.items() if name != "x-request-id"}
    assert {name: value for name, value in second.headers.items() if name != "x-request-id"} == same
    assert "Content-Security-Policy" in second.headers


def test_a_revoked_token_is_refused_at_once(asgi_request, caller, django_pages):
    user, token = caller
    auth = {"Authorization": f"Bearer {token}"}
    assert asgi_request("registry", "GET", PAGE, headers=auth).status_code == 200

    token_revoke(actor=user, token=user.issued_tokens.get())

    assert asgi_request("registry", "GET", PAGE, headers=auth).status_code == 401


def test_a_new_server_is_listed_at_once(asgi_request, caller, django_pages):
    _, token = caller
    auth = {"Authorization": f"Bearer {token}"}
    before = names(asgi_request("registry", "GET", PAGE, headers=auth))

    ServerFactory(path="/gamma")

    after = names(asgi_request("registry", "GET", PAGE, headers=auth))
    assert len(after) == len(before) + 1
    assert django_pages == [100, 100]


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "127.0.0.1"},  # another public URL: other URLs in the answer
        {"Accept": "text/html"},  # the browsable API
        {"Origin": "https://app.example"},  # CORS headers of another origin
    ],
)
def test_an_answer_is_kept_only_for_requests_django_would_answer_the_same(
    asgi_request, caller, django_pages, headers
):
    _, token = caller
    auth = {"Authorization": f"Bearer {token}"}
    asgi_request("registry", "GET", PAGE, headers=auth)

    asgi_request("registry", "GET", PAGE, headers={**auth, **headers})

    assert django_pages == [100, 100]


def test_requests_without_a_bearer_token_or_with_a_cookie_always_reach_django(
    asgi_request, caller, django_pages, settings
):
    _, token = caller
    settings.PUBLIC_LISTING = True
    for _ in range(2):
        asgi_request("registry", "GET", PAGE)
        asgi_request("registry", "GET", PAGE, headers={"Authorization": f"Bearer {token}", "Cookie": "a=b"})

    assert django_pages == [100, 100, 100, 100]
