"""The trigram prefilter of `/v0.1/servers?search=` (migration servers/0006_name_trigram_index).

`search` is a case-insensitive substring of the registry name `io.<namespace>/<path with dots>`. A row can
only match if every trigram of the upper-cased term's part inside the name is a trigram of its name, so
that condition, answered by the GIN index, narrows the rows before the exact `icontains` test. Terms that
fit inside the `io.<namespace>/` prefix match every row and terms of fewer than three characters in the
name have no trigram; those go without the prefilter."""

from django.contrib.postgres.fields import ArrayField
from django.db.models import F, Func, TextField, Value

from servers.naming import name_prefix

TRIGRAM = 3


def _trigrams(function: str, expression) -> Func:
    return Func(expression, function=function, output_field=ArrayField(TextField()))


def name_trigram_prefilter(rows, search: str):
    """`rows` narrowed by the index to those whose names can contain `search`."""
    if search.upper() in name_prefix().upper():
        return rows
    inside_name = search.rsplit("/", 1)[-1]  # the name part holds no "/": a term with one spans the prefix
    if len(inside_name) < TRIGRAM:
        return rows
    return rows.alias(name_trigrams=_trigrams("servers_name_trigrams", F("path"))).filter(
        name_trigrams__contains=_trigrams("servers_trigrams", Value(inside_name))
    )
