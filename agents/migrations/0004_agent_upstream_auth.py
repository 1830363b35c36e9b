"""An agent's credential chosen as a server's is (servers/shared_headers.py): `upstream_auth` and the header
a user's secret goes in; its outbound headers become sealed shared headers (the mode `shared_headers` when it
had any), and the plaintext column goes. Back, the sealed values are opened into the column again."""

from django.db import migrations, models

from servers.shared_headers import opened_headers, sealed_headers_of

KIND = "agent"


def seal(apps, schema_editor):
    Agent = apps.get_model("agents", "Agent")
    for agent in Agent.objects.exclude(headers={}).only("pk", "url", "headers"):
        sealed = sealed_headers_of(KIND, agent.url, agent.headers or {})
        Agent.objects.filter(pk=agent.pk).update(
            sealed_headers=sealed, headers={}, upstream_auth="shared_headers"
        )


def open_again(apps, schema_editor):
    Agent = apps.get_model("agents", "Agent")
    for agent in Agent.objects.exclude(sealed_headers="").only("pk", "url", "sealed_headers"):
        Agent.objects.filter(pk=agent.pk).update(
            headers=opened_headers(KIND, agent.url, agent.sealed_headers), sealed_headers=""
        )


class Migration(migrations.Migration):
    dependencies = [("agents", "0003_agent_health_and_credentials")]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="upstream_auth",
            field=models.CharField(
                choices=[
                    ("none", "None"),
                    ("shared_headers", "Shared headers (one credential for every caller)"),
                    ("user_secret", "Each user's own secret (API key or personal access token)"),
                    ("user_oauth", "Each user's own sign-in at the target (OAuth)"),
                ],
                default="none",
                max_length=32,
            ),
        ),
        migrations.AddField(
            model_name="agent",
            name="user_secret_header",
            field=models.CharField(
                blank=True, help_text='for each user\'s secret, e.g. "Authorization: Bearer {secret}"', max_length=300
            ),
        ),
        migrations.AddField(
            model_name="agent",
            name="sealed_headers",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.RunPython(seal, open_again),
        migrations.RemoveField(model_name="agent", name="headers"),
    ]
