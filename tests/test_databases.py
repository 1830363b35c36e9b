"""The suite's test databases: how a transactional test's rows are emptied afterwards (tests/databases.py)."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection

from tests import databases
from tests.factories import AgentFactory, ServerFactory, ToolFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _rows_by_table() -> dict[str, int]:
    tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
    with connection.cursor() as cursor:
        counts = {}
        for table in sorted(tables):
            cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return {table: count for table, count in counts.items() if count}


def test_every_table_is_emptied_but_the_content_types_and_permissions_migrating_wrote():
    kept = (ContentType.objects.count(), Permission.objects.count())
    server = ServerFactory(path="/weather")
    ToolFactory(server=server, name="get_forecast")
    user = UserFactory(username="ana")
    user.groups.add(Group.objects.create(name="analysts"))  # rows that refer to rows of other tables
    AgentFactory(path="/planner")

    assert databases.emptied("default") is True

    assert _rows_by_table() == {"auth_permission": kept[1], "django_content_type": kept[0]}


def test_a_test_that_changed_the_permissions_is_left_to_flush_with_nothing_deleted():
    ServerFactory(path="/weather")
    Permission.objects.create(
        codename="fly", name="Can fly", content_type=ContentType.objects.get_for_model(Group)
    )

    assert databases.emptied("default") is False

    assert ("servers_server", 1) in _rows_by_table().items()
