"""A server's shared headers sealed at rest (servers/shared_headers.py): each row's plaintext `headers` is
sealed for the server's kind and origin into `sealed_headers`, then the plaintext column goes. Back, the
sealed values are opened into the column again."""


from django.db import migrations, models

from servers.shared_headers import opened_headers, sealed_headers_of

KIND = "server"


def seal(apps, schema_editor):
    Server = apps.get_model("servers", "Server")
    for server in Server.objects.exclude(headers={}).only("pk", "proxy_pass_url", "headers"):
        sealed = sealed_headers_of(KIND, server.proxy_pass_url, server.headers or {})
        Server.objects.filter(pk=server.pk).update(sealed_headers=sealed, headers={})


def open_again(apps, schema_editor):
    Server = apps.get_model("servers", "Server")
    for server in Server.objects.exclude(sealed_headers="").only("pk", "proxy_pass_url", "sealed_headers"):
        plain = opened_headers(KIND, server.proxy_pass_url, server.sealed_headers)
        Server.objects.filter(pk=server.pk).update(headers=plain, sealed_headers="")


class Migration(migrations.Migration):
    dependencies = [("servers", "0016_trigram_function_body_parsed")]

    operations = [
        migrations.AddField(
            model_name="server",
            name="sealed_headers",
            field=models.TextField(blank=True, default="", editable=False),
        ),
        migrations.RunPython(seal, open_again),
        migrations.RemoveField(model_name="server", name="headers"),
    ]
