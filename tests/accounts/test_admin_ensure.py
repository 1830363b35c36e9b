import stat

import pytest

from accounts.models import AuditEvent, User
from accounts.services import admin_ensure

pytestmark = pytest.mark.django_db


def test_without_a_password_a_new_admin_gets_a_generated_one_written_once(tmp_path):
    password_file = tmp_path / "admin_password"

    first = admin_ensure(username="admin", password="", password_file=password_file)
    second = admin_ensure(username="admin", password="", password_file=password_file)

    username, password = password_file.read_text().split()
    user = User.objects.get(username="admin")
    assert (first.created, first.password_file) == (True, password_file)
    assert (second.created, second.password_file) == (False, None)
    assert username == "admin"
    assert len(password) >= 20
    assert user.check_password(password)
    assert (user.is_superuser, user.is_staff, user.is_active) == (True, True, True)
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    assert list(AuditEvent.objects.values_list("action", "target")) == [("user.create", "user:admin")]


def test_a_password_from_the_environment_is_applied_and_nothing_is_written(tmp_path):
    password_file = tmp_path / "admin_password"

    admin_ensure(username="root", password="first-Password-1", password_file=password_file)
    result = admin_ensure(username="root", password="second-Password-2", password_file=password_file)

    user = User.objects.get(username="root")
    assert result.created is False
    assert user.check_password("second-Password-2")
    assert not user.check_password("first-Password-1")
    assert not password_file.exists()


def test_there_is_no_default_password(tmp_path):
    admin_ensure(username="admin", password="", password_file=tmp_path / "pw")

    user = User.objects.get(username="admin")
    assert not user.check_password("password")
    assert not user.check_password("admin")
    assert not user.check_password("")
