"""The trigram prefilter of `/v0.1/servers?search=` (migrations servers/0006 and 0007).

`search` is a case-insensitive substring of the registry name `io.<namespace>/<path with dots>` or of the
description. A row can only match if every trigram of the upper-cased term (for the name: of its part
inside the name) is a trigram of its name, or of its description; that condition, answered by the two
GIN indexes, narrows the rows before the exact `icontains` tests. A term the indexes cannot narrow (one
inside the `io.<namespace>/` prefix matches every name; fewer than three characters have no trigram)
goes without the prefilter."""

from django.contrib.postgres.fields import ArrayField
from django.db.models import F, Func, Q, TextField, Value

from servers.naming import name_prefix

TRIGRAM = 3


def trigrams(function: str, expression) -> Func:
    return Func(expression, function=function, output_field=ArrayField(TextField()))


def trigram_prefilter(rows, search: str):
    """`rows` narrowed by the indexes to those whose names or descriptions can contain `search`."""
    if search.upper() in name_prefix().upper():
        return rows
    inside_name = search.rsplit("/", 1)[-1]  # the name part holds no "/": a term with one spans the prefix
    if len(inside_name) < TRIGRAM:
        return rows
    rows = rows.alias(
        name_trigrams=trigrams("servers_name_trigrams", F("path")),
        description_trigrams=trigrams("servers_trigrams", F("description")),
    )
    return rows.filter(
        Q(name_trigrams__contains=trigrams("servers_trigrams", Value(inside_name)))
        | Q(description_trigrams__contains=trigrams("servers_trigrams", Value(search)))
    )
