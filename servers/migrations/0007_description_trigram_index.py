"""`/v0.1/servers?search=` matches descriptions as well as names (as the official registry's does): the
description's trigrams in a GIN index beside the name's (servers/search_index.py uses both)."""

from django.db import migrations

INDEX = """
CREATE INDEX servers_server_description_trigrams ON servers_server
    USING gin (servers_trigrams(description)) WITH (fastupdate = off);
"""

DROP = "DROP INDEX IF EXISTS servers_server_description_trigrams;"


class Migration(migrations.Migration):
    dependencies = [("servers", "0006_name_trigram_index")]

    operations = [migrations.RunSQL(INDEX, DROP)]
