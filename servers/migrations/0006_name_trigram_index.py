"""An index for `/v0.1/servers?search=`: the name's trigrams in a GIN index, in core PostgreSQL (the
embedded server ships without pg_trgm). servers/search_index.py uses it."""

from django.db import migrations

TRIGRAMS = """
CREATE FUNCTION servers_trigrams(value text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT substr(upper(value), i, 3)), '{}')
    FROM generate_series(1, length(value) - 2) AS i
$$;
CREATE FUNCTION servers_name_trigrams(path text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT servers_trigrams(replace(substr(path, 2), '/', '.'))
$$;
-- Without the pending list: a bulk registration would otherwise leave every new row to a linear scan on
-- each search until the next vacuum (10 ms instead of 0.2 ms at 10,000 servers); servers are rarely written.
CREATE INDEX servers_server_name_trigrams ON servers_server USING gin (servers_name_trigrams(path))
    WITH (fastupdate = off);
"""

DROP = """
DROP INDEX IF EXISTS servers_server_name_trigrams;
DROP FUNCTION IF EXISTS servers_name_trigrams(text);
DROP FUNCTION IF EXISTS servers_trigrams(text);
"""


class Migration(migrations.Migration):
    dependencies = [("servers", "0005_unhealthy_since")]

    operations = [migrations.RunSQL(TRIGRAMS, DROP)]
