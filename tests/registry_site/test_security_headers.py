"""Every page and API answer carries the Content-Security-Policy and the usual hardening headers."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url", ["/login", "/status", "/admin/login/", "/health", "/api/auth/providers", "/nowhere"]
)
def test_every_answer_carries_the_security_headers(client, settings, url):
    response = client.get(url)

    assert response["Content-Security-Policy"] == settings.CONTENT_SECURITY_POLICY
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Permissions-Policy"] == "camera=(), microphone=(), geolocation=(), payment=()"


def test_pages_have_no_inline_scripts_or_styles(client, admin_user):
    client.force_login(admin_user)

    for url in ("/", "/login", "/status", "/api/tokens"):
        page = client.get(url).content.decode()
        assert "<script>" not in page and "<style" not in page and ' style="' not in page, url
        assert " onclick=" not in page and " onsubmit=" not in page, url
