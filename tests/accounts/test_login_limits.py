"""Login failure limits hold on every door that checks a password (the registry's login and the Django
admin's) and under concurrency: tokens are taken before a password is evaluated."""

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client

from tests.factories import PASSWORD, UserFactory


@pytest.mark.django_db
def test_the_admin_login_obeys_the_failure_limit(client, settings):
    settings.LOGIN_FAILURES_PER_USER = 5
    UserFactory(username="boss", is_staff=True, is_superuser=True)

    wrong = [client.post("/admin/login/", {"username": "boss", "password": f"guess{i}"}) for i in range(5)]
    right = client.post("/admin/login/", {"username": "boss", "password": PASSWORD})

    assert [r.status_code for r in wrong] == [200] * 5  # the form again, with its error
    assert right.status_code == 200
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_a_correct_admin_login_within_the_limit_works_and_costs_the_address_nothing(client, settings):
    settings.LOGIN_FAILURES_PER_ADDRESS = 2
    UserFactory(username="boss", is_staff=True, is_superuser=True)

    for _ in range(3):
        response = client.post("/admin/login/", {"username": "boss", "password": PASSWORD})
        assert response.status_code == 302
        client.logout()


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_logins_are_evaluated_at_most_the_limit(settings):
    settings.LOGIN_FAILURES_PER_USER = 5
    settings.LOGIN_FAILURES_PER_ADDRESS = 1000
    UserFactory(username="ann")

    def attempt(i: int) -> int:
        try:
            return Client().post("/api/auth/login", {"username": "ann", "password": f"wrong{i}"}).status_code
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=20) as pool:
        statuses = list(pool.map(attempt, range(40)))

    assert statuses.count(401) == 5
    assert statuses.count(429) == 35
