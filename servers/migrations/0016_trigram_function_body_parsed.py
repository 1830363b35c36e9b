"""`servers_name_trigrams` called `servers_trigrams` from a body kept as text, resolved on each call through
the search path. pg_dump restores with an empty search path, so restoring a dump failed at the index built
on it (`function servers_trigrams(text) does not exist`). An SQL-standard body is parsed once, here, and
pg_dump writes the name it calls schema-qualified."""

from django.db import migrations

PARSED = """
CREATE OR REPLACE FUNCTION servers_name_trigrams(path text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN servers_trigrams(replace(substr(path, 2), '/', '.'));
"""

AS_TEXT = """
CREATE OR REPLACE FUNCTION servers_name_trigrams(path text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT servers_trigrams(replace(substr(path, 2), '/', '.'))
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("servers", "0015_prompt_pins")]

    operations = [migrations.RunSQL(PARSED, AS_TEXT)]
