"""Unknown URLs and crashes answer in the error format of the API they fall under, never a trace."""

import pytest

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


def test_a_crash_is_a_json_500_without_a_trace(client, settings):
    from django.urls import path

    from registry_site import urls

    def boom(request):
        raise RuntimeError("secret internals")

    settings.ROOT_URLCONF = type(
        "CrashingUrls",
        (),
        {"urlpatterns": [path("api/boom", boom), *urls.urlpatterns], "handler500": urls.handler500},
    )
    client.raise_request_exception = False

    response = client.get("/api/boom")

    assert response.status_code == 500
    assert response.json()["error_code"] == "server_error"
    assert "secret internals" not in response.content.decode()
    assert "Traceback" not in response.content.decode()
