"""Unknown URLs and crashes answer in the error format of the API they fall under, never a trace; pages
answer with the console's styled error pages."""

import re

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import path

from registry_site import urls

pytestmark = pytest.mark.django_db


def test_an_unknown_api_url_is_a_json_404(client):
    response = client.get("/api/no-such-thing")

    assert response.status_code == 404
    body = response.json()
    assert (body["detail"], body["error_code"]) == ("Not found.", "not_found")
    assert body["request_id"] == response["X-Request-ID"]


def test_an_unknown_v01_url_is_a_v01_404(client):
    response = client.get("/v0.1/nothing-here")

    assert response.status_code == 404
    assert response.json() == {"error": {"code": "NOT_FOUND", "message": "Not found"}}


def boom(request):
    raise RuntimeError("secret internals")


def forbidden(request):
    raise PermissionDenied("secret reason")


@pytest.fixture
def failing_urls(settings):
    """The project's URLs plus a page and an API URL that crash, and a page that refuses."""
    settings.ROOT_URLCONF = type(
        "FailingUrls",
        (),
        {
            "urlpatterns": [path("api/boom", boom), path("boom", boom), path("forbidden", forbidden)]
            + urls.urlpatterns,
            "handler500": urls.handler500,
            "handler403": urls.handler403,
            "handler404": urls.handler404,
        },
    )


def page_error(response) -> tuple[str, str]:
    """(status shown, heading) of a styled error page."""
    text = response.content.decode()
    return re.search(r'data-error-status="(\d+)"', text).group(1), re.search(r"<h1>(.*?)</h1>", text).group(1)


def test_a_crash_is_a_json_500_without_a_trace(client, failing_urls):
    client.raise_request_exception = False

    response = client.get("/api/boom")

    assert response.status_code == 500
    assert response.json()["error_code"] == "server_error"
    assert "secret internals" not in response.content.decode()
    assert "Traceback" not in response.content.decode()


@pytest.mark.parametrize(
    ("url", "status", "heading"),
    [
        ("/no-such-page", 404, "Page not found"),
        ("/forbidden", 403, "Not allowed"),
        ("/boom", 500, "Something went wrong"),
    ],
)
def test_pages_fail_with_the_styled_error_pages(client, failing_urls, url, status, heading):
    client.raise_request_exception = False

    response = client.get(url)

    assert response.status_code == status
    assert page_error(response) == (str(status), heading)
    assert '<a class="button" href="/">Back to servers</a>' in response.content.decode()
    assert "secret" not in response.content.decode()


def test_a_form_without_its_csrf_token_gets_the_styled_403(member):
    client = Client(enforce_csrf_checks=True)
    client.force_login(member("olga"))

    response = client.post("/logout")

    assert response.status_code == 403
    assert page_error(response) == ("403", "Not allowed")


def test_favicon_ico_leads_to_the_consoles_icon(client):
    response = client.get("/favicon.ico")

    assert (response.status_code, response["Location"]) == (301, "/static/favicon.svg")


@pytest.mark.django_db
def test_a_format_no_renderer_offers_is_a_404_in_the_one_error_format(client, member):
    client.force_login(member("ada", "nobody"))

    answer = client.get("/api/skills?format=yaml")

    assert answer.status_code == 404
    assert (answer.json()["error_code"], answer.json()["detail"]) == ("not_found", "Not found.")
