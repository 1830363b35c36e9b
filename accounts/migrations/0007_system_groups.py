"""The groups the registry's roles rest on (accounts.choices.SYSTEM_GROUPS) exist from the first start,
so an operator can put users in them before any import or identity-provider login."""

from django.db import migrations

SYSTEM_GROUPS = ("mcp-registry-admin", "mcp-registry-user", "mcp-registry-developer", "mcp-registry-operator")


def create_system_groups(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for name in SYSTEM_GROUPS:
        Group.objects.get_or_create(name=name)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0006_issued_token_admin"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [migrations.RunPython(create_system_groups, migrations.RunPython.noop)]
