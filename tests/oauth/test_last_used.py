"""When tokens and authorized applications were last used: noted on each bearer check (from the principal
cache too), written by each process every LAST_USED_FLUSH_SECONDS, shown on the tokens page."""

import re

import pytest
import requests
from django.utils import timezone

from accounts.last_used import USES
from accounts.models import IssuedToken
from oauth.models import Consent

pytestmark = pytest.mark.django_db(transaction=True)


def last_used_cells(page: str, attribute: str) -> dict[str, str]:
    rows = re.findall(rf'<tr {attribute}="([^"]+)">(.*?)</tr>', page, re.S)
    return {
        key: re.search(r"<td data-label=\"Last used\" data-last-used>(.*?)</td>", row).group(1)
        for key, row in rows
    }


def test_a_token_used_twice_shows_when_and_an_unused_one_shows_never(client, member, token_for):
    user = member("tess")
    used = token_for(user)
    token_for(user)  # never presented
    before = timezone.now()

    for _ in range(2):  # the second check is answered from the principal cache, and noted all the same
        assert client.get("/api/servers", headers={"Authorization": f"Bearer {used}"}).status_code == 200
    USES.flush()
    client.force_login(user)
    page = client.get("/api/tokens").content.decode()

    rows = {token.jti: token.last_used_at for token in IssuedToken.objects.filter(user=user)}
    used_at = [when for when in rows.values() if when is not None]
    assert len(rows) == 2 and len(used_at) == 1
    assert before <= used_at[0] <= timezone.now()
    cells = last_used_cells(page, "data-token")
    assert sorted(cell.startswith("<time ") for cell in cells.values()) == [False, True]
    assert "never" in cells.values()


def test_an_applications_token_marks_its_consent_used(host):
    tokens = host.tokens(host.base, scope="registry")
    consent = Consent.objects.get(user__username="olga")
    assert consent.last_used_at is None

    listed = requests.get(
        f"{host.base}/v0.1/servers", headers={"Authorization": f"Bearer {tokens['access_token']}"}, timeout=10
    )
    USES.flush()
    page = host.browser.get(f"{host.base}/api/tokens").text

    consent.refresh_from_db()
    assert listed.status_code == 200
    assert consent.last_used_at is not None
    assert last_used_cells(page, "data-application")[consent.application.client_id].startswith("<time ")


def test_many_uses_are_written_in_one_statement_and_a_flush_with_nothing_noted_writes_nothing(
    client, member, token_for, django_assert_num_queries
):
    user = member("tess")
    tokens = [token_for(user) for _ in range(5)]
    for token in tokens:
        client.get("/api/servers", headers={"Authorization": f"Bearer {token}"})

    with django_assert_num_queries(1):  # one UPDATE of them all
        USES.flush()
    with django_assert_num_queries(0):
        USES.flush()
    assert IssuedToken.objects.filter(user=user, last_used_at__isnull=False).count() == 5
