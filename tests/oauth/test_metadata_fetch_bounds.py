"""An anonymous caller cannot hold the registry with a client metadata document served at a drip: each
fetch ends at its total deadline, fetches beyond the process's cap are refused at once, and the listing
is answered meanwhile."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from oauth2_provider.models import Application

from tests.drip import DripServer
from tests.gateway.gateway_calls import gateway_fixture  # noqa: F401
from tests.oauth.flow import REDIRECT_URI, loopback_certificate

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def drip(tmp_path, settings, monkeypatch):
    settings.OAUTH_CIMD_ALLOW_LOOPBACK = True
    settings.PUBLIC_LISTING = True
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 1}
    cert, key = loopback_certificate(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    server = DripServer(interval=0.5, for_seconds=40, certificate=(cert, key))
    yield server
    server.stop()


def _token_call(base: str, client_id: str) -> tuple[int, float]:
    started = time.monotonic()
    answer = requests.post(
        f"{base}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": "x",
            "redirect_uri": REDIRECT_URI,
            "client_id": client_id,
            "code_verifier": "v" * 43,
        },
        timeout=60,
    )
    return answer.status_code, time.monotonic() - started


def test_documents_at_a_drip_neither_hold_callers_nor_the_listing(gateway, drip, settings):
    base = gateway.url("")
    listing_times = []
    with ThreadPoolExecutor(8) as pool:
        calls = [pool.submit(_token_call, base, drip.url(f"/client-{i}.json")) for i in range(8)]
        while not all(call.done() for call in calls):
            started = time.monotonic()
            listed = requests.get(f"{base}/v0.1/servers", timeout=60)
            listing_times.append(time.monotonic() - started)
            assert listed.status_code == 200
        answers = [call.result() for call in calls]

    assert sorted({status for status, _ in answers}) == [401]  # invalid_client: no document was read
    assert max(seconds for _, seconds in answers) < 4.0  # the deadline is 1 s, whatever the drip
    assert listing_times and max(listing_times) < 3.0
    assert drip.connections <= 8
    assert Application.objects.count() == 0
